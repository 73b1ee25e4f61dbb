"""What a Node object tells the zone controller: its ID, chassis, gateway, subnets and zone.

The node agent publishes ``k8s.ovn.org/l3-gateway-config`` and
``k8s.ovn.org/node-chassis-id``; the cluster manager writes
``k8s.ovn.org/node-id``, ``k8s.ovn.org/node-transit-switch-port-ifaddr`` and
``k8s.ovn.org/node-subnets``.  A value that is missing means "not published
yet" (the node's gateway pieces wait); a value that is present but malformed
is an error with a specific message, reported on the node, and the rest of
the node is still rendered.

For interconnect (``--zone``) the node's identity also writes
``k8s.ovn.org/zone-name`` and ``k8s.ovn.org/node-encap-ips``.  Those, and the
transit addresses, matter only when zones are per node: their problems are
kept apart (``zone_problem``, ``interconnect_problems``) so that the single
zone never reports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from ovnk_core.annotations import (
    node_encap_ips,
    node_gateway,
    node_id,
    node_subnets,
    node_transit,
    node_zone,
)
from ovnk_core.annotations.node_transit import TransitAddress
from ovnk_core.config.values import IPNetwork
from ovnk_core.kube.client import JSON

T = TypeVar("T")


@dataclass
class NodeFacts:
    """Everything the zone needs from one Node, with the problems found reading it."""

    name: str
    node_id: int | None = None
    chassis_id: str = ""
    gateway: node_gateway.GatewayConfig | None = None
    subnets: dict[str, tuple[IPNetwork, ...]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    # interconnect: the node's zone (None: missing or bad, said by zone_problem), transit
    # addresses and encap IPs, and what was wrong reading those two
    zone: str | None = None
    zone_problem: str = ""
    transit_addresses: tuple[TransitAddress, ...] = ()
    encap_ips: tuple[str, ...] = ()
    interconnect_problems: list[str] = field(default_factory=list)


# every annotation ``read_node`` reads (its result changes only when one of them does)
NODE_FACT_ANNOTATIONS = (node_gateway.CHASSIS_ID_ANNOTATION, node_id.NODE_ID_ANNOTATION,
                         node_gateway.GATEWAY_CONFIG_ANNOTATION,
                         node_subnets.NODE_SUBNETS_ANNOTATION, node_zone.ZONE_ANNOTATION,
                         node_transit.TRANSIT_PORT_ADDRESSES_ANNOTATION,
                         node_encap_ips.NODE_ENCAP_IPS_ANNOTATION)


def _annotations(node: JSON) -> dict[str, str]:
    return dict((node.get("metadata") or {}).get("annotations") or {})


def read_node(node: JSON) -> NodeFacts:
    """The facts of one Node; malformed annotations become ``problems``, never exceptions
    (each read by its contract in ``ovnk_core.annotations``)."""
    annotations = _annotations(node)
    facts = NodeFacts(name=node["metadata"]["name"],
                      chassis_id=annotations.get(node_gateway.CHASSIS_ID_ANNOTATION, ""))
    facts.node_id = _parsed(annotations.get(node_id.NODE_ID_ANNOTATION), node_id.parse,
                            node_id.NodeIdError, facts.problems)
    facts.gateway = _parsed(annotations.get(node_gateway.GATEWAY_CONFIG_ANNOTATION) or None,
                            node_gateway.parse, node_gateway.GatewayConfigError,
                            facts.problems)
    facts.subnets, problems = node_subnets.read(
        annotations.get(node_subnets.NODE_SUBNETS_ANNOTATION))
    facts.problems += problems
    _read_interconnect(annotations, facts)
    return facts


def _read_interconnect(annotations: dict[str, str], facts: NodeFacts) -> None:
    try:
        facts.zone = node_zone.parse(annotations.get(node_zone.ZONE_ANNOTATION))
    except node_zone.NodeZoneError as exc:
        facts.zone_problem = str(exc)
    transit = _parsed(annotations.get(node_transit.TRANSIT_PORT_ADDRESSES_ANNOTATION),
                      node_transit.parse, node_transit.TransitAddressesError,
                      facts.interconnect_problems)
    if transit is not None:
        facts.transit_addresses = transit
    encap = _parsed(annotations.get(node_encap_ips.NODE_ENCAP_IPS_ANNOTATION),
                    node_encap_ips.parse, node_encap_ips.NodeEncapIpsError,
                    facts.interconnect_problems)
    if encap is not None:
        facts.encap_ips = tuple(encap)


def _parsed(raw: str | None, parse: Callable[[str], T], error: type[Exception],
            problems: list[str]) -> T | None:
    """``parse(raw)``; ``None`` when the annotation is absent or, its message added to
    ``problems``, when it is malformed."""
    if raw is None:
        return None
    try:
        return parse(raw)
    except error as exc:
        problems.append(str(exc))
        return None


def networks_affected(old: NodeFacts | None, new: NodeFacts | None) -> set[str] | None:
    """The networks whose rendering a change of one node from ``old`` to ``new`` can touch:
    ``None`` for all of them (the node came or went, or its ID, chassis, gateway, zone or
    transit addresses changed),
    otherwise those whose subnets on the node changed (often one: the cluster manager
    allocates a node's subnet per network)."""
    if old is None or new is None:
        return None
    if (old.node_id, old.chassis_id, old.gateway, old.problems, old.zone, old.zone_problem,
            old.transit_addresses, old.interconnect_problems) != \
            (new.node_id, new.chassis_id, new.gateway, new.problems, new.zone, new.zone_problem,
             new.transit_addresses, new.interconnect_problems):
        return None
    return {network for network in old.subnets.keys() | new.subnets.keys()
            if old.subnets.get(network) != new.subnets.get(network)}

