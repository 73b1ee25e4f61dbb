"""The ``ovnk`` pytest plugin groups netns and e2e tests for ``--dist loadgroup``
(``make pytest``): each module, or class, is one group, so its module- or class-scoped
cluster stays in one worker, and a test marked with a group of its own keeps it (the modules
that share one cluster, ``ovnk_local.testing.shared_cluster``)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]


def test_netns_and_e2e_tests_are_grouped_by_module_or_class(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(**{
        "tests/e2e/test_a": """
import pytest

def test_one():
    pass

class TestTwo:
    def test_x(self):
        pass

@pytest.mark.xdist_group("shared")
def test_three():
    pass
""",
        "tests/netns/test_n": "def test_five():\n    pass\n",
        "tests/unit/test_b": "def test_four():\n    pass\n"})
    items, _ = pytester.inline_genitems()
    groups = {item.name: [mark.args[0] for mark in item.iter_markers("xdist_group")]
              for item in items}
    assert groups == {"test_one": ["tests/e2e/test_a.py"],
                      "test_x": ["tests/e2e/test_a.py::TestTwo"],
                      "test_three": ["shared"],
                      "test_five": ["tests/netns/test_n.py"],
                      "test_four": []}
