"""A built-in object's JSON after Go's decode and encode: what kube-apiserver stores and serves.

kube-apiserver decodes a request body into the kind's Go struct and encodes
what it serves from that struct (through protobuf, in etcd), so its JSON
follows the struct's ``json`` tags: a field without ``omitempty`` is always
there, zero or not (``status.containerStatuses[].imageID: ""``, ``ready:
false``, ``lastProbeTime: null``, ``lastState: {}``, an empty list as
``null``); an ``omitempty`` field with a zero value is not, except a struct,
which encoding/json never omits; unknown fields are dropped (and reported,
for ``fieldValidation``); a value of the wrong JSON type does not decode at
all.  Typed clients depend on it: the ``kubernetes`` Python client refuses
an object whose required (non-omitempty) field is missing.

``round_trip`` does that with the facts of ``k8s_proto_schema.json`` (each
field's JSON name, type, ``omitempty``/``omitzero``, pointer, inline: the Go
struct tags), the same data and the same encoding rules
(``protobuf_messages.shape``) the protobuf codec uses, so an object reads the
same whichever encoding a client asks for.  Types that encode themselves
(``Time``, ``Quantity``, ``IntOrString``, raw JSON) are kept as they are;
named types (``PodPhase``) are known by their underlying type, so a type
error names ``string`` where Go would name ``v1.PodPhase``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ovnk_core.go_json_errors import unmarshal_kind
from ovnk_local.apiserver import protobuf_messages
from ovnk_local.apiserver.errors import JSON

_INT_RANGES = {"int32": (-(2 ** 31), 2 ** 31 - 1), "int64": (-(2 ** 63), 2 ** 63 - 1),
               "uint32": (0, 2 ** 32 - 1), "uint64": (0, 2 ** 64 - 1)}
_GO_SCALARS = {"string": "string", "bytes": "[]uint8", "bool": "bool", "double": "float64",
               "float": "float32", **{t: t for t in _INT_RANGES}}
_PROPS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
TYPE_META = ("kind", "apiVersion")


class DecodeError(ValueError):
    """The body does not decode into the kind's Go type (Go's ``UnmarshalTypeError`` text)."""


@dataclass
class _Message:
    """A message's fields by JSON name; an inline field's keys point at the inline field."""

    fields: tuple[protobuf_messages.Field, ...]
    by_json: dict[str, tuple[protobuf_messages.Field, protobuf_messages.Field | None]] = \
        field(default_factory=dict)


_MESSAGES: dict[str, _Message] = {}


def _message(name: str) -> _Message:
    found = _MESSAGES.get(name)
    if found is None:
        fields = protobuf_messages.schema().fields(name)
        found = _Message(fields)
        for item in fields:
            if item.inline:
                for inner_key, (inner, _) in _message(item.type).by_json.items():
                    found.by_json[inner_key] = (inner, item)
            else:
                found.by_json[item.json] = (item, None)
        _MESSAGES[name] = found
    return found


def go_type_name(message: str) -> str:
    """A message as Go's reflection prints its type (``v1.Container``)."""
    if message in _GO_SCALARS:
        return _GO_SCALARS[message]
    package, _, name = message.rpartition(".")
    return f"{package.rpartition('.')[2]}.{name}"


def message_for(api_version: str, kind: str) -> str | None:
    """The message of a built-in ``apiVersion``/``kind``, None when there is none."""
    return protobuf_messages.schema().message_for(api_version, kind)


def _base64_error(text: str) -> int | None:
    """Where Go's standard base64 decoder gives up on ``text`` (None: it decodes)."""
    body = text.rstrip("=")
    for index, char in enumerate(body):
        if char not in _BASE64:
            return index
    if len(text) - len(body) > 2 or len(body) % 4 == 1:
        return len(body)
    return len(text) if len(text) % 4 else None


class _Walk:
    """One object's decode: values checked against the schema, unknown fields collected."""

    def __init__(self, unknown: list[str] | None) -> None:
        self.schema = protobuf_messages.schema()
        self.unknown = unknown

    @staticmethod
    def fail(value: Any, type_: str, repeated: str, owner: str, path: str) -> DecodeError:
        found = unmarshal_kind(value)
        if found == "number" and type_ in _INT_RANGES and not repeated:
            found = f"number {value}"
        where = f"Go struct field {owner.rpartition('.')[2]}.{path}" if owner else "Go value"
        return DecodeError(f"json: cannot unmarshal {found} into {where} of type "
                           f"{repeated}{go_type_name(type_)}")

    def scalar(self, value: Any, type_: str, owner: str, path: str) -> Any:
        if type_ == "string":
            ok = isinstance(value, str)
        elif type_ == "bool":
            ok = isinstance(value, bool)
        elif type_ == "bytes":
            ok = isinstance(value, str)
            bad = _base64_error(value) if ok else None
            if bad is not None:
                raise DecodeError(f"illegal base64 data at input byte {bad}")
        elif type_ in ("double", "float"):
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        else:
            low, high = _INT_RANGES[type_]
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            ok = isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
        if not ok:
            raise self.fail(value, type_, "", owner, path)
        return value

    def value(self, value: Any, type_: str, owner: str, path: str, at: str) -> Any:
        """One value of ``type_`` (a scalar or a message), decoded and encoded again."""
        if type_ in _GO_SCALARS:
            return self.scalar(value, type_, owner, path)
        spec = self.schema.spec(type_)
        special = spec.get("special")
        if special is not None:
            return self.special(value, special, owner, path, at)
        if "list" in spec:
            return self.repeated(value, spec["list"], owner, path, at) or None
        if not isinstance(value, dict):
            raise self.fail(value, type_, "", owner, path)
        return self.message(value, type_, path, at)

    def special(self, value: Any, special: str, owner: str, path: str, at: str) -> Any:
        """Types that encode themselves, kept; the CRD schema's either-or types are walked
        as the schema they hold."""
        holds_schema = {"propsorarray": True, "propsorbool": not isinstance(value, bool),
                        "propsorstringarray": not isinstance(value, list)}
        if not holds_schema.get(special):
            return value
        if isinstance(value, list):
            return self.repeated(value, _PROPS, owner, path, at)
        return self.value(value, _PROPS, owner, path, at)

    def repeated(self, value: Any, type_: str, owner: str, path: str, at: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(value, type_, "[]", owner, path)
        if type_ == "string" and all(isinstance(item, str) for item in value):
            return list(value)
        return [self.value(item, type_, owner, path, f"{at}[{index}]")
                for index, item in enumerate(value) if item is not None]

    def mapping(self, value: Any, type_: str, owner: str, path: str, at: str) -> JSON:
        if not isinstance(value, dict):
            raise self.fail(value, type_, "map[string]", owner, path)
        if type_ == "string" and all(isinstance(item, str) for item in value.values()):
            return dict(value)
        return {key: self.value(item, type_, owner, path, f"{at}[{key}]")
                for key, item in value.items() if item is not None}

    def message(self, value: JSON, name: str, path: str, at: str) -> JSON:
        message = _message(name)
        values: dict[int, Any] = {}
        inline: dict[int, dict[int, Any]] = {}
        for key, item in value.items():
            found = message.by_json.get(key)
            child_at = f"{at}.{key}" if at else key
            if found is None:
                if self.unknown is not None:
                    self.unknown.append(child_at)
                continue
            if item is None:
                continue  # Go leaves the zero value (a nil pointer, list or map)
            spec, holder = found
            child_path = f"{path}.{key}" if path else key
            decoded: Any
            if spec.map:
                decoded = self.mapping(item, spec.type, name, child_path, child_at)
            elif spec.repeated:
                decoded = self.repeated(item, spec.type, name, child_path, child_at)
            else:
                decoded = self.value(item, spec.type, name, child_path, child_at)
            target = values if holder is None else inline.setdefault(holder.number, {})
            target[spec.number] = decoded
        for number, inner in inline.items():
            holder = next(f for f in message.fields if f.number == number)
            values[number] = protobuf_messages.shape(_message(holder.type).fields, inner)
        return protobuf_messages.shape(message.fields, values)


def round_trip(message: str, obj: JSON, unknown: list[str] | None = None) -> JSON:
    """``obj`` decoded into the Go type of ``message`` and encoded again (a new dict; its
    ``kind`` and ``apiVersion`` first, as Go's ``TypeMeta`` writes them).

    :param unknown: when given, receives the paths of fields the type does not have
        (``spec.containers[0].imagePullPolicyy``), which are dropped.
    :raises DecodeError: a value of the wrong JSON type (Go's message).
    """
    walk = _Walk(unknown)
    type_meta = {key: obj[key] for key in TYPE_META if obj.get(key)}
    for key, item in type_meta.items():
        walk.scalar(item, "string", "", key)
    body = walk.message({k: v for k, v in obj.items() if k not in TYPE_META}, message, "", "")
    return {**type_meta, **body}


__all__ = ["DecodeError", "go_type_name", "message_for", "round_trip"]
