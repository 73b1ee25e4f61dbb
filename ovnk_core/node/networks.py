"""The primary user-defined networks a node must serve, read from the NADs.

The node agent needs little of a network: its name, the network ID the
cluster manager annotated (masquerade addresses and management port names
derive from it), its cluster subnets, and what its topology asks the node
for (``NetworkNeeds``: a gateway, a management port).  It reads them from
the NADs it watches, only from the NADs the cluster manager accepted (those
carrying the network's ID), parsed by the enabled topology plugins; a NAD it
cannot read, or of a topology not enabled here, is skipped (the cluster
manager reports it on the NAD).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ovnk_core.errors import NetworkConfigError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.informer import Informer
from ovnk_core.kube.resources import NADS, NODES
from ovnk_core.networks import definition, nad_config
from ovnk_core.networks.netconf import parse_common
from ovnk_core.networks.netinfo import NetworkNeeds
from ovnk_core.topology import Topology

NO_NEEDS = NetworkNeeds()


@dataclass(frozen=True)
class PrimaryNetwork:
    """A primary network as the node sees it: name, network ID, topology, cluster CIDRs,
    and what its topology needs of the node."""

    name: str
    network_id: int
    topology: str
    cluster_subnets: tuple[str, ...]
    needs: NetworkNeeds = NO_NEEDS


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


def primary_networks(nads: Iterable[JSON], topologies: Mapping[str, Topology]
                     ) -> list[PrimaryNetwork]:
    """Every primary network with a network ID whose topology asks for a node gateway
    (``NetworkNeeds.node_gateway``), once, sorted by name; each as the NADs the cluster
    manager accepted define it (``networks.definition``), never as another NAD naming it
    says.  ``topologies``: the enabled topology plugins by name."""
    by_network: dict[str, list[tuple[JSON, tuple[str, PrimaryNetwork]]]] = {}
    for nad in nads:
        try:
            conf = parse_common((nad.get("spec") or {}).get("config") or "")
            topology = topologies.get(conf.topology)
            if topology is None:
                continue
            network_id = definition.accepted_id(nad, conf.name)
            if network_id is None:
                continue
            needs = topology.parse_netconf(conf).needs
        except NetworkConfigError:
            continue
        network = PrimaryNetwork(conf.name, network_id, conf.topology,
                                 cluster_subnets(conf.raw.get("subnets")), needs)
        by_network.setdefault(conf.name, []).append((nad, (conf.role, network)))
    found = []
    for name in sorted(by_network):
        decision = definition.decide(name, by_network[name], _same, accepted_only=True)
        if decision.definition is None:
            continue
        role, network = decision.definition
        if role == "primary" and network.needs.node_gateway:
            found.append(network)
    return found


def primary_namespaces(nads: Iterable[JSON], networks: Iterable[PrimaryNetwork]
                       ) -> dict[str, str]:
    """namespace → the primary network of its NADs, for the ``networks`` given (a namespace
    of none of them is on the default network)."""
    names = {network.name for network in networks}
    found: dict[str, str] = {}
    for nad in nads:
        config = nad_config.ovn_config_of(nad)
        if config is None or config.get("role") != "primary":
            continue
        name = config.get("name")
        if isinstance(name, str) and name in names:
            found[str(nad["metadata"]["namespace"])] = name
    return found


def _same(a: tuple[str, PrimaryNetwork], b: tuple[str, PrimaryNetwork]) -> bool:
    """Whether two NADs describe a network alike, as far as a node is concerned."""
    return (a[0], a[1].topology, a[1].cluster_subnets, a[1].needs) == \
        (b[0], b[1].topology, b[1].cluster_subnets, b[1].needs)


def watch_node_and_networks(informers: InformerFactory, node: str, controller: Controller,
                            key: str) -> tuple[Informer, Informer]:
    """The informers of this node's Node object and of the NADs, each change of either
    enqueueing ``key`` (node-wide controllers reconcile one key)."""
    nodes = informers.get(NODES, field_selector=f"metadata.name={node}")
    nads = informers.get(NADS)
    controller.watch(nodes, key_func=lambda _obj: [key])
    controller.watch(nads, key_func=lambda _obj: [key])
    return nodes, nads
