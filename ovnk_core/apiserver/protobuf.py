"""Decoding of the Kubernetes protobuf envelope for the few kinds kubectl's generators send.

``kubectl create namespace``, ``create configmap`` and ``create service`` build typed
objects and POST them as ``application/vnd.kubernetes.protobuf``.  This
module reads the ``k8s\\0`` + ``runtime.Unknown`` envelope and the fields of
Namespace, ConfigMap and Service (with ObjectMeta) by their upstream field
numbers; any other kind in protobuf gets 415, telling the client to send JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from ovnk_core.apiserver.errors import JSON, ApiStatusError

MAGIC = b"k8s\x00"
Schema = dict[int, tuple[str, Any, bool]]

_OWNER_REF: Schema = {1: ("kind", "string", False), 3: ("name", "string", False),
                      4: ("uid", "string", False), 5: ("apiVersion", "string", False),
                      6: ("controller", "bool", False), 7: ("blockOwnerDeletion", "bool", False)}
_OBJECT_META: Schema = {
    1: ("name", "string", False), 2: ("generateName", "string", False),
    3: ("namespace", "string", False), 5: ("uid", "string", False),
    6: ("resourceVersion", "string", False), 11: ("labels", "map", False),
    12: ("annotations", "map", False), 13: ("ownerReferences", _OWNER_REF, True),
    14: ("finalizers", "string", True)}
_SERVICE_PORT: Schema = {
    1: ("name", "string", False), 2: ("protocol", "string", False),
    3: ("port", "int", False), 4: ("targetPort", "intorstring", False),
    5: ("nodePort", "int", False), 6: ("appProtocol", "string", False)}
_SERVICE_SPEC: Schema = {
    1: ("ports", _SERVICE_PORT, True), 2: ("selector", "map", False),
    3: ("clusterIP", "string", False), 4: ("type", "string", False),
    5: ("externalIPs", "string", True), 7: ("sessionAffinity", "string", False),
    10: ("externalName", "string", False), 11: ("externalTrafficPolicy", "string", False),
    17: ("ipFamilyPolicy", "string", False), 18: ("clusterIPs", "string", True),
    19: ("ipFamilies", "string", True), 22: ("internalTrafficPolicy", "string", False)}
_KINDS: dict[str, Schema] = {
    "Service": {1: ("metadata", _OBJECT_META, False), 2: ("spec", _SERVICE_SPEC, False)},
    "Namespace": {1: ("metadata", _OBJECT_META, False),
                  2: ("spec", {1: ("finalizers", "string", True)}, False)},
    "ConfigMap": {1: ("metadata", _OBJECT_META, False), 2: ("data", "map", False),
                  3: ("binaryData", "bytesmap", False), 4: ("immutable", "bool", False)},
}


class ProtobufError(ValueError):
    """The body is not a protobuf envelope this server can read."""


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            yield number, data[pos:pos + length]
            pos += length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            yield number, data[pos:pos + size]
            pos += size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")


def _message(data: bytes, schema: Schema) -> JSON:
    result: JSON = {}
    for number, raw in _fields(data):
        if number not in schema:
            continue
        name, kind, repeated = schema[number]
        value: Any
        if isinstance(kind, dict):
            value = _message(bytes(raw) if isinstance(raw, bytes) else b"", kind)
        elif kind in ("map", "bytesmap"):
            entry = dict(_fields(raw if isinstance(raw, bytes) else b""))
            key = bytes(entry.get(1, b"")).decode()
            item = bytes(entry.get(2, b""))
            text = item.decode() if kind == "map" else base64.b64encode(item).decode()
            result.setdefault(name, {})[key] = text
            continue
        elif kind == "bool":
            value = bool(raw)
        elif kind == "intorstring":
            parts = dict(_fields(raw if isinstance(raw, bytes) else b""))
            int_value = parts.get(2, 0)
            value = (bytes(parts.get(3, b"")).decode() if parts.get(1) == 1
                     else int_value if isinstance(int_value, int) else 0)
        else:
            value = raw.decode() if isinstance(raw, bytes) else raw
        if repeated:
            result.setdefault(name, []).append(value)
        elif value not in ("", {}, False):
            result[name] = value
    return result


def decode(body: bytes) -> JSON:
    """The JSON form of a protobuf-encoded Namespace or ConfigMap."""
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf prefix")
    envelope = dict(_fields(body[len(MAGIC):]))
    type_meta = dict(_fields(bytes(envelope.get(1, b""))))
    api_version = bytes(type_meta.get(1, b"")).decode()
    kind = bytes(type_meta.get(2, b"")).decode()
    schema = _KINDS.get(kind)
    if schema is None or api_version != "v1":
        raise ApiStatusError(
            415, "UnsupportedMediaType",
            f"the body of the request was in an unknown format - this server reads "
            f"{kind or 'this kind'} only as application/json or application/yaml")
    obj = _message(bytes(envelope.get(2, b"")), schema)
    return {"apiVersion": api_version, "kind": kind, **obj}
