"""Declared values and the values OVSDB sends compare equal exactly when the datum is the
same; declared values become correct wire datums; bad values are refused by name."""

from __future__ import annotations

import json
from typing import Any

import pytest
from ovs.db import schema as ovs_schema

from ovnk_core.ovn.datum import (
    DatumError,
    Unresolved,
    codecs_of,
    fingerprint,
    fingerprint_hashes,
    uuid_int,
)
from ovnk_core.ovn.declarative import Ref
from ovnk_core.ovn.install import schema

pytestmark = pytest.mark.unit

SCHEMA = ovs_schema.DbSchema.from_json(
    json.loads(schema("ovn-nb").read_text()))
CODECS = codecs_of(SCHEMA)
LSP = CODECS["Logical_Switch_Port"]
U1 = "6c1a3f1e-0000-4000-8000-000000000001"


def no_refs(ref: Any) -> int:
    raise AssertionError(f"unexpected reference {ref}")


@pytest.mark.parametrize(("column", "declared", "wire"), [
    ("addresses", ["0a:58:0a:01:01:05 10.1.1.5"], "0a:58:0a:01:01:05 10.1.1.5"),
    ("addresses", ["b", "a"], ["set", ["a", "b"]]),
    ("addresses", [], ["set", []]),
    ("tag", None, ["set", []]),
    ("tag", 5, 5),
    ("tag", "5", 5),
    ("enabled", True, True),
    ("options", {"b": "2", "a": "1"}, ["map", [["a", "1"], ["b", "2"]]]),
    ("name", "p1", "p1"),
])
def test_declared_and_wire_values_compare_equal(column: str, declared: Any, wire: Any) -> None:
    codec = LSP[column]
    assert codec.from_python(declared, no_refs) == codec.from_wire(wire)


def test_different_values_differ() -> None:
    codec = LSP["addresses"]
    assert codec.from_python(["a"], no_refs) != codec.from_wire(["set", ["a", "b"]])
    assert LSP["options"].from_python({"a": "1"}, no_refs) != \
        LSP["options"].from_wire(["map", [["a", "2"]]])


def test_references_resolve_to_uuids() -> None:
    codec = CODECS["Logical_Switch"]["ports"]
    assert codec.is_reference_set and codec.is_strong
    assert CODECS["Port_Group"]["ports"].is_reference_set
    assert not CODECS["Port_Group"]["ports"].is_strong
    ref = Ref("Logical_Switch_Port", "x")
    assert codec.from_python([ref], lambda r: uuid_int(U1)) == \
        codec.from_wire(["uuid", U1])
    assert codec.wire_uuids(["set", [["uuid", U1]]]) == [uuid_int(U1)]
    assert codec.to_wire([ref], lambda r: ["named-uuid", "row0"]) == \
        ["set", [["named-uuid", "row0"]]]

    def unresolved(r: Any) -> int:
        raise Unresolved(r)

    with pytest.raises(Unresolved):
        codec.from_python([ref], unresolved)


def test_wire_datums_of_declared_values() -> None:
    assert LSP["tag"].to_wire(None, no_refs) == ["set", []]
    assert LSP["tag"].to_wire(7, no_refs) == ["set", [7]]
    assert LSP["name"].to_wire("p", no_refs) == "p"
    assert LSP["options"].to_wire({"a": 1}, no_refs) == ["map", [["a", "1"]]]


def test_values_that_do_not_fit_are_refused_by_column() -> None:
    with pytest.raises(DatumError, match="tag"):
        LSP["tag"].from_python("five", no_refs)
    with pytest.raises(DatumError, match="name takes exactly one value"):
        LSP["name"].to_wire(["a", "b"], no_refs)
    with pytest.raises(DatumError, match="not of type string"):
        LSP["name"].from_python({"a": 1}, no_refs)


def test_fingerprint_round_trip() -> None:
    hashes = [3, -1, 3, 2**62]
    assert fingerprint_hashes(fingerprint(hashes)) == frozenset(hashes)
    assert len(fingerprint(hashes)) == 3 * 8
