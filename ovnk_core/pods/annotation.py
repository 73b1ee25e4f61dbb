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
from ovnk_core.errors import OvnkError
from ovnk_core.networks.addressing import (
    IPAddress,
    gateway_ip,
    mac_from_ip,
)
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.pods.routing import routes_to
from ovnk_core.topology import PodRouting, Topology

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


def build_pod_network(config: Config, netinfo: NetInfo | None, role: str,
                      ips: Sequence[ipaddress.IPv4Interface | ipaddress.IPv6Interface],
                      tunnel_id: int | None = None,
                      topology: Topology | None = None) -> PodNetwork:
    """One entry.  ``netinfo`` is ``None`` for the default network, whose routes are the
    core's; a user-defined network's gateway and routes come from ``topology`` (the plugin
    that parsed ``netinfo``, required then)."""
    gateways = [gateway_ip(ip.network) for ip in ips]
    if netinfo is None or netinfo.is_default:
        routing = default_network_routing(config, role, gateways)
    else:
        if topology is None:
            raise TypeError(f"network {netinfo.name}: the entry needs its topology plugin")
        routing = topology.pod_routing(netinfo, gateways)
    mac = mac_from_ip(next((ip.ip for ip in ips if ip.version == 4), ips[0].ip)) if ips else ""
    return PodNetwork(ip_addresses=tuple(str(ip) for ip in ips), mac_address=mac, role=role,
                      gateway_ips=routing.gateway_ips, routes=routing.routes,
                      tunnel_id=tunnel_id, ipv6_lla_gateway_ip=routing.ipv6_lla_gateway_ip)


def default_network_routing(config: Config, role: str, gateways: Sequence[IPAddress]
                            ) -> PodRouting:
    """The default network's entry: routes to the cluster and join subnets; unless the
    pod's primary network is a user-defined one (``infrastructure-locked``), also its
    default gateway and routes to the services and the service hairpin address."""
    versions = sorted({g.version for g in gateways})
    routes = routes_to([s.cidr for s in config.cluster_subnets], gateways)
    gateway_ips: list[IPAddress] = []
    if role != "infrastructure-locked":
        hairpin = [ipaddress.ip_network(
            f"{config.masquerade_subnet(v).network_address + OVN_SERVICE_HAIRPIN_OFFSET}/"
            f"{32 if v == 4 else 128}") for v in versions]
        routes += routes_to(config.service_cidrs, gateways) + routes_to(hairpin, gateways)
        gateway_ips = list(gateways)
    routes += routes_to([config.join_subnet(v) for v in versions], gateways)
    return PodRouting(gateway_ips=tuple(str(g) for g in gateway_ips), routes=tuple(routes))


__all__ = ["ANNOTATION", "PodAnnotationError", "PodNetwork", "build_pod_network",
           "merge", "parse", "serialize"]
