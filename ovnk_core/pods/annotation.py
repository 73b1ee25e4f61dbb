"""The ``k8s.ovn.org/pod-networks`` annotation: one entry per network a pod is attached to.

Keys are NAD keys (``default`` for the cluster default network, ``ns/nad``
for user-defined networks).  Routes and gateways per role and topology
follow upstream (``AddRoutesGatewayIP``): a primary network carries the
pod's default gateway; the default network of a pod with a primary UDN is
``infrastructure-locked`` and only reaches the cluster and join subnets.
An entry, once written, is never rewritten with other IPs.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ovnk_core import jsondepth
from ovnk_core.config import Config
from ovnk_core.config.values import IPNetwork
from ovnk_core.errors import OvnkError
from ovnk_core.networks.addressing import (
    IPAddress,
    gateway_ip,
    link_local_from_mac,
    mac_from_ip,
)
from ovnk_core.networks.netinfo import NetInfo

ANNOTATION = "k8s.ovn.org/pod-networks"
OVN_SERVICE_HAIRPIN_OFFSET = 5
ROLES = ("primary", "secondary", "infrastructure-locked")
_MAC = re.compile(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}")


class PodAnnotationError(OvnkError):
    """The annotation cannot be parsed, or an update would change a pod's IPs."""


@dataclass(frozen=True)
class PodNetwork:
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
            addresses = tuple(_strings(raw, "ip_addresses") or
                              ([raw["ip_address"]] if raw.get("ip_address") else []))
            for address in addresses:
                ipaddress.ip_interface(address)
            gateways = tuple(_strings(raw, "gateway_ips") or
                             ([raw["gateway_ip"]] if raw.get("gateway_ip") else []))
            for gateway in gateways:
                ipaddress.ip_address(gateway)
            routes = tuple((str(ipaddress.ip_network(r["dest"], strict=False)),
                            str(ipaddress.ip_address(r["nextHop"])))
                           for r in _list(raw, "routes"))
            mac = raw.get("mac_address", "")
            if not isinstance(mac, str) or (mac and not _MAC.fullmatch(mac)):
                raise ValueError(f"failed to parse pod MAC {mac!r}")
            role = raw.get("role", "")
            if not isinstance(role, str) or (role and role not in ROLES):
                raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
            tunnel_id = raw.get("tunnel_id")
            if tunnel_id is not None and (not isinstance(tunnel_id, int)
                                          or isinstance(tunnel_id, bool)):
                raise ValueError(f"tunnel_id {tunnel_id!r} is not an integer")
            lla = raw.get("ipv6_lla_gateway_ip") or ""
            if lla:
                ipaddress.IPv6Address(lla)
            return cls(ip_addresses=addresses, mac_address=mac, role=role,
                       gateway_ips=gateways, routes=routes, tunnel_id=tunnel_id,
                       ipv6_lla_gateway_ip=str(lla))
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


def parse(raw: str | None) -> dict[str, PodNetwork]:
    if not raw:
        return {}
    try:
        document = jsondepth.loads(raw)  # nested too deeply: a ValueError too
    except ValueError as exc:
        raise PodAnnotationError(f"{ANNOTATION} is not valid JSON: {exc}") from None
    if not isinstance(document, dict):
        raise PodAnnotationError(f"{ANNOTATION} must be a JSON object")
    for key, value in document.items():
        if not isinstance(value, dict):
            raise PodAnnotationError(f"{ANNOTATION} entry {key!r} must be a JSON object, "
                                     f"got {type(value).__name__}")
    return {key: PodNetwork.from_json(value) for key, value in document.items()}


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
                f"{ANNOTATION} entry {key} already has IPs {', '.join(old.ip_addresses)}; "
                f"refusing to override them with {', '.join(entry.ip_addresses)}")
        if old is None:
            result[key] = entry
    return result


def _routes(destinations: Sequence[IPNetwork], gateways: Sequence[IPAddress]) -> list[
        tuple[str, str]]:
    routes = []
    for dest in destinations:
        for gateway in gateways:
            if gateway.version == dest.version:
                routes.append((str(dest), str(gateway)))
    return routes


def build_pod_network(config: Config, netinfo: NetInfo | None, role: str,
                      ips: Sequence[ipaddress.IPv4Interface | ipaddress.IPv6Interface],
                      tunnel_id: int | None = None) -> PodNetwork:
    """One entry.  ``netinfo`` is ``None`` for the default network."""
    gateways = [gateway_ip(ip.network) for ip in ips]
    routes: list[tuple[str, str]] = []
    gateway_ips: list[IPAddress] = []
    services = list(config.service_cidrs)
    if netinfo is None:  # the default network
        cluster = [s.cidr for s in config.cluster_subnets]
        joins = [config.join_subnet(v) for v in sorted({g.version for g in gateways})]
        routes += _routes(cluster, gateways)
        if role != "infrastructure-locked":
            hairpin = [ipaddress.ip_network(
                f"{config.masquerade_subnet(v).network_address + OVN_SERVICE_HAIRPIN_OFFSET}/"
                f"{32 if v == 4 else 128}") for v in sorted({g.version for g in gateways})]
            routes += _routes(services, gateways) + _routes(hairpin, gateways)
            gateway_ips = gateways
        routes += _routes(joins, gateways)
    elif netinfo.topology == "layer3":
        routes += _routes([s.cidr for s in netinfo.subnets], gateways)
        if netinfo.is_primary:
            routes += _routes(services, gateways) + _routes(list(netinfo.join_subnets), gateways)
            gateway_ips = gateways
    lla = ""
    if netinfo is not None and netinfo.topology == "layer2" and netinfo.is_primary:
        routes += _routes(services, gateways) + _routes(list(netinfo.join_subnets), gateways)
        gateway_ips = gateways
        if any(g.version == 6 for g in gateways):
            # The router port's MAC comes from the v4 gateway IP, or the v6 one without v4.
            router_ip = next((g for g in gateways if g.version == 4), gateways[0])
            lla = str(link_local_from_mac(mac_from_ip(router_ip)))
    mac = mac_from_ip(next((ip.ip for ip in ips if ip.version == 4), ips[0].ip)) if ips else ""
    return PodNetwork(ip_addresses=tuple(str(ip) for ip in ips), mac_address=mac, role=role,
                      gateway_ips=tuple(str(g) for g in gateway_ips), routes=tuple(routes),
                      tunnel_id=tunnel_id, ipv6_lla_gateway_ip=lla)


__all__ = ["ANNOTATION", "PodAnnotationError", "PodNetwork", "build_pod_network",
           "merge", "parse", "serialize"]
