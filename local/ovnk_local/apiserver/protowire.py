"""The protobuf wire format: varints, tags, length-delimited fields, little-endian doubles.

Only what Kubernetes' ``generated.proto`` messages use (proto2, no groups, no zigzag
``sint`` types): wire type 0 (varint: bool, int32, int64, uint32, uint64), 1 (fixed64:
double), 2 (length-delimited: string, bytes, messages, map entries, packed repeated
scalars) and 5 (fixed32: float).  Negative int32/int64 values are sign-extended to ten
bytes, as protobuf specifies and Go writes them.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5
_MASK64 = (1 << 64) - 1


class ProtobufError(ValueError):
    """The bytes are not a well-formed protobuf message of the expected type."""


def varint(value: int) -> bytes:
    """``value`` as a varint (negative numbers as their 64-bit two's complement)."""
    value &= _MASK64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(number: int, wire: int) -> bytes:
    return varint(number << 3 | wire)


def length_delimited(number: int, payload: bytes) -> bytes:
    """Field ``number`` holding ``payload`` (a string, bytes, a message or a map entry)."""
    return tag(number, BYTES) + varint(len(payload)) + payload


def read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ProtobufError("unexpected EOF")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ProtobufError("integer overflow")


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(number, wire type, value)`` of each field in order; a varint's value is its
    unsigned integer, any other field's value its raw bytes."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number <= 0:
            raise ProtobufError(f"illegal tag {number} (wire type {wire})")
        if wire == VARINT:
            value, pos = read_varint(data, pos)
            yield number, wire, value
            continue
        if wire == BYTES:
            size, pos = read_varint(data, pos)
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
        else:
            raise ProtobufError(f"illegal wireType {wire} for field {number}")
        if pos + size > end:
            raise ProtobufError("unexpected EOF")
        yield number, wire, data[pos:pos + size]
        pos += size


def signed(value: int, bits: int) -> int:
    """An unsigned varint read back as a signed ``bits``-bit integer (Go's int32(v))."""
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def packed_varints(data: bytes) -> list[int]:
    """The values of a packed repeated varint field."""
    values, pos = [], 0
    while pos < len(data):
        value, pos = read_varint(data, pos)
        values.append(value)
    return values


def double(data: bytes) -> float:
    return float(struct.unpack("<d", data)[0])


def float32(data: bytes) -> float:
    return float(struct.unpack("<f", data)[0])


def fixed_double(number: int, value: float) -> bytes:
    return tag(number, FIXED64) + struct.pack("<d", value)


def fixed_float(number: int, value: float) -> bytes:
    return tag(number, FIXED32) + struct.pack("<f", value)
