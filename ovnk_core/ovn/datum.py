"""Column values in three forms: what builders declare, what OVSDB sends, and a comparable one.

Builders declare Python values (``str``, ``int``, ``bool``, lists, dicts,
``Ref``); OVSDB's wire format tags sets, maps and UUIDs (``["set", [...]]``,
``["map", [[k, v], ...]]``, ``["uuid", "..."]``) and sends a one-element set
as its bare element.  ``ColumnCodec`` (one per column, from the schema)
turns both into the same *canonical* form — atoms converted to the column's
type, UUIDs as integers, sets and maps sorted — so a declared value and a
stored one compare equal exactly when OVSDB would hold the same datum, and
turns declared values into wire datums for writing.

A row is remembered as the hashes of its ``(column, canonical value)`` pairs
(``fingerprint``): comparing a declared column is one hash lookup, and a row
costs 8 bytes per column instead of its decoded values.
"""

from __future__ import annotations

import struct
import uuid as uuid_module
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Canonical = Any
# Resolves a reference while building canonical values: the row's uuid as an int.
# Raises ``Unresolved`` for a row that does not have a uuid yet (inserted in this transaction).
CanonicalResolver = Callable[[Any], int]
# Resolves a reference while building wire datums: ``["uuid", s]`` or ``["named-uuid", n]``.
WireResolver = Callable[[Any], list[str]]


class Unresolved(Exception):
    """A reference to a row inserted by the same transaction: its uuid is not known yet."""


class DatumError(ValueError):
    """A value that cannot be stored in its column (wrong type or shape)."""


def uuid_int(text: str) -> int:
    return int(text.replace("-", ""), 16)


def uuid_text(value: int) -> str:
    return str(uuid_module.UUID(int=value))


_ATOM_TYPES = {"string": str, "integer": int, "real": float, "boolean": bool, "uuid": int}


class ColumnCodec:
    """Conversions for one column, from its OVSDB type (``ovs.db.types.Type``)."""

    __slots__ = (
        "is_map",
        "is_reference_set",
        "is_scalar",
        "is_string_map",
        "is_strong",
        "key_type",
        "name",
        "ref_table",
        "value_type",
    )

    def __init__(self, name: str, column_type: Any) -> None:
        self.name = name
        self.is_map = bool(column_type.is_map())
        self.is_scalar = column_type.n_min == 1 and column_type.n_max == 1
        self.key_type = column_type.key.type.to_string()
        self.value_type = column_type.value.type.to_string() if column_type.value else None
        self.ref_table = column_type.key.ref_table_name or None
        self.is_reference_set = bool(self.ref_table) and column_type.value is None \
            and column_type.n_max > 1
        self.is_strong = bool(self.ref_table) and column_type.key.ref_type == "strong"
        self.is_string_map = self.is_map and self.key_type == "string" \
            and self.value_type == "string"

    # -- wire → canonical ---------------------------------------------------------------
    def from_wire(self, datum: Any) -> Canonical:
        if self.is_map:
            pairs = datum[1] if isinstance(datum, list) and datum[:1] == ["map"] else []
            value_type = self.value_type or "string"
            return tuple(sorted((_wire_atom(self.key_type, k), _wire_atom(value_type, v))
                                for k, v in pairs))
        items = datum[1] if isinstance(datum, list) and datum[:1] == ["set"] else [datum]
        atoms = sorted(_wire_atom(self.key_type, item) for item in items)
        if self.is_scalar:
            return atoms[0] if atoms else None
        return tuple(atoms)

    def wire_uuids(self, datum: Any) -> list[int]:
        """The UUIDs in a reference column's wire datum."""
        items = datum[1] if isinstance(datum, list) and datum[:1] == ["set"] else [datum]
        return [uuid_int(item[1]) for item in items
                if isinstance(item, list) and item[:1] == ["uuid"]]

    # -- declared → canonical -----------------------------------------------------------
    def from_python(self, value: Any, resolve: CanonicalResolver) -> Canonical:
        if self.is_string_map:
            items = dict(value or {}).items()
            if all(type(k) is str and type(v) is str for k, v in items):
                return tuple(sorted(items))  # the common case, without per-atom work
        if self.is_map:
            value_type = self.value_type or "string"
            return tuple(sorted((self._atom(self.key_type, k, resolve),
                                 self._atom(value_type, v, resolve))
                                for k, v in dict(value or {}).items()))
        atoms = sorted(self._atom(self.key_type, item, resolve) for item in _items(value))
        if self.is_scalar:
            if len(atoms) != 1:
                raise DatumError(f"column {self.name} takes exactly one value, not {value!r}")
            return atoms[0]
        return tuple(atoms)

    def _atom(self, atom_type: str, value: Any, resolve: CanonicalResolver) -> Any:
        if type(value) is str and atom_type == "string":
            return value
        if atom_type == "uuid":
            if isinstance(value, uuid_module.UUID):
                return value.int
            if isinstance(value, str):
                return uuid_int(value)
            return resolve(value)
        return _coerce(self.name, atom_type, value)

    # -- declared → wire ----------------------------------------------------------------
    def to_wire(self, value: Any, resolve: WireResolver) -> Any:
        if self.is_string_map:
            items = dict(value or {}).items()
            if all(type(k) is str and type(v) is str for k, v in items):
                return ["map", [[k, v] for k, v in items]]
        if self.is_map:
            value_type = self.value_type or "string"
            return ["map", [[self._wire(self.key_type, k, resolve),
                             self._wire(value_type, v, resolve)]
                            for k, v in dict(value or {}).items()]]
        atoms = [self._wire(self.key_type, item, resolve) for item in _items(value)]
        if self.is_scalar:
            if len(atoms) != 1:
                raise DatumError(f"column {self.name} takes exactly one value, not {value!r}")
            return atoms[0]
        return ["set", atoms]

    def _wire(self, atom_type: str, value: Any, resolve: WireResolver) -> Any:
        if type(value) is str and atom_type == "string":
            return value
        if atom_type == "uuid":
            if isinstance(value, uuid_module.UUID):
                return ["uuid", str(value)]
            if isinstance(value, str):
                return ["uuid", value]
            return resolve(value)
        return _coerce(self.name, atom_type, value)


def _items(value: Any) -> Iterable[Any]:
    if value is None:
        return ()
    if isinstance(value, list | tuple | set | frozenset):
        return value
    return (value,)


def _coerce(column: str, atom_type: str, value: Any) -> Any:
    try:
        if atom_type == "boolean":
            if isinstance(value, str):
                return value.lower() == "true"
            return bool(value)
        if atom_type == "integer":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise DatumError(f"column {column}: {value!r} is not of type integer")
            return int(value)
        if atom_type == "real":
            return float(value)
        if isinstance(value, bool | dict | list):
            raise DatumError(f"column {column}: {value!r} is not of type string")
        return str(value)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, DatumError):
            raise
        raise DatumError(f"column {column}: {value!r} is not of type {atom_type}") from None


def _wire_atom(atom_type: str, atom: Any) -> Any:
    if atom_type == "uuid":
        return uuid_int(atom[1]) if isinstance(atom, list) else uuid_int(str(atom))
    if atom_type == "real":
        return float(atom)
    return atom


def column_hash(column: str, canonical: Canonical) -> int:
    return hash((column, canonical))


_PACK = struct.Struct("q")


def fingerprint(hashes: Iterable[int]) -> bytes:
    """The compact form of a row: its column hashes, packed."""
    values = sorted(set(hashes))
    return struct.pack(f"{len(values)}q", *values)


def fingerprint_hashes(packed: bytes) -> frozenset[int]:
    return frozenset(struct.unpack(f"{len(packed) // _PACK.size}q", packed))


def codecs_of(schema: Any) -> dict[str, dict[str, ColumnCodec]]:
    """table → column → codec, for every column of an ``ovs.db.schema.DbSchema``."""
    return {name: {column: ColumnCodec(column, spec.type)
                   for column, spec in table.columns.items()}
            for name, table in schema.tables.items()}


def canonical_columns(codecs: Mapping[str, ColumnCodec], values: Mapping[str, Any],
                      resolve: CanonicalResolver) -> list[int]:
    """Hashes of declared ``values`` (canonical), one per column."""
    return [column_hash(name, codecs[name].from_python(value, resolve))
            for name, value in values.items()]
