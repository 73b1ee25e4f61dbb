"""The primary user-defined networks a node must serve, read from the NADs.

The node agent needs little of a network: its name, the network ID the
cluster manager annotated (masquerade addresses and management port names
derive from it), and its cluster subnets.  It reads them from the NADs it
watches, without the topology plugins; a NAD it cannot read is skipped (the
cluster manager reports it on the NAD).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from ovnk_core.clustermanager.nad_controller import annotated_id
from ovnk_core.errors import NetworkConfigError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.informer import Informer
from ovnk_core.kube.resources import NADS, NODES
from ovnk_core.networks.netconf import parse_common

GATEWAY_TOPOLOGIES = ("layer3", "layer2")


@dataclass(frozen=True)
class PrimaryNetwork:
    """A primary network as the node sees it: name, network ID, topology, cluster CIDRs."""

    name: str
    network_id: int
    topology: str
    cluster_subnets: tuple[str, ...]


def cluster_subnets(raw: object) -> tuple[str, ...]:
    """``"10.1.0.0/16/24,fd00::/48/64"`` (host prefixes optional) → the cluster CIDRs."""
    if not isinstance(raw, str):
        return ()
    found = []
    for item in raw.split(","):
        parts = item.strip().split("/")
        if len(parts) >= 2:
            try:
                found.append(str(ipaddress.ip_network(f"{parts[0]}/{parts[1]}", strict=False)))
            except ValueError:
                continue
    return tuple(found)


def primary_networks(nads: Iterable[JSON]) -> list[PrimaryNetwork]:
    """Every primary Layer3/Layer2 network with a network ID, once, sorted by name."""
    found: dict[str, PrimaryNetwork] = {}
    for nad in nads:
        network_id = annotated_id(nad)
        try:
            conf = parse_common((nad.get("spec") or {}).get("config") or "")
        except NetworkConfigError:
            continue
        if network_id is None or conf.role != "primary" or conf.topology not in \
                GATEWAY_TOPOLOGIES:
            continue
        found[conf.name] = PrimaryNetwork(conf.name, network_id, conf.topology,
                                          cluster_subnets(conf.raw.get("subnets")))
    return [found[name] for name in sorted(found)]


def watch_node_and_networks(informers: InformerFactory, node: str, controller: Controller,
                            key: str) -> tuple[Informer, Informer]:
    """The informers of this node's Node object and of the NADs, each change of either
    enqueueing ``key`` (node-wide controllers reconcile one key)."""
    nodes = informers.get(NODES, field_selector=f"metadata.name={node}")
    nads = informers.get(NADS)
    controller.watch(nodes, key_func=lambda _obj: [key])
    controller.watch(nads, key_func=lambda _obj: [key])
    return nodes, nads
