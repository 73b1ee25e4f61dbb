"""A node's gateway facts: ``k8s.ovn.org/l3-gateway-config``, ``node-chassis-id`` and
``node-primary-ifaddr``.

Why this exists: the node agent publishes, on its own Node, how the node reaches
the outside (its external bridge, MAC, addresses and next hops), the chassis its
ovn-controller registers and its primary address; the zone renders the node's
gateway routers from them and the node agent's own gateway controller
programs the bridge from them.  A missing value means "not published yet" (the
node's gateway pieces wait); a value that is present but malformed is a
``GatewayConfigError`` with a specific message, never a half-read gateway.

``l3-gateway-config`` is upstream's format: an object with a ``default`` entry
(``mode``, ``bridge-id``/``interface-id``, ``mac-address``, ``ip-addresses``
and the legacy ``ip-address``, ``next-hops`` and ``next-hop``,
``node-port-enable``, ``vlan-id``).
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from typing import Any

from ovnk_core.annotations import AnnotationError, load_json

GATEWAY_CONFIG_ANNOTATION = "k8s.ovn.org/l3-gateway-config"
CHASSIS_ID_ANNOTATION = "k8s.ovn.org/node-chassis-id"
PRIMARY_IFADDR_ANNOTATION = "k8s.ovn.org/node-primary-ifaddr"
DEFAULT_GATEWAY_KEY = "default"
MODES = ("shared", "local")
MAX_VLAN_ID = 4094
_MAC = re.compile(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}")


class GatewayConfigError(AnnotationError):
    """``k8s.ovn.org/l3-gateway-config`` is malformed."""


@dataclass(frozen=True)
class GatewayConfig:
    """A node's external gateway, from its ``k8s.ovn.org/l3-gateway-config`` annotation.

    :ivar mode: ``shared`` or ``local``.
    :ivar bridge_id: the external bridge (``breth0``); the port of a network's external
        switch onto the physical network is named ``<bridge_id>_<prefix><node>``.
    :ivar mac: the bridge MAC.
    :ivar ips: the node's addresses on the bridge, with prefix length.
    :ivar next_hops: the default gateways.
    :ivar vlan_id: VLAN of the external network (0 = none).
    """

    mode: str
    bridge_id: str
    mac: str
    ips: tuple[str, ...]
    next_hops: tuple[str, ...]
    vlan_id: int = 0


def _strings(entry: dict[str, Any], key: str, legacy: str) -> list[str]:
    """``entry[key]`` (a list of strings), else ``[entry[legacy]]`` (a string), else []."""
    values = entry.get(key)
    if values:
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: {key} must be a list of "
                                     f"strings, got {json.dumps(values)}")
        return values
    value = entry.get(legacy)
    if not value:
        return []
    if not isinstance(value, str):
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: {legacy} must be a string, "
                                 f"got {json.dumps(value)}")
    return [value]


def _string(entry: dict[str, Any], key: str) -> str:
    value = entry.get(key) or ""
    if not isinstance(value, str):
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: {key} must be a string, "
                                 f"got {json.dumps(value)}")
    return value


def parse(raw: str) -> GatewayConfig:
    """The ``default`` entry of ``k8s.ovn.org/l3-gateway-config``.

    :raises GatewayConfigError: with a message naming what is wrong.
    """
    document = load_json(raw, GATEWAY_CONFIG_ANNOTATION, GatewayConfigError)
    entry: Any = document.get(DEFAULT_GATEWAY_KEY) if isinstance(document, dict) else None
    if not isinstance(entry, dict):
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION} has no "
                                 f"{DEFAULT_GATEWAY_KEY!r} object")
    mode = entry.get("mode")
    if mode not in MODES:
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: mode must be shared or "
                                 f"local, not {mode!r}")
    ips = _strings(entry, "ip-addresses", "ip-address")
    hops = _strings(entry, "next-hops", "next-hop")
    if not ips:
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: ip-addresses is empty")
    vlan = entry.get("vlan-id") or 0
    try:
        for ip in ips:
            ipaddress.ip_interface(ip)
        for hop in hops:
            ipaddress.ip_address(hop)
        if isinstance(vlan, bool) or not isinstance(vlan, int | str):
            raise ValueError(f"vlan-id must be an integer, got {json.dumps(vlan)}")
        vlan = int(vlan)
    except ValueError as exc:
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: {exc}") from None
    if not 0 <= vlan <= MAX_VLAN_ID:
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: vlan-id {vlan} is out of "
                                 f"range 0..{MAX_VLAN_ID}")
    mac = _string(entry, "mac-address")
    if mac and not _MAC.fullmatch(mac):
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: mac-address {mac!r} is not a "
                                 "MAC address")
    bridge = _string(entry, "bridge-id")
    interface = _string(entry, "interface-id")
    if not bridge and interface:
        bridge = interface.rsplit("_", 1)[0]
    if not bridge:
        raise GatewayConfigError(f"{GATEWAY_CONFIG_ANNOTATION}: bridge-id is missing")
    return GatewayConfig(mode=mode, bridge_id=bridge, mac=mac, ips=tuple(ips),
                         next_hops=tuple(hops), vlan_id=vlan)


def serialize(gateway: GatewayConfig, node: str) -> str:
    """The annotation's value for ``gateway`` on ``node``, as upstream's node agent writes
    it (the legacy single-address fields too, when there is one address)."""
    entry: dict[str, Any] = {"mode": gateway.mode, "bridge-id": gateway.bridge_id,
                             "interface-id": f"{gateway.bridge_id}_{node}",
                             "mac-address": gateway.mac,
                             "ip-addresses": list(gateway.ips)}
    if len(gateway.ips) == 1:
        entry["ip-address"] = gateway.ips[0]
    entry["next-hops"] = list(gateway.next_hops)
    if len(gateway.next_hops) == 1:
        entry["next-hop"] = gateway.next_hops[0]
    entry["node-port-enable"] = "true"
    entry["vlan-id"] = str(gateway.vlan_id)
    return json.dumps({DEFAULT_GATEWAY_KEY: entry}, separators=(",", ":"))


def serialize_primary_ifaddr(ipv4: str | None = None, ipv6: str | None = None) -> str:
    """``k8s.ovn.org/node-primary-ifaddr``: the node's primary address per family (CIDRs)."""
    value = {key: cidr for key, cidr in (("ipv4", ipv4), ("ipv6", ipv6)) if cidr}
    return json.dumps(value, separators=(",", ":"))  # as Go marshals it


__all__ = ["CHASSIS_ID_ANNOTATION", "DEFAULT_GATEWAY_KEY", "GATEWAY_CONFIG_ANNOTATION",
           "MODES", "PRIMARY_IFADDR_ANNOTATION", "GatewayConfig", "GatewayConfigError", "parse",
           "serialize", "serialize_primary_ifaddr"]
