"""Decoding of the Kubernetes protobuf envelope for the few kinds kubectl's generators send.

``kubectl create namespace``, ``create configmap``, ``create service``, ``create
serviceaccount``, ``create role``/``rolebinding``/``clusterrole``/``clusterrolebinding``,
``create token`` and ``auth can-i``/``whoami`` build typed objects and POST them as
``application/vnd.kubernetes.protobuf``.  This module reads the ``k8s\\0`` +
``runtime.Unknown`` envelope and the fields of those kinds (with ObjectMeta) by
their upstream field numbers; any other kind in protobuf gets 415, telling the
client to send JSON.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

from ovnk_local.apiserver.errors import JSON, ApiStatusError

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
_POLICY_RULE: Schema = {1: ("verbs", "string", True), 2: ("apiGroups", "string", True),
                        3: ("resources", "string", True), 4: ("resourceNames", "string", True),
                        5: ("nonResourceURLs", "string", True)}
_SUBJECT: Schema = {1: ("kind", "string", False), 2: ("apiGroup", "string", False),
                    3: ("name", "string", False), 4: ("namespace", "string", False)}
_ROLE_REF: Schema = {1: ("apiGroup", "string", False), 2: ("kind", "string", False),
                     3: ("name", "string", False)}
_ROLE: Schema = {1: ("metadata", _OBJECT_META, False), 2: ("rules", _POLICY_RULE, True)}
_BINDING: Schema = {1: ("metadata", _OBJECT_META, False), 2: ("subjects", _SUBJECT, True),
                    3: ("roleRef", _ROLE_REF, False)}
_RESOURCE_ATTRIBUTES: Schema = {
    1: ("namespace", "string", False), 2: ("verb", "string", False),
    3: ("group", "string", False), 4: ("version", "string", False),
    5: ("resource", "string", False), 6: ("subresource", "string", False),
    7: ("name", "string", False)}
_NON_RESOURCE_ATTRIBUTES: Schema = {1: ("path", "string", False), 2: ("verb", "string", False)}
_ACCESS_SPEC: Schema = {1: ("resourceAttributes", _RESOURCE_ATTRIBUTES, False),
                        2: ("nonResourceAttributes", _NON_RESOURCE_ATTRIBUTES, False),
                        3: ("user", "string", False), 4: ("groups", "string", True),
                        6: ("uid", "string", False)}
_BOUND_OBJECT: Schema = {1: ("kind", "string", False), 2: ("apiVersion", "string", False),
                         3: ("name", "string", False), 4: ("uid", "string", False)}
_AUTHZ, _AUTHN, _RBAC = ("authorization.k8s.io/v1", "authentication.k8s.io/v1",
                         "rbac.authorization.k8s.io/v1")
_META_ONLY: Schema = {1: ("metadata", _OBJECT_META, False)}
_KINDS: dict[tuple[str, str], Schema] = {
    ("v1", "Service"): {1: ("metadata", _OBJECT_META, False),
                        2: ("spec", _SERVICE_SPEC, False)},
    ("v1", "Namespace"): {1: ("metadata", _OBJECT_META, False),
                          2: ("spec", {1: ("finalizers", "string", True)}, False)},
    ("v1", "ConfigMap"): {1: ("metadata", _OBJECT_META, False), 2: ("data", "map", False),
                          3: ("binaryData", "bytesmap", False),
                          4: ("immutable", "bool", False)},
    ("v1", "ServiceAccount"): {1: ("metadata", _OBJECT_META, False),
                               4: ("automountServiceAccountToken", "bool", False)},
    (_RBAC, "Role"): _ROLE,
    (_RBAC, "ClusterRole"): _ROLE,
    (_RBAC, "RoleBinding"): _BINDING,
    (_RBAC, "ClusterRoleBinding"): _BINDING,
    (_AUTHZ, "SelfSubjectAccessReview"): {1: ("metadata", _OBJECT_META, False),
                                          2: ("spec", _ACCESS_SPEC, False)},
    (_AUTHZ, "SubjectAccessReview"): {1: ("metadata", _OBJECT_META, False),
                                      2: ("spec", _ACCESS_SPEC, False)},
    (_AUTHZ, "LocalSubjectAccessReview"): {1: ("metadata", _OBJECT_META, False),
                                           2: ("spec", _ACCESS_SPEC, False)},
    (_AUTHZ, "SelfSubjectRulesReview"): {
        1: ("metadata", _OBJECT_META, False),
        2: ("spec", {1: ("namespace", "string", False)}, False)},
    (_AUTHN, "SelfSubjectReview"): _META_ONLY,
    (_AUTHN, "TokenReview"): {1: ("metadata", _OBJECT_META, False), 2: ("spec", {
        1: ("token", "string", False), 2: ("audiences", "string", True)}, False)},
    (_AUTHN, "TokenRequest"): {1: ("metadata", _OBJECT_META, False), 2: ("spec", {
        1: ("audiences", "string", True), 3: ("boundObjectRef", _BOUND_OBJECT, False),
        4: ("expirationSeconds", "int", False)}, False)},
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
    """The JSON form of a protobuf-encoded Namespace or ConfigMap (a string that is not
    valid UTF-8, an encoded surrogate included, is a ``ProtobufError``: 400)."""
    try:
        return _decode(body)
    except UnicodeDecodeError as exc:
        raise ProtobufError(f"a string field is not valid UTF-8: {exc}") from exc


def _decode(body: bytes) -> JSON:
    if not body.startswith(MAGIC):
        raise ProtobufError("missing the k8s protobuf prefix")
    envelope = dict(_fields(body[len(MAGIC):]))
    type_meta = dict(_fields(bytes(envelope.get(1, b""))))
    api_version = bytes(type_meta.get(1, b"")).decode()
    kind = bytes(type_meta.get(2, b"")).decode()
    schema = _KINDS.get((api_version, kind))
    if schema is None:
        raise ApiStatusError(
            415, "UnsupportedMediaType",
            f"the body of the request was in an unknown format - this server reads "
            f"{kind or 'this kind'} only as application/json or application/yaml")
    obj = _message(bytes(envelope.get(2, b"")), schema)
    return {"apiVersion": api_version, "kind": kind, **obj}
