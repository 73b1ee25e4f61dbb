"""Values OVSDB cannot hold refuse their owner alone, against a real ovsdb-server.

A NUL or a lone surrogate sent in a transaction makes ovsdb-server drop the
connection: every owner of that transaction failed with it, on every retry
(100 in the report), and nothing said which value was at fault.  Now such a
value is never sent: its owner is refused with the table, row, column and
value named, and every other owner of the same apply is written, over the
same connection.
"""

from __future__ import annotations

import pytest

from ovnk_core.ovn.declarative import (
    DesiredRow,
    Link,
    Ref,
    UnstorableValue,
    apply,
    apply_many,
)
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.storable import string_problem
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.testing.ovsdb_fixtures import read_rows

CTRL = "blue-network-controller"
GOOD = Owner(CTRL, "node:good")
BAD = Owner(CTRL, "node:bad")
POD = Owner(CTRL, "pod:ns/p")


def switch(owner: Owner, name: str, other_config: dict[str, str] | None = None
           ) -> DesiredRow:
    ids = owner.object_ids("LogicalSwitch", owner.key, network="blue")
    return DesiredRow("Logical_Switch", ids, {"name": name,
                                              "other_config": other_config or {}})


def switch_names(remote: str) -> set[str]:
    return {row.name for row in read_rows(remote, "Logical_Switch")}


@pytest.mark.parametrize(("bad_row", "problem"), [
    (switch(BAD, "bad\x00name"),
     "Logical_Switch row 'blue-network-controller:LogicalSwitch:node:bad': column name: "
     "'bad\\x00name' holds a NUL character"),
    (switch(BAD, "bad", {"subnet\ud800": "10.0.0.0/24"}),
     "column other_config: 'subnet\\ud800' holds an unpaired UTF-16 surrogate (U+D800)"),
    (switch(BAD, "bad", {"subnet": "10.0.0.0/24\udfff"}),
     "column other_config: '10.0.0.0/24\\udfff' holds an unpaired UTF-16 surrogate (U+DFFF)"),
    (DesiredRow("Logical_Switch", BAD.object_ids("LogicalSwitch", "bad", network="bl\x00ue"),
                {"name": "bad"}),
     "column external_ids: 'bl\\x00ue' holds a NUL character"),
    (DesiredRow("Logical_Switch", BAD.object_ids("LogicalSwitch", "bad", network="blue"),
                {"name": "bad"}, extra_external_ids={"k8s.ovn.org/x": "\ud83d"}),
     "column external_ids: '\\ud83d' holds an unpaired UTF-16 surrogate (U+D83D)"),
])
def test_one_bad_owner_fails_alone_and_the_connection_stays(
        nb_writer: NbWriter, bad_row: DesiredRow, problem: str) -> None:
    resyncs = nb_writer.resyncs
    with pytest.raises(UnstorableValue) as caught:
        apply_many(nb_writer, {GOOD: [switch(GOOD, "good")], BAD: [bad_row]})
    assert list(caught.value.problems) == [BAD]
    assert problem in caught.value.problems[BAD]
    assert caught.value.result.created == 1 and not caught.value.not_ready
    assert switch_names(nb_writer.remote) == {"good"}
    # the same connection goes on: no reconnect, no read of NB, the next write just works
    apply(nb_writer, Owner(CTRL, "node:other"), [switch(Owner(CTRL, "node:other"), "other")])
    assert nb_writer.resyncs == resyncs
    assert switch_names(nb_writer.remote) == {"good", "other"}


def test_retrying_a_bad_value_never_costs_the_connection(nb_writer: NbWriter) -> None:
    resyncs, transactions = nb_writer.resyncs, nb_writer.transactions
    for attempt in range(100):
        with pytest.raises(UnstorableValue):
            apply_many(nb_writer, {BAD: [switch(BAD, f"bad\x00{attempt}")],
                                   GOOD: [switch(GOOD, "good")]})
    assert nb_writer.resyncs == resyncs
    assert nb_writer.transactions == transactions + 1  # good's insert; then nothing to do
    assert switch_names(nb_writer.remote) == {"good"}


def test_a_refused_owner_keeps_the_rows_it_had(nb_writer: NbWriter) -> None:
    apply(nb_writer, BAD, [switch(BAD, "bad", {"subnet": "10.1.0.0/24"})])
    with pytest.raises(UnstorableValue):
        apply(nb_writer, BAD, [switch(BAD, "bad", {"subnet": "10.2.0.0/24\x00"})])
    [row] = read_rows(nb_writer.remote, "Logical_Switch")
    assert row.other_config == {"subnet": "10.1.0.0/24"}


def test_owners_that_need_a_refused_owners_rows_wait_for_them(nb_writer: NbWriter) -> None:
    port_ids = POD.object_ids("LogicalSwitchPort", "ns/p", network="blue")
    port = DesiredRow("Logical_Switch_Port", port_ids, {"name": "blue_ns_p"},
                      links=(Link(Ref.to("Logical_Switch", switch(BAD, "x").ids), "ports"),))
    with pytest.raises(UnstorableValue) as caught:
        apply_many(nb_writer, {BAD: [switch(BAD, "bad\x00")], POD: [port]})
    assert list(caught.value.problems) == [BAD]
    assert caught.value.not_ready  # the port's switch does not exist: retry later
    assert read_rows(nb_writer.remote, "Logical_Switch_Port") == []


def test_what_ovsdb_can_hold() -> None:
    assert string_problem("") is None and string_problem("blue_ns.name-1") is None
    assert string_problem("ünïcode ✓ \U0001f600") is None  # a proper pair is one code point
    assert string_problem("a\x00") == "holds a NUL character"
    assert string_problem("\udc80") == "holds an unpaired UTF-16 surrogate (U+DC80)"
