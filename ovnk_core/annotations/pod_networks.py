"""``k8s.ovn.org/pod-networks``: one entry per network a pod is attached to.

Why this exists: the cluster manager allocates a pod's addresses and writes them
here, once; the zone renders the pod's logical ports from it, the node agent
(and any CNI) wires the pod's interfaces from it, and features and plugins find
pods' addresses in it.  It decides which ports, addresses and routes a pod
gets, so every reader reads it strictly, the same way: a forged or corrupted
entry is a ``PodAnnotationError`` naming the field, never a half-read entry.

Keys are NAD keys (``default`` for the cluster default network, ``ns/nad`` for
user-defined networks).  An entry, once written, is never rewritten with other
IPs (``merge``).  What an entry holds for a network (its gateway and routes)
is decided by ``pods.annotation.build_pod_network``.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ovnk_core.annotations import AnnotationError, load_json

POD_NETWORKS_ANNOTATION = "k8s.ovn.org/pod-networks"
ROLES = ("primary", "secondary", "infrastructure-locked")
_MAC = re.compile(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}")
MAX_POD_TUNNEL_ID = 32768
"""Pod tunnel IDs are 1 .. MAX_POD_TUNNEL_ID - 1 (0 is never one)."""


class PodAnnotationError(AnnotationError):
    """The annotation cannot be parsed, or an update would change a pod's IPs."""


@dataclass(frozen=True)
class PodNetwork:
    """One entry: the pod's addresses, MAC and routes on one network."""

    ip_addresses: tuple[str, ...]
    mac_address: str
    role: str
    gateway_ips: tuple[str, ...] = ()
    routes: tuple[tuple[str, str], ...] = ()
    tunnel_id: int | None = None
    ipv6_lla_gateway_ip: str = ""

    def to_json(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"ip_addresses": list(self.ip_addresses),
                                 "mac_address": self.mac_address}
        if self.gateway_ips:
            entry["gateway_ips"] = list(self.gateway_ips)
        if self.routes:
            entry["routes"] = [{"dest": dest, "nextHop": hop} for dest, hop in self.routes]
        if len(self.ip_addresses) == 1:
            entry["ip_address"] = self.ip_addresses[0]
            if len(self.gateway_ips) == 1:
                entry["gateway_ip"] = self.gateway_ips[0]
        if self.ipv6_lla_gateway_ip:
            entry["ipv6_lla_gateway_ip"] = self.ipv6_lla_gateway_ip
        if self.tunnel_id is not None:
            entry["tunnel_id"] = self.tunnel_id
        entry["role"] = self.role
        return entry

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> PodNetwork:
        """One entry, every field checked for its type and form (a forged or corrupted
        entry is an error naming the field, never a half-read entry).

        :raises PodAnnotationError: the entry is not one ovnk could have written.
        """
        try:
            addresses = tuple(_strings(raw, "ip_addresses") or _legacy(raw, "ip_address"))
            for address in addresses:
                ipaddress.ip_interface(address)
            gateways = tuple(_strings(raw, "gateway_ips") or _legacy(raw, "gateway_ip"))
            for gateway in gateways:
                ipaddress.ip_address(gateway)
            routes = tuple(_route(r) for r in _list(raw, "routes"))
            mac = raw.get("mac_address", "")
            if not isinstance(mac, str) or not _MAC.fullmatch(mac):  # upstream: ParseMAC
                raise ValueError(f"failed to parse pod MAC {mac!r}")
            role = raw.get("role", "")
            if not isinstance(role, str) or (role and role not in ROLES):
                raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
            tunnel_id = raw.get("tunnel_id")
            if tunnel_id is not None and (not isinstance(tunnel_id, int)
                                          or isinstance(tunnel_id, bool)):
                raise ValueError(f"tunnel_id {tunnel_id!r} is not an integer")
            lla = raw.get("ipv6_lla_gateway_ip") or ""
            if not isinstance(lla, str):
                raise ValueError(f"ipv6_lla_gateway_ip {lla!r} is not a string")
            if lla:
                ipaddress.IPv6Address(lla)
            return cls(ip_addresses=addresses, mac_address=mac, role=role,
                       gateway_ips=gateways, routes=routes, tunnel_id=tunnel_id,
                       ipv6_lla_gateway_ip=lla)
        except (KeyError, TypeError, ValueError) as exc:
            raise PodAnnotationError(f"invalid pod network entry {dict(raw)!r}: {exc}") from None


def _list(raw: Mapping[str, Any], key: str) -> list[Any]:
    """``raw[key]`` as a list (absent or null: empty); anything else is a ValueError."""
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{key} must be a list, got {type(value).__name__}")
    return value


def _strings(raw: Mapping[str, Any], key: str) -> list[str]:
    values = _list(raw, key)
    if not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key} must be a list of strings")
    return values


def _legacy(raw: Mapping[str, Any], key: str) -> list[str]:
    """Upstream's single-value form (``ip_address``, ``gateway_ip``): a string, or none."""
    value = raw.get(key)
    if not value:
        return []
    if not isinstance(value, str):
        raise ValueError(f"{key} must be a string, got {type(value).__name__}")
    return [value]


def _route(route: Any) -> tuple[str, str]:
    if not isinstance(route, dict):
        raise ValueError(f"a route must be an object, got {type(route).__name__}")
    dest, hop = route["dest"], route["nextHop"]
    if not isinstance(dest, str) or not isinstance(hop, str):
        raise ValueError(f"route {route!r}: dest and nextHop must be strings")
    return (str(ipaddress.ip_network(dest, strict=False)), str(ipaddress.ip_address(hop)))


def entries(raw: str | None) -> dict[str, dict[str, Any]]:
    """The annotation as NAD key → raw entry, checked only for its shape (a JSON object of
    JSON objects); for readers that need only the keys.

    :raises PodAnnotationError: not that shape.
    """
    if not raw:
        return {}
    document = load_json(raw, POD_NETWORKS_ANNOTATION, PodAnnotationError)
    if not isinstance(document, dict):
        raise PodAnnotationError(f"{POD_NETWORKS_ANNOTATION} must be a JSON object")
    for key, value in document.items():
        if not isinstance(value, dict):
            raise PodAnnotationError(f"{POD_NETWORKS_ANNOTATION} entry {key!r} must be a JSON "
                                     f"object, got {type(value).__name__}")
    return document


def parse(raw: str | None) -> dict[str, PodNetwork]:
    """The annotation as NAD key → entry (absent or empty: none).

    :raises PodAnnotationError: naming the first thing wrong with it.
    """
    return {key: PodNetwork.from_json(value) for key, value in entries(raw).items()}


def serialize(networks: Mapping[str, PodNetwork]) -> str:
    return json.dumps({key: value.to_json() for key, value in networks.items()},
                      separators=(",", ":"))


def merge(existing: Mapping[str, PodNetwork], wanted: Mapping[str, PodNetwork]) -> dict[
        str, PodNetwork]:
    """``existing`` plus the entries of ``wanted`` it lacks; IPs are never changed."""
    result = dict(existing)
    for key, entry in wanted.items():
        old = result.get(key)
        if old is not None and old.ip_addresses != entry.ip_addresses:
            raise PodAnnotationError(
                f"{POD_NETWORKS_ANNOTATION} entry {key} already has IPs "
                f"{', '.join(old.ip_addresses)}; refusing to override them with "
                f"{', '.join(entry.ip_addresses)}")
        if old is None:
            result[key] = entry
    return result


__all__ = ["POD_NETWORKS_ANNOTATION", "ROLES", "PodAnnotationError", "PodNetwork", "entries",
           "merge", "parse", "serialize"]
