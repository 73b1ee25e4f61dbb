"""Group commit against a real NB: concurrent callers share transactions, and each still
gets its own outcome."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from ovnk_core.ovn.declarative import DesiredRow, Link, MissingReference, Ref
from ovnk_core.ovn.group_commit import GroupCommit
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.testing.ovsdb_fixtures import nbctl

CTRL = "blue-network-controller"


def switch(n: int) -> tuple[Owner, list[DesiredRow]]:
    owner = Owner(CTRL, f"ns/svc-{n}")
    ids = owner.object_ids("LogicalSwitch", f"s{n}", network="blue")
    return owner, [DesiredRow("Logical_Switch", ids, {"name": f"s{n}"})]


def test_concurrent_callers_share_transactions_and_all_rows_are_written(
        nb_writer: NbWriter) -> None:
    commit = GroupCommit(nb_writer)
    start = threading.Barrier(16)

    def write(n: int) -> bool:
        owner, rows = switch(n)
        start.wait()
        return commit.apply({owner: rows}).changed

    with ThreadPoolExecutor(16) as pool:
        assert all(pool.map(write, range(16)))
    names = set(nbctl(nb_writer.remote, "--bare", "--columns=name", "list",
                      "Logical_Switch").split())
    assert names == {f"s{n}" for n in range(16)}
    assert commit.transactions < 16  # some went out together
    assert nb_writer.transactions == commit.transactions


def test_a_failing_caller_gets_its_error_and_the_others_are_written(
        nb_writer: NbWriter) -> None:
    commit = GroupCommit(nb_writer)
    bad_owner = Owner(CTRL, "ns/bad")
    port = bad_owner.object_ids("LogicalSwitchPort", "p", network="blue")
    missing = Ref("Logical_Switch", "no-such-switch")
    bad = {bad_owner: [DesiredRow("Logical_Switch_Port", port, {"name": "p"},
                                  links=(Link(missing, "ports"),))]}
    start = threading.Barrier(8)

    def write(n: int) -> str:
        desired = bad if n == 0 else dict([switch(n)])
        start.wait()
        try:
            commit.apply(desired)
        except MissingReference:
            return "missing"
        return "written"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(write, range(8)))
    assert outcomes == ["missing"] + ["written"] * 7
    names = set(nbctl(nb_writer.remote, "--bare", "--columns=name", "list",
                      "Logical_Switch").split())
    assert names == {f"s{n}" for n in range(1, 8)}


def test_a_lone_caller_writes_at_once(nb_writer: NbWriter) -> None:
    commit = GroupCommit(nb_writer)
    owner, rows = switch(1)
    assert commit.apply({owner: rows}).created == 1
    assert commit.transactions == 1
    with pytest.raises(MissingReference):
        commit.apply({Owner(CTRL, "ns/x"): [DesiredRow(
            "Logical_Switch_Port", Owner(CTRL, "ns/x").object_ids("LogicalSwitchPort", "p"),
            {"name": "p"}, links=(Link(Ref("Logical_Switch", "nope"), "ports"),))]})
