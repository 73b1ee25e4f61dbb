"""Kubernetes API messages <-> their JSON, driven by the schema data, not per-kind code.

Which field numbers, types and JSON names a kind has is data:
``k8s_proto_schema.json``, derived from Kubernetes' ``generated.proto`` files and Go
struct tags by ``scripts/k8s_proto_schema.py``.  This module interprets it so that, as
with kube-apiserver (which holds the typed Go object in between):

* ``to_json`` gives the JSON Go's ``encoding/json`` writes for the same object: fields
  without ``omitempty`` appear even when empty (``"imageID": ""``), pointers only when
  set, empty lists and maps as ``null`` unless ``omitempty``;
* ``from_json`` writes what Go's generated ``Marshal`` writes: non-pointer fields always
  (zero values included), pointers, lists and maps only when set, map keys sorted, fields
  in number order -- byte for byte the bytes kube-apiserver sends.

The types whose JSON is written by hand in Go are the schema's "special" messages
(``protobuf_types`` and, for raw JSON and the CRD schema's either-or types, here).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from ovnk_local.apiserver import protobuf_types as types
from ovnk_local.apiserver import protowire as wire
from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.protowire import ProtobufError

SCHEMA_FILE = Path(__file__).with_name("k8s_proto_schema.json")
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
_VARINT_TYPES = {"bool", "int32", "int64", "uint32", "uint64"}
_ZERO: dict[str, Any] = {"string": "", "bool": False, "int32": 0, "int64": 0, "uint32": 0,
                         "uint64": 0, "double": 0, "float": 0, "bytes": None}


class InvalidUtf8(ProtobufError):
    """A string field holds bytes that are not UTF-8 (Python strings cannot hold them)."""


@dataclass(frozen=True)
class Field:
    number: int
    json: str
    type: str
    repeated: bool
    map: bool
    pointer: bool
    omitempty: bool
    omitzero: bool
    inline: bool

    @property
    def scalar(self) -> bool:
        return self.type in _ZERO


class Schema:
    """The messages of ``k8s_proto_schema.json`` and the API versions they serve."""

    def __init__(self, data: JSON) -> None:
        self.packages: dict[str, str] = {v: p for p, v in data["packages"].items()}
        self.raw: dict[str, JSON] = data["messages"]
        self._fields: dict[str, tuple[Field, ...]] = {}

    def message_for(self, api_version: str, kind: str) -> str | None:
        """The message of a kind (``v1``/``Pod``); meta/v1's kinds (Status, WatchEvent,
        DeleteOptions, ...) are registered in every API version, as in Go's schemes."""
        package = self.packages.get(api_version)
        for name in (f"{package}.{kind}" if package else "", f"{META}.{kind}"):
            if name in self.raw and "fields" in self.raw[name]:
                return name
        return None

    def spec(self, message: str) -> JSON:
        """A message's schema entry (fields, or the special or list form it has)."""
        spec = self.raw.get(message)
        if spec is None:
            raise ProtobufError(f"no protobuf schema for {message}")
        return spec

    def fields(self, message: str) -> tuple[Field, ...]:
        cached = self._fields.get(message)
        if cached is None:
            cached = self._fields[message] = tuple(
                Field(number, name, type_, mode == "r", mode == "m", "p" in flags,
                      "o" in flags, "z" in flags, "i" in flags)
                for number, name, type_, mode, flags in self.raw[message]["fields"])
        return cached


@cache
def schema() -> Schema:
    """The checked-in schema (read once)."""
    return Schema(json.loads(SCHEMA_FILE.read_text()))


# -- protobuf -> JSON ----------------------------------------------------------------------
def _scalar_to_json(type_: str, kind: int, value: int | bytes, field: str) -> Any:
    if type_ in _VARINT_TYPES:
        if kind != wire.VARINT or not isinstance(value, int):
            raise ProtobufError(f"proto: wrong wireType = {kind} for field {field}")
        if type_ == "bool":
            return bool(value)
        if type_ in ("int32", "int64"):
            return wire.signed(value, 32 if type_ == "int32" else 64)
        return value & (0xFFFFFFFF if type_ == "uint32" else (1 << 64) - 1)
    if not isinstance(value, bytes):
        raise ProtobufError(f"proto: wrong wireType = {kind} for field {field}")
    if type_ == "string":
        try:
            return value.decode()
        except UnicodeDecodeError as exc:
            raise InvalidUtf8(f"a string field is not valid UTF-8: {exc}") from None
    if type_ == "bytes":
        return base64.b64encode(value).decode()
    number = wire.double(value) if type_ == "double" else wire.float32(value)
    return int(number) if number.is_integer() and abs(number) < 1e21 else number


def _value_to_json(type_: str, kind: int, value: int | bytes, field: str) -> Any:
    if type_ in _ZERO:
        return _scalar_to_json(type_, kind, value, field)
    if not isinstance(value, bytes):
        raise ProtobufError(f"proto: wrong wireType = {kind} for field {field}")
    return to_json(type_, value)


def _repeated_values(field: Field, kind: int, value: int | bytes) -> list[Any]:
    if field.type in _VARINT_TYPES and kind == wire.BYTES and isinstance(value, bytes):
        return [_scalar_to_json(field.type, wire.VARINT, v, field.json)
                for v in wire.packed_varints(value)]  # a packed encoder's form
    return [_value_to_json(field.type, kind, value, field.json)]


def _map_entry(field: Field, value: int | bytes) -> tuple[str, Any]:
    if not isinstance(value, bytes):
        raise ProtobufError(f"proto: wrong wireType = 0 for field {field.json}")
    key, item = "", None
    seen = False
    for number, kind, part in wire.fields(value):
        if number == 1:
            key = _scalar_to_json("string", kind, part, field.json)
        elif number == 2:
            item, seen = _value_to_json(field.type, kind, part, field.json), True
    if not seen:
        item = _ZERO[field.type] if field.scalar else to_json(field.type, b"")
    return key, item


def to_json(message: str, data: bytes) -> Any:
    """The JSON value of a message, as Go's ``encoding/json`` writes the typed object."""
    spec = schema().spec(message)
    special = spec.get("special")
    if special is not None:
        return _SPECIALS[special][0](data)
    if "list" in spec:
        item_type = spec["list"]
        return [_value_to_json(item_type, kind, value, "items")
                for number, kind, value in wire.fields(data) if number == 1] or None
    fields = schema().fields(message)
    by_number = {f.number: f for f in fields}
    values: dict[int, Any] = {}
    for number, kind, value in wire.fields(data):
        field = by_number.get(number)
        if field is None:
            continue  # a field this version does not know: skipped, as Go skips it
        if field.map:
            key, item = _map_entry(field, value)
            values.setdefault(number, {})[key] = item
        elif field.repeated:
            values.setdefault(number, []).extend(_repeated_values(field, kind, value))
        else:
            values[number] = _value_to_json(field.type, kind, value, field.json)
    return shape(fields, values)


def shape(fields: tuple[Field, ...], values: dict[int, Any]) -> JSON:
    """The JSON object of decoded ``values`` (by field number) with Go's
    omitempty/omitzero/pointer rules (also ``go_json``'s, for objects read as JSON)."""
    out: JSON = {}
    for field in fields:
        present = field.number in values
        value = values.get(field.number)
        if field.inline:
            inner = value if present else to_json(field.type, b"")
            out.update(inner if isinstance(inner, dict) else {})
            continue
        if field.pointer:
            if present:
                out[field.json] = value
            elif not field.omitempty:
                out[field.json] = None
            continue
        if field.repeated or field.map or field.type == "bytes":
            if present and (value or (field.type == "bytes" and not field.omitempty)):
                out[field.json] = value
            elif not field.omitempty:
                out[field.json] = None
            continue
        if not present:
            value = _ZERO[field.type] if field.scalar else to_json(field.type, b"")
        if field.scalar and field.omitempty and not value:
            continue
        if field.omitzero and value == (_ZERO[field.type] if field.scalar
                                        else to_json(field.type, b"")):
            continue
        out[field.json] = value
    return out


# -- JSON -> protobuf ----------------------------------------------------------------------
def _go_type_error(value: Any, type_: str, field: str) -> ProtobufError:
    kind = ("string" if isinstance(value, str) else "bool" if isinstance(value, bool)
            else "number" if isinstance(value, int | float) else "array"
            if isinstance(value, list) else "object" if isinstance(value, dict) else "null")
    return ProtobufError(f"json: cannot unmarshal {kind} into Go struct field {field} of "
                         f"type {type_}")


def _integral(value: Any, type_: str, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or (
            isinstance(value, float) and not value.is_integer()):
        raise _go_type_error(value, type_, field)
    return int(value)


def _scalar_from_json(field: Field, number: int, value: Any) -> bytes:
    type_ = field.type
    if type_ == "string":
        if not isinstance(value, str):
            raise _go_type_error(value, "string", field.json)
        return wire.length_delimited(number, value.encode("utf-8", "surrogatepass"))
    if type_ == "bytes":
        if not isinstance(value, str):
            raise _go_type_error(value, "[]uint8", field.json)
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ProtobufError(f"illegal base64 data in field {field.json}: {exc}") from None
        return wire.length_delimited(number, raw)
    if type_ == "bool":
        if not isinstance(value, bool):
            raise _go_type_error(value, "bool", field.json)
        return wire.tag(number, wire.VARINT) + wire.varint(int(value))
    if type_ in ("double", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _go_type_error(value, "float64", field.json)
        return (wire.fixed_double if type_ == "double" else wire.fixed_float)(number, value)
    return wire.tag(number, wire.VARINT) + wire.varint(_integral(value, type_, field.json))


def _value_from_json(field: Field, number: int, value: Any) -> bytes:
    if field.scalar:
        return _scalar_from_json(field, number, value)
    return wire.length_delimited(number, from_json(field.type, value, field.json))


def from_json(message: str, value: Any, where: str = "") -> bytes:
    """The message bytes of a JSON value, as Go's generated ``Marshal`` writes them."""
    spec = schema().spec(message)
    special = spec.get("special")
    if special is not None:
        return _SPECIALS[special][1](value)
    if "list" in spec:
        if value is not None and not isinstance(value, list):
            raise _go_type_error(value, "[]string", where)
        element = Field(1, where, spec["list"], True, False, False, False, False, False)
        return b"".join(_value_from_json(element, 1, v) for v in value or [])
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise _go_type_error(value, message.rsplit(".", 1)[1], where)
    out = bytearray()
    for field in schema().fields(message):
        number = field.number
        if field.inline:
            out += wire.length_delimited(number, from_json(field.type, value, where))
            continue
        item = value.get(field.json)
        if field.map:
            if item is not None and not isinstance(item, dict):
                raise _go_type_error(item, "map", field.json)
            entries: dict[str, Any] = item or {}
            for key in sorted(entries):
                entry = _scalar_from_json(_KEY, 1, key)
                if entries[key] is not None or not field.scalar:
                    entry += _value_from_json(field, 2, entries[key])
                elif field.type != "bytes":
                    entry += _scalar_from_json(field, 2, _ZERO[field.type])
                out += wire.length_delimited(number, entry)
        elif field.repeated:
            if item is not None and not isinstance(item, list):
                raise _go_type_error(item, "slice", field.json)
            for element in item or []:
                out += _value_from_json(field, number, element)
        elif item is None and (field.pointer or field.type == "bytes"):
            continue
        elif item is None and field.scalar:
            out += _scalar_from_json(field, number, _ZERO[field.type])
        else:
            out += _value_from_json(field, number, item)
    return bytes(out)


_KEY = Field(1, "key", "string", False, False, False, False, False, False)


# -- raw JSON and the CRD schema's either-or types -----------------------------------------
def _raw_to_json(data: bytes) -> Any:
    raw = next((v for n, _, v in wire.fields(data) if n == 1 and isinstance(v, bytes)), b"")
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ProtobufError(f"an embedded JSON document is not JSON: {exc}") from None


def _raw_from_json(value: Any) -> bytes:
    if value is None:
        return b""
    return wire.length_delimited(1, json.dumps(value, separators=(",", ":"),
                                               ensure_ascii=False).encode())


_PROPS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"


def _parts(data: bytes) -> dict[int, list[int | bytes]]:
    parts: dict[int, list[int | bytes]] = {}
    for number, _, value in wire.fields(data):
        parts.setdefault(number, []).append(value)
    return parts


def _props(raw: int | bytes) -> Any:
    return to_json(_PROPS, raw if isinstance(raw, bytes) else b"")


def _props_or_array_to_json(data: bytes) -> Any:
    parts = _parts(data)
    if parts.get(2):
        return [_props(raw) for raw in parts[2]]
    return _props(parts[1][-1]) if parts.get(1) else None


def _props_or_array_from_json(value: Any) -> bytes:
    if isinstance(value, list):
        return b"".join(wire.length_delimited(2, from_json(_PROPS, v)) for v in value)
    return b"" if value is None else wire.length_delimited(1, from_json(_PROPS, value))


def _props_or_bool_to_json(data: bytes) -> Any:
    parts = _parts(data)
    if parts.get(2):
        return _props(parts[2][-1])
    return bool(parts.get(1, [0])[-1])


def _props_or_bool_from_json(value: Any) -> bytes:
    allows = value if isinstance(value, bool) else True
    out = wire.tag(1, wire.VARINT) + wire.varint(int(allows))
    if isinstance(value, dict):
        out += wire.length_delimited(2, from_json(_PROPS, value))
    return out


def _props_or_strings_to_json(data: bytes) -> Any:
    parts = _parts(data)
    if parts.get(2):
        return [bytes(p).decode() if isinstance(p, bytes) else "" for p in parts[2]]
    return _props(parts[1][-1]) if parts.get(1) else None


def _props_or_strings_from_json(value: Any) -> bytes:
    if isinstance(value, list):
        return b"".join(wire.length_delimited(2, str(v).encode()) for v in value)
    return b"" if value is None else wire.length_delimited(1, from_json(_PROPS, value))


# the schema's "special" names: (message bytes -> JSON, JSON -> message bytes)
_SPECIALS: dict[str, tuple[Callable[[bytes], Any], Callable[[Any], bytes]]] = {
    "time": (types.time_to_json, types.time_from_json),
    "microtime": (types.microtime_to_json, types.microtime_from_json),
    "duration": (types.duration_to_json, types.duration_from_json),
    "quantity": (types.quantity_to_json, types.quantity_from_json),
    "intorstring": (types.intorstring_to_json, types.intorstring_from_json),
    "rawjson": (_raw_to_json, _raw_from_json),
    "propsorarray": (_props_or_array_to_json, _props_or_array_from_json),
    "propsorbool": (_props_or_bool_to_json, _props_or_bool_from_json),
    "propsorstringarray": (_props_or_strings_to_json, _props_or_strings_from_json),
}
