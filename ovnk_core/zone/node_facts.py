"""What a Node object tells the zone controller: its ID, chassis, gateway and subnets.

The node agent publishes ``k8s.ovn.org/l3-gateway-config`` and
``k8s.ovn.org/node-chassis-id``; the cluster manager writes
``k8s.ovn.org/node-id`` and ``k8s.ovn.org/node-subnets``.  A value that is
missing means "not published yet" (the node's gateway pieces wait); a value
that is present but malformed is an error with a specific message, reported
on the node, and the rest of the node is still rendered.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from ovnk_core import jsondepth
from ovnk_core.clustermanager.node_allocator import NODE_ID_ANNOTATION, parse_node_subnets
from ovnk_core.config.values import IPNetwork
from ovnk_core.kube.client import JSON
from ovnk_core.render_state import GatewayConfig

GATEWAY_CONFIG_ANNOTATION = "k8s.ovn.org/l3-gateway-config"
CHASSIS_ID_ANNOTATION = "k8s.ovn.org/node-chassis-id"
DEFAULT_GATEWAY_KEY = "default"


@dataclass
class NodeFacts:
    """Everything the zone needs from one Node, with the problems found reading it."""

    name: str
    node_id: int | None = None
    chassis_id: str = ""
    gateway: GatewayConfig | None = None
    subnets: dict[str, tuple[IPNetwork, ...]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _annotations(node: JSON) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("annotations") or {})


def parse_gateway_config(raw: str) -> GatewayConfig:
    """Parse the ``default`` entry of ``k8s.ovn.org/l3-gateway-config``.

    :raises ValueError: with a message naming what is wrong.
    """
    try:
        document = jsondepth.loads(raw)  # nested too deeply: a ValueError too
    except ValueError as exc:
        raise ValueError(f"{GATEWAY_CONFIG_ANNOTATION} is not valid JSON: {exc}") from None
    entry: Any = document.get(DEFAULT_GATEWAY_KEY) if isinstance(document, dict) else None
    if not isinstance(entry, dict):
        raise ValueError(f"{GATEWAY_CONFIG_ANNOTATION} has no {DEFAULT_GATEWAY_KEY!r} object")
    mode = entry.get("mode")
    if mode not in ("shared", "local"):
        raise ValueError(f"{GATEWAY_CONFIG_ANNOTATION}: mode must be shared or local, "
                         f"not {mode!r}")
    ips = entry.get("ip-addresses") or ([entry["ip-address"]] if entry.get("ip-address")
                                        else [])
    hops = entry.get("next-hops") or ([entry["next-hop"]] if entry.get("next-hop") else [])
    if not ips:
        raise ValueError(f"{GATEWAY_CONFIG_ANNOTATION}: ip-addresses is empty")
    try:
        for ip in ips:
            ipaddress.ip_interface(ip)
        for hop in hops:
            ipaddress.ip_address(hop)
        vlan = int(entry.get("vlan-id") or 0)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{GATEWAY_CONFIG_ANNOTATION}: {exc}") from None
    bridge = entry.get("bridge-id") or ""
    interface = entry.get("interface-id") or ""
    if not bridge and interface:
        bridge = interface.rsplit("_", 1)[0]
    if not bridge:
        raise ValueError(f"{GATEWAY_CONFIG_ANNOTATION}: bridge-id is missing")
    return GatewayConfig(mode=mode, bridge_id=bridge, mac=str(entry.get("mac-address") or ""),
                         ips=tuple(str(ip) for ip in ips), next_hops=tuple(hops),
                         vlan_id=vlan)


def read_node(node: JSON) -> NodeFacts:
    """The facts of one Node; malformed annotations become ``problems``, never exceptions."""
    annotations = _annotations(node)
    facts = NodeFacts(name=node["metadata"]["name"],
                      chassis_id=annotations.get(CHASSIS_ID_ANNOTATION, ""))
    raw_id = annotations.get(NODE_ID_ANNOTATION)
    if raw_id is not None:
        try:
            facts.node_id = int(raw_id)
        except ValueError:
            facts.problems.append(f"{NODE_ID_ANNOTATION} {raw_id!r} is not an integer")
    raw_gateway = annotations.get(GATEWAY_CONFIG_ANNOTATION)
    if raw_gateway:
        try:
            facts.gateway = parse_gateway_config(raw_gateway)
        except ValueError as exc:
            facts.problems.append(str(exc))
    for network, cidrs in parse_node_subnets(node).items():
        try:
            facts.subnets[network] = tuple(ipaddress.ip_network(c) for c in cidrs)
        except ValueError as exc:
            facts.problems.append(f"k8s.ovn.org/node-subnets[{network}]: {exc}")
    return facts
