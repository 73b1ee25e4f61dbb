"""Parsers for the value types used by flags, environment variables and TOML.

Each parser takes the raw value (a string from the command line or the
environment, or a native TOML value) and returns the typed value, raising
``ValueError`` with a short description of what was expected.  The loader
turns that into a ``ConfigError`` naming the flag.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Any

from ovnk_core.kube.names import name_errors

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"expected a boolean (true/false), got {raw!r}")


def parse_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError(f"expected an integer, got {raw!r}")
    if isinstance(raw, int):
        return raw
    try:
        return int(str(raw).strip())
    except ValueError:
        raise ValueError(f"expected an integer, got {raw!r}") from None


def parse_duration(raw: Any) -> float:
    """A Go-style duration (``120s``, ``2m``, ``1h30m``, ``500ms``) or plain seconds."""
    if isinstance(raw, bool):
        raise ValueError(f"expected a duration such as 120s or 2m, got {raw!r}")
    if isinstance(raw, int | float):
        seconds = float(raw)
    else:
        text = str(raw).strip()
        try:
            seconds = float(text)
        except ValueError:
            pos = 0
            seconds = 0.0
            for match in _DURATION_PART.finditer(text):
                if match.start() != pos:
                    break
                seconds += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
                pos = match.end()
            if pos != len(text) or not text:
                raise ValueError(
                    f"expected a duration such as 120s, 2m or 1h30m, got {raw!r}"
                ) from None
    if seconds < 0:
        raise ValueError(f"a duration cannot be negative, got {raw!r}")
    return seconds


def parse_str_list(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, list | tuple):
        items = [str(item).strip() for item in raw]
    else:
        items = [part.strip() for part in str(raw).split(",")]
    return tuple(item for item in items if item)


def parse_name(raw: Any) -> str:
    """A plugin name: a lower-case word of letters, digits, ``-`` and ``_``."""
    text = str(raw).strip()
    if not text or not all(ch.isalnum() or ch in "-_" for ch in text) \
            or text != text.lower() or not text.isascii():
        raise ValueError(f"{raw!r} is not a plugin name (lower-case letters, digits, - and _)")
    return text


MAX_ZONE_NAME = 253
_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_ZONE_NAME = re.compile(_DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*")


def parse_zone(raw: Any) -> str:
    """An OVN zone name (interconnect): a lower-case RFC 1123 subdomain, as a node's name;
    empty for the single zone.

    :raises ValueError: neither.
    """
    text = str(raw).strip()
    if text and (len(text) > MAX_ZONE_NAME or not _ZONE_NAME.fullmatch(text)):
        raise ValueError(f"{raw!r} is not a zone name (a lower-case RFC 1123 subdomain, as "
                         "a node's name)")
    return text


def parse_cidr(raw: Any, *, strict: bool = True) -> IPNetwork:
    """A CIDR; with ``strict=False`` host bits are masked off as Go's ``net.ParseCIDR`` does
    (``192.168.100.0/16`` is ``192.168.0.0/16``), which upstream uses for network subnets."""
    text = str(raw).strip()
    try:
        return ipaddress.ip_network(text, strict=strict)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not a valid CIDR ({exc})") from None


def parse_cidr_list(raw: Any) -> tuple[IPNetwork, ...]:
    return tuple(parse_cidr(item) for item in parse_str_list(raw))


@dataclass(frozen=True)
class ClusterSubnet:
    """One ``--cluster-subnets`` entry: a CIDR and the prefix length of each node's slice."""

    cidr: IPNetwork
    host_prefix: int

    def __str__(self) -> str:
        return f"{self.cidr}/{self.host_prefix}"


def parse_cluster_subnet(text: str, v4_default: int = 24, v6_default: int = 64) -> ClusterSubnet:
    """Parse ``CIDR[/HOSTPREFIX]`` (``10.244.0.0/16/24``) with upstream's rules."""
    text = text.strip()
    parts = text.split("/")
    if len(parts) == 3:
        cidr_text, host_text = "/".join(parts[:2]), parts[2]
    elif len(parts) == 2:
        cidr_text, host_text = text, ""
    else:
        raise ValueError(f"{text!r} is not of the form CIDR or CIDR/HOSTPREFIX")
    cidr = parse_cidr(cidr_text, strict=False)
    if host_text:
        try:
            host_prefix = int(host_text)
        except ValueError:
            raise ValueError(f"{text!r}: host prefix {host_text!r} is not a number") from None
    else:
        host_prefix = v4_default if cidr.version == 4 else v6_default
    if cidr.version == 6 and host_prefix != 64:
        raise ValueError(f"{text!r}: IPv6 only supports /64 host subnets")
    if cidr.version == 4 and host_prefix > 32:
        raise ValueError(f"{text!r}: host prefix /{host_prefix} is longer than 32")
    if host_prefix <= cidr.prefixlen:
        raise ValueError(
            f"{text!r}: host prefix /{host_prefix} must be longer than the CIDR's /{cidr.prefixlen}"
        )
    return ClusterSubnet(cidr, host_prefix)


def parse_cluster_subnets(raw: Any) -> tuple[ClusterSubnet, ...]:
    entries = tuple(parse_cluster_subnet(item) for item in parse_str_list(raw))
    v4_prefixes = {entry.host_prefix for entry in entries if entry.cidr.version == 4}
    if len(v4_prefixes) > 1:
        raise ValueError("all IPv4 cluster subnets must use the same host prefix")
    return entries


_OVSDB_REMOTE = re.compile(r"^(unix:.+|(tcp|ssl):(\[[0-9a-fA-F:]+\]|[^:\[\]]+):\d{1,5})$")


def parse_ovsdb_remotes(raw: Any) -> tuple[str, ...]:
    """A comma-separated list of OVSDB remotes (several = RAFT cluster members)."""
    remotes = parse_str_list(raw)
    if not remotes:
        raise ValueError("expected at least one OVSDB remote such as unix:/run/ovn/ovnnb_db.sock")
    for remote in remotes:
        if not _OVSDB_REMOTE.match(remote):
            raise ValueError(
                f"{remote!r} is not an OVSDB remote (unix:PATH, tcp:HOST:PORT or ssl:HOST:PORT)"
            )
    return remotes


def parse_udn_allowed_default_services(raw: Any) -> tuple[str, ...]:
    """``--udn-allowed-default-services``: comma-separated ``<namespace>/<name>`` keys of
    default-network services that pods of primary user-defined networks may use.

    As upstream, spaces around an entry are ignored, every entry must name a namespace
    (DNS-1123 label) and a service (DNS-1123 subdomain), and an empty entry (so an empty
    value) is an error; the messages are upstream's, with the reason where upstream
    prints ``<nil>``.
    """
    entries = list(raw) if isinstance(raw, list | tuple) else str(raw).split(",")
    keys: list[str] = []
    for entry in entries:
        key = str(entry).strip()
        parts = key.split("/")
        if len(parts) > 2:
            problem = f"UDN enabled service {_go_quote(key)} no namespace set: " \
                      f"unexpected key format: {_go_quote(key)}"
        elif len(parts) == 1 or not parts[0]:
            problem = f"UDN enabled service {_go_quote(key)} no namespace set: " \
                      "expected <namespace>/<name>"
        elif name_errors(parts[0], "label"):
            problem = f"UDN enabled service {_go_quote(key)} has an invalid namespace: " \
                      + "; ".join(name_errors(parts[0], "label"))
        elif name_errors(parts[1], "subdomain"):
            problem = f"UDN enabled service {_go_quote(key)} has an invalid name: " \
                      + "; ".join(name_errors(parts[1], "subdomain"))
        else:
            if key not in keys:
                keys.append(key)
            continue
        raise ValueError(f"UDN allowed services field is invalid: {problem}")
    return tuple(keys)


def _go_quote(text: str) -> str:
    """``%q`` of a plain string, as Go prints it."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
