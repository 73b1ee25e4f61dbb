"""The ``ovnk`` pytest plugin: tier markers, capability gating and shared fixtures.

Tiers (``unit``, ``ovsdb``, ``netns``, ``e2e``) are pytest markers.  A test
in ``tests/<tier>/`` gets its tier's marker automatically; plugin tests mark
themselves (``pytestmark = pytest.mark.ovsdb``).  Before a tiered test runs
its requirements are checked (``capabilities.missing_for``): missing means
skip with the reason, or fail under CI where nothing may skip.

Fixtures: an OVN Northbound (``ovn_nb``, ``nb_server``, ``nb_writer``, ``ovn_stack``) and
network namespaces (``netns``, ``netns_pair``).  The Kubernetes API fixtures
(``kube_apiserver``, ``kube_client``, ...) need the local API server and ship with it,
as the ``ovnk-local`` pytest plugin of the ``ovnk-local`` distribution.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from ovnk_core.ovn.install import OvnInstallError, selected, use_development_default
from ovnk_core.testing import capabilities
from ovnk_core.testing.netns_fixtures import netns, netns_pair  # noqa: F401
from ovnk_core.testing.ovsdb_fixtures import (  # noqa: F401
    nb_server,
    nb_writer,
    ovn_nb,
    ovn_stack,
    ovsdb_workdir,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    # read by the profile (``ovnk_core.testing.profile``), declared here so that a run
    # without it accepts the project's configuration of it
    parser.addini("ovnk_profile_startups", "LABEL = module:attribute lines: callables whose "
                  "calls the test profile counts and times (cluster and daemon start-ups)",
                  type="linelist")
    parser.addini("ovnk_profile_polls", "module:function lines: the functions whose sleeps "
                  "the test profile counts as polls of a condition, not fixed sleeps",
                  type="linelist")


def pytest_configure(config: pytest.Config) -> None:
    # the OVN tiers run the OVN upstream runs unless OVNK_OVN names another (system: the host's)
    use_development_default()
    for tier in capabilities.TIERS:
        config.addinivalue_line("markers", f"{tier}: ovnk test tier {tier}")


def pytest_report_header(config: pytest.Config) -> str:
    """Which OVN the OVN tiers run (``OVNK_OVN``, see ``ovnk_core.ovn.install``)."""
    try:
        return f"ovn: {selected().describe()}"
    except OvnInstallError as exc:
        return f"ovn: {exc}"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.fspath)).parts
        for tier in capabilities.TIERS:
            if tier in parts and "tests" in parts:
                item.add_marker(getattr(pytest.mark, tier))
        if not any(item.get_closest_marker(tier) for tier in capabilities.TIERS):
            item.add_marker(pytest.mark.unit)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    for tier in capabilities.TIERS:
        if item.get_closest_marker(tier) is None:
            continue
        reason = capabilities.missing_for(tier)
        if reason is None:
            continue
        if capabilities.in_ci():
            pytest.fail(f"CI requires every tier to run: {reason}", pytrace=False)
        pytest.skip(reason)


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A test that runs ``ovnk`` in-process (``setup_logging``) points the root logger at the
    test's captured stderr; put the root logger back after it, or every later log line of
    the worker (other tests' controller threads) goes to a closed file ("Logging error").
    pytest's own capture handlers come and go per phase and are left to pytest."""
    root = logging.getLogger()
    handlers, level = _own_handlers(root), root.level
    yield
    for handler in _own_handlers(root):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


def _own_handlers(logger: logging.Logger) -> list[logging.Handler]:
    return [h for h in logger.handlers if not type(h).__module__.startswith("_pytest")]
