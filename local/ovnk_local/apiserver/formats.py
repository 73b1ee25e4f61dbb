"""String formats a CRD schema may name (``format: cidr``), checked like the real server.

The checks follow apiextensions' format registry for the formats CRDs use in
practice; a format not listed here is accepted without a check, as the real
server does for formats it does not know.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date, datetime

_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*\.?$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?"
                   r"[0-9a-fA-F]{12}$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}"
                  r"[0-9A-Fa-f]{4}$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")
_DURATION = re.compile(r"^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$|^0$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:.+")


def _ipv4(value: str) -> bool:
    try:
        ipaddress.IPv4Address(value)
        return True
    except ValueError:
        return False


def _ipv6(value: str) -> bool:
    try:
        ipaddress.IPv6Address(value)
        return True
    except ValueError:
        return False


def _cidr(value: str) -> bool:
    if "/" not in value:
        return False
    try:
        ipaddress.ip_network(value, strict=False)
        return True
    except ValueError:
        return False


def _byte(value: str) -> bool:
    try:
        base64.b64decode(value, validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def _date(value: str) -> bool:
    try:
        date.fromisoformat(value)
        return True
    except ValueError:
        return False


def _date_time(value: str) -> bool:
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
        return "T" in value.upper()
    except ValueError:
        return False


_CHECKS: dict[str, Callable[[str], bool]] = {
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "ip": lambda v: _ipv4(v) or _ipv6(v),
    "cidr": _cidr,
    "mac": lambda v: _MAC.match(v) is not None,
    "uuid": lambda v: _UUID.match(v) is not None,
    "hostname": lambda v: _HOSTNAME.match(v) is not None,
    "email": lambda v: _EMAIL.match(v) is not None,
    "byte": _byte,
    "date": _date,
    "date-time": _date_time,
    "datetime": _date_time,
    "duration": lambda v: _DURATION.match(v) is not None,
    "uri": lambda v: _URI.match(v) is not None,
}


def format_ok(fmt: str, value: str) -> bool:
    """Whether ``value`` satisfies ``fmt`` (unknown formats always do)."""
    check = _CHECKS.get(fmt)
    return check is None or check(value)
