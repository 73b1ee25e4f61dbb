"""Kubernetes protobuf on the wire: the envelope, watch frames and request bodies.

client-go clients (kubectl's generators, upstream's ``ovnkube``) send
``application/vnd.kubernetes.protobuf`` bodies and may ask for it back.  A body is
``k8s\\0`` followed by a ``runtime.Unknown`` (apiVersion and kind, then the object's
message, see ``protobuf_messages``); a watch event on a ``;stream=watch`` response is a
4-byte big-endian length and a ``metav1.WatchEvent`` whose object is such a body.
Custom resources have no protobuf form (kube-apiserver answers JSON for them, see
``negotiation``).  A body that cannot be decoded is refused in kube-apiserver's words
(``decode_request``).
"""

from __future__ import annotations

import struct

from ovnk_local.apiserver import protowire as wire
from ovnk_local.apiserver.errors import JSON, bad_request
from ovnk_local.apiserver.protobuf_messages import (
    META,
    SCHEMA_FILE,
    InvalidUtf8,
    Schema,
    from_json,
    schema,
    to_json,
)
from ovnk_local.apiserver.protowire import ProtobufError

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_UNSTRUCTURED = ("object *unstructured.Unstructured does not implement the protobuf "
                 "marshalling interface and cannot be encoded to a protobuf message")


# -- the envelope --------------------------------------------------------------------------
def _type_meta(data: bytes) -> tuple[str, str]:
    parts = {n: v for n, _, v in wire.fields(data)}
    api_version, kind = parts.get(1, b""), parts.get(2, b"")
    if not isinstance(api_version, bytes) or not isinstance(kind, bytes):
        raise ProtobufError("proto: wrong wireType = 0 for field TypeMeta")
    return api_version.decode(errors="replace"), kind.decode(errors="replace")


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """``(apiVersion, kind, message bytes)`` of an enveloped body."""
    if not body.startswith(MAGIC):
        raise ProtobufError("provided data does not appear to be a protobuf message, "
                            "expected prefix [107 56 115 0]")
    if len(body) == len(MAGIC):
        raise ProtobufError("empty body")
    api_version = kind = ""
    raw = b""
    for number, _, value in wire.fields(body[len(MAGIC):]):
        if number == 1 and isinstance(value, bytes):
            api_version, kind = _type_meta(value)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    return api_version, kind, raw


def decode(body: bytes, default: tuple[str, str] = ("", "")) -> JSON:
    """The JSON object of an enveloped body (``default`` apiVersion/kind fill an empty
    TypeMeta, as the endpoint's kind does in kube-apiserver)."""
    api_version, kind, raw = unwrap(body)
    api_version, kind = api_version or default[0], kind or default[1]
    message = schema().message_for(api_version, kind)
    if message is None:
        raise ProtobufError(f'no kind "{kind}" is registered for version "{api_version}" in '
                            'scheme "k8s.io/kubernetes/pkg/api/legacyscheme/scheme.go:30"')
    obj = to_json(message, raw)
    return {"kind": kind, "apiVersion": api_version, **obj}


def encodable(api_version: str, kind: str) -> bool:
    """Whether this kind has a protobuf form (built-in kinds do, custom resources not)."""
    return schema().message_for(api_version, kind) is not None


def encode(obj: JSON) -> bytes:
    """``k8s\\0`` + ``runtime.Unknown`` holding ``obj`` (which names its apiVersion/kind)."""
    api_version, kind = str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")
    message = schema().message_for(api_version, kind)
    if message is None:
        raise ProtobufError(f"{api_version}/{kind} has no protobuf form")
    type_meta = wire.length_delimited(1, api_version.encode()) + \
        wire.length_delimited(2, kind.encode())
    return (MAGIC + wire.length_delimited(1, type_meta) +
            wire.length_delimited(2, from_json(message, obj)) +
            wire.length_delimited(3, b"") + wire.length_delimited(4, b""))


def watch_frame(event_type: str, envelope: bytes) -> bytes:
    """One event of a ``;stream=watch`` response: a big-endian length, then a
    ``metav1.WatchEvent`` whose object (a RawExtension) is the enveloped object."""
    event = wire.length_delimited(1, event_type.encode()) + \
        wire.length_delimited(2, wire.length_delimited(1, envelope))
    return struct.pack(">I", len(event)) + event


def read_watch_event(frame: bytes) -> tuple[str, JSON]:
    """``(type, object)`` of one frame's WatchEvent bytes (without the length prefix)."""
    event = to_json(f"{META}.WatchEvent", b"")  # zero values
    event_type, envelope = str(event.get("type") or ""), b""
    for number, _, value in wire.fields(frame):
        if number == 1 and isinstance(value, bytes):
            event_type = value.decode()
        elif number == 2 and isinstance(value, bytes):
            envelope = next((v for n, _, v in wire.fields(value)
                             if n == 1 and isinstance(v, bytes)), b"")
    return event_type, decode(envelope)


# -- request bodies, worded as kube-apiserver words the failures --------------------------
def _summary(body: bytes) -> str:
    if not body:
        return "<empty>"
    text = body[:30]
    shown = text.decode(errors="replace") if body[:1] == b"{" else text.hex()
    return shown + (" ..." if len(body) > 30 else "")


def decode_request(body: bytes, expected: tuple[str, str], custom: bool) -> JSON:
    """A create/update body sent as protobuf to a resource of kind ``expected``
    (apiVersion, kind); ``custom``: a custom resource, which has no protobuf form."""
    expected_kind = expected[1]
    try:
        api_version, kind, _ = unwrap(body)
    except ProtobufError as exc:
        raise bad_request(f"the object provided is unrecognized (must be of type "
                          f"{expected_kind}): {exc} ({_summary(body)})") from None
    api_version, kind = api_version or expected[0], kind or expected_kind
    version = api_version.rsplit("/", 1)[-1]
    if custom:
        raise bad_request(f'{kind} in version "{version}" cannot be handled as a '
                          f"{expected_kind}: {_UNSTRUCTURED}")
    try:
        return decode(body, expected)
    except InvalidUtf8 as exc:
        raise bad_request(f"error decoding protobuf request body: {exc}") from None
    except ProtobufError as exc:
        raise bad_request(f'{kind} in version "{version}" cannot be handled as a '
                          f"{expected_kind}: {exc}") from None


__all__ = ["MAGIC", "MEDIA_TYPE", "META", "SCHEMA_FILE", "InvalidUtf8", "ProtobufError",
           "Schema", "decode", "decode_request", "encodable", "encode", "from_json",
           "read_watch_event", "schema", "to_json", "unwrap", "watch_frame"]
