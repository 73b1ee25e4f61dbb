"""The ovnk pytest plugin puts the root logger back after a test that set up logging."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_a_test_running_ovnk_in_process_leaves_the_root_logger_as_it_was(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner="""
        import logging
        from ovnk_core.logsetup import setup_logging

        def ours():  # pytest's capture handlers come and go per phase
            return [h for h in logging.getLogger().handlers
                    if not type(h).__module__.startswith("_pytest")]

        BEFORE = ours()

        def test_sets_up_logging():
            setup_logging("debug")  # as ovnk's main() does, onto this test's captured stderr
            assert ours() != BEFORE

        def test_later_test_sees_the_root_logger_as_before():
            assert ours() == BEFORE
            assert logging.getLogger().level == logging.WARNING
    """)
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
