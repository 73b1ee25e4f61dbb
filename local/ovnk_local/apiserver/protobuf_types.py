"""The Kubernetes types whose JSON is not their fields: times, durations, quantities, ...

``metav1.Time`` is an RFC 3339 string with seconds in JSON (``null`` when zero) and a
``Timestamp{seconds}`` message on the wire (empty when zero, nanoseconds never written);
``MicroTime`` keeps microseconds on both; ``Duration`` is Go's ``1h2m3s`` text and
nanoseconds on the wire; ``Quantity`` is its string in both; ``IntOrString`` a bare
number or string in JSON and ``{type, intVal, strVal}`` on the wire.  Each converter pair
here turns a message's bytes into the JSON value Go's ``MarshalJSON`` writes and back.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from ovnk_local.apiserver import protowire as wire
from ovnk_local.apiserver.protowire import ProtobufError

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_GO_ZERO_SECONDS = -62135596800  # time.Time{}.Unix(): January 1, year 1, UTC
_RFC3339 = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(\.\d+)?"
                      r"(?:([Zz])|([+-])(\d\d):(\d\d))$")


def _timestamp(data: bytes) -> tuple[int, int]:
    seconds = nanos = 0
    for number, kind, value in wire.fields(data):
        if kind != wire.VARINT or not isinstance(value, int):
            raise ProtobufError(f"proto: wrong wireType = {kind} for field Timestamp")
        if number == 1:
            seconds = wire.signed(value, 64)
        elif number == 2:
            nanos = wire.signed(value, 32)
    return seconds, nanos


def _timestamp_bytes(seconds: int, nanos: int) -> bytes:
    return wire.tag(1, wire.VARINT) + wire.varint(seconds) + wire.tag(2, wire.VARINT) + \
        wire.varint(nanos)


def parse_rfc3339(text: Any) -> tuple[int, int]:
    """``(unix seconds, nanoseconds)`` of an RFC 3339 time as Go's ``time.Parse`` reads it."""
    match = _RFC3339.match(text) if isinstance(text, str) else None
    if match is None:
        raise ProtobufError(f'parsing time "{text}" as RFC 3339: cannot parse')
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = \
        match.groups()
    try:
        moment = datetime(int(year), int(month), int(day), int(hour), int(minute),
                          int(second), tzinfo=UTC)
    except ValueError as exc:
        raise ProtobufError(f'parsing time "{text}": {exc}') from None
    seconds = int((moment - _EPOCH).total_seconds())
    if not zulu:
        offset = (int(off_h) * 60 + int(off_m)) * 60
        seconds -= offset if sign == "+" else -offset
    nanos = int((fraction or ".")[1:10].ljust(9, "0") or 0)
    return seconds, nanos


def format_rfc3339(seconds: int, micros: int | None = None) -> str:
    """UTC, ``Z``; with ``micros``, six fractional digits (``metav1.RFC3339Micro``)."""
    moment = _EPOCH + timedelta(seconds=seconds)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if len(text) < 19:  # strftime drops a year's leading zeros on some platforms
        text = f"{moment.year:04d}" + text[text.index("-"):]
    return text + (f".{micros:06d}Z" if micros is not None else "Z")


# -- metav1.Time / MicroTime -------------------------------------------------------------
def time_to_json(data: bytes) -> str | None:
    if not data:
        return None
    seconds, _ = _timestamp(data)  # Time keeps seconds only, as its Unmarshal does
    return format_rfc3339(seconds)


def time_from_json(value: Any) -> bytes:
    if value is None:
        return b""
    seconds, _ = parse_rfc3339(value)
    return b"" if seconds == _GO_ZERO_SECONDS else _timestamp_bytes(seconds, 0)


def microtime_to_json(data: bytes) -> str | None:
    if not data:
        return None
    seconds, nanos = _timestamp(data)
    return format_rfc3339(seconds + nanos // 1_000_000_000, (nanos % 1_000_000_000) // 1000)


def microtime_from_json(value: Any) -> bytes:
    if value is None:
        return b""
    seconds, nanos = parse_rfc3339(value)
    if seconds == _GO_ZERO_SECONDS and nanos == 0:
        return b""
    return _timestamp_bytes(seconds, nanos - nanos % 1000)


# -- metav1.Duration ---------------------------------------------------------------------
_DURATION_UNITS = {"ns": 1, "us": 1000, "µs": 1000, "μs": 1000, "ms": 1_000_000,
                   "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}
_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")


def _fraction(value: int, digits: int) -> str:
    whole, rest = divmod(value, 10 ** digits)
    decimals = f"{rest:0{digits}d}".rstrip("0")
    return f"{whole}.{decimals}" if decimals else str(whole)


def format_go_duration(nanos: int) -> str:
    """Go's ``time.Duration.String()``: ``1h0m0s``, ``1.5s``, ``300ms``, ``0s``."""
    if nanos == 0:
        return "0s"
    sign, rest = ("-" if nanos < 0 else ""), abs(nanos)
    if rest < 1000:
        return f"{sign}{rest}ns"
    if rest < 1_000_000:
        return f"{sign}{_fraction(rest, 3)}µs"
    if rest < 1_000_000_000:
        return f"{sign}{_fraction(rest, 6)}ms"
    minutes, second_nanos = divmod(rest, 60_000_000_000)
    text = f"{_fraction(second_nanos, 9)}s"
    if minutes:
        hours, minutes = divmod(minutes, 60)
        text = f"{minutes}m{text}"
        if hours:
            text = f"{hours}h{text}"
    return sign + text


def parse_go_duration(text: Any) -> int:
    """Nanoseconds of a Go duration string (``time.ParseDuration``)."""
    if not isinstance(text, str):
        raise ProtobufError(f"time: invalid duration {text!r}")
    body = text.lstrip("+-")
    negative = text.startswith("-")
    if body == "0":
        return 0
    total, pos = 0, 0
    while pos < len(body):
        match = _DURATION_PART.match(body, pos)
        if match is None or match.end() == pos or not (match.group(1) or match.group(2)):
            raise ProtobufError(f'time: invalid duration "{text}"')
        whole, fraction, unit = match.groups()
        scale = _DURATION_UNITS[unit]
        total += int(whole or 0) * scale
        if fraction:
            total += int(fraction) * scale // 10 ** len(fraction)
        pos = match.end()
    if not body:
        raise ProtobufError(f'time: invalid duration "{text}"')
    return -total if negative else total


def duration_to_json(data: bytes) -> str:
    nanos = 0
    for number, _, value in wire.fields(data):
        if number == 1 and isinstance(value, int):
            nanos = wire.signed(value, 64)
    return format_go_duration(nanos)


def duration_from_json(value: Any) -> bytes:
    nanos = 0 if value is None else parse_go_duration(value)
    return wire.tag(1, wire.VARINT) + wire.varint(nanos)


# -- resource.Quantity -------------------------------------------------------------------
def quantity_to_json(data: bytes) -> str:
    text = "0"  # the zero Quantity's String()
    for number, _, value in wire.fields(data):
        if number == 1 and isinstance(value, bytes):
            text = value.decode()
    return text


def quantity_from_json(value: Any) -> bytes:
    if value is None:
        text = "0"
    elif isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ProtobufError(f"quantities must match the regular expression: {value!r}")
    else:
        text = value if isinstance(value, str) else _number_text(value)
    return wire.length_delimited(1, text.encode())


def _number_text(value: int | float) -> str:
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


# -- intstr.IntOrString ------------------------------------------------------------------
def intorstring_to_json(data: bytes) -> int | str:
    kind, number_value, text = 0, 0, ""
    for number, _, value in wire.fields(data):
        if number == 1 and isinstance(value, int):
            kind = value
        elif number == 2 and isinstance(value, int):
            number_value = wire.signed(value, 32)
        elif number == 3 and isinstance(value, bytes):
            text = value.decode()
    return text if kind == 1 else number_value


def intorstring_from_json(value: Any) -> bytes:
    if isinstance(value, str):
        kind, number_value, text = 1, 0, value
    elif value is None:
        kind, number_value, text = 0, 0, ""
    elif isinstance(value, int | float) and not isinstance(value, bool) and \
            float(value).is_integer():
        kind, number_value, text = 0, int(value), ""
    else:
        raise ProtobufError(f"json: cannot unmarshal {value!r} into Go value of type "
                            "intstr.IntOrString")
    return (wire.tag(1, wire.VARINT) + wire.varint(kind) + wire.tag(2, wire.VARINT) +
            wire.varint(number_value) + wire.length_delimited(3, text.encode()))
