"""Per-node allocations of the cluster manager: node IDs, transit addresses, host subnets.

For every node it writes ``k8s.ovn.org/node-id``,
``k8s.ovn.org/node-transit-switch-port-ifaddr`` (the node's transit switch
addresses, derived from its ID and the transit switch subnets of the cluster's
IP families, as upstream's node allocation controller; zones read them:
docs/design/interconnect.md) and ``k8s.ovn.org/node-subnets`` — a JSON object
keyed by network name with a list of CIDRs per network (the default network
from ``--cluster-subnets``, and every registered network whose topology asks
for node subnets).

An allocation of a live network is never moved, and released only where the network
is no longer active (a per-node network filter: ``networks.activity``).  Allocation
starts only once the network catalog is synced (every network that existed at
startup registered), and every node's existing subnet of a network is
reserved before anything of that network is allocated, so a restart — even
one racing the NAD informer — changes nothing.  A network the registry does
not describe (yet) keeps its entry on every node as written, as long as a NAD
still names it; only a network without NADs is dropped and its slices freed.
A network that has no slice left fails for that node only:
``NetworkAllocationSucceeded=False`` on its UDN/CUDN and a Warning event
``NetworkAllocationFailed``; other networks and the node itself are served.

Node IDs follow upstream's allocator (``nodeAllocationController``): round robin over
2..5000 (0 and 1 are never handed out), an ID released with its node not handed out
again at once; at start every node keeps the ID it carries, and nodes whose ID cannot
be kept are renumbered before any node without an ID is numbered (``_reserve_node_ids``).
Nodes that exist at start are numbered in the order the informer lists them (by name);
upstream's order for them is not defined (its informer hands them to parallel queues).
"""

from __future__ import annotations

import logging
from typing import Any

from ovnk_core.allocators.ids import IdAllocationError, IdAllocator
from ovnk_core.allocators.subnets import HostSubnetAllocator, SubnetConflict, SubnetsExhausted
from ovnk_core.annotations.node_id import (
    HIGHEST_ALLOCATED_NODE_ID,
    MAX_NODE_ID,
    NODE_ID_ANNOTATION,
    RESERVED_NODE_IDS,
    NodeIdError,
)
from ovnk_core.annotations.node_id import parse as parse_node_id
from ovnk_core.annotations.node_id import serialize as serialize_node_id
from ovnk_core.annotations.node_subnets import NODE_SUBNETS_ANNOTATION, parse_node_subnets
from ovnk_core.annotations.node_subnets import serialize as serialize_node_subnets
from ovnk_core.annotations.node_transit import TRANSIT_PORT_ADDRESSES_ANNOTATION
from ovnk_core.annotations.node_transit import addresses_of as transit_addresses_of
from ovnk_core.annotations.node_transit import serialize as serialize_transit
from ovnk_core.clustermanager.network_catalog import NetworkCatalog, wait_for_networks
from ovnk_core.config import Config
from ovnk_core.errors import NotReady
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.conditions import Condition, set_conditions
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import CUDNS, NODES, UDNS
from ovnk_core.networks.activity import EveryNode, NetworkActivity
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME
from ovnk_core.networks.registry import NetworkRegistry
from ovnk_core.udn.nad import CUDN_PREFIX

log = logging.getLogger(__name__)

ALLOCATION_CONDITION = "NetworkAllocationSucceeded"


def owner_of_network(network: str) -> tuple[Any, str | None, str] | None:
    """(resource, namespace, name) of the UDN/CUDN behind a network name (upstream rules)."""
    if network.startswith(CUDN_PREFIX):
        return CUDNS, None, network[len(CUDN_PREFIX):]
    parts = network.split("_")
    if len(parts) == 2:
        return UDNS, parts[0], parts[1]
    return None


class NodeAllocator:
    def __init__(self, client: KubeClient, informers: InformerFactory, config: Config,
                 registry: NetworkRegistry, recorder: EventRecorder,
                 catalog: NetworkCatalog, activity: NetworkActivity | None = None) -> None:
        """:param activity: where each network is active: a node gets a subnet of a network
            only there, and gives it back once the network is not any more (default:
            every network everywhere)."""
        self.client = client
        self.config = config
        self.registry = registry
        self.recorder = recorder
        self.catalog = catalog
        self.nodes = informers.get(NODES)
        # new IDs 2..5000 as upstream's allocator (round robin, 0 and 1 never handed out);
        # an ID up to MAX_NODE_ID - 1 a node already carries is kept
        self.node_ids = IdAllocator("NodeIDs", HIGHEST_ALLOCATED_NODE_ID + 1,
                                    reserved=RESERVED_NODE_IDS, reserve_limit=MAX_NODE_ID)
        self.subnets: dict[str, HostSubnetAllocator] = {}
        self.failing: dict[str, set[str]] = {}
        self.controller = Controller("cluster-manager-node-allocator", self.reconcile,
                                     initial_sync=self.sync)
        self.controller.watch(self.nodes, primary=True)
        self.activity: NetworkActivity = activity or EveryNode()
        self.activity.add_listener(self._activity_changed)

    # -- which networks get node subnets ---------------------------------------------------
    def node_subnet_networks(self) -> dict[str, Any]:
        """The default network and every registered network whose topology gives each node
        a host subnet (``NetInfo.needs.node_subnets``)."""
        networks: dict[str, Any] = {DEFAULT_NETWORK_NAME: self.config.cluster_subnets}
        for name, entry in self.registry.networks().items():
            if entry.netinfo.needs.node_subnets and entry.network_id is not None:
                networks[name] = entry.netinfo.subnets
        return networks

    def _cached_nodes(self) -> list[JSON]:
        """Every cached Node, read-only (no copies: ``peek``)."""
        return [node for node in (self.nodes.peek(key) for key in self.nodes.list_keys())
                if node is not None]

    def _allocator(self, network: str, subnets: Any) -> HostSubnetAllocator:
        """The network's allocator; a new one first reserves every node's existing slice."""
        allocator = self.subnets.get(network)
        if allocator is None:
            allocator = self.subnets[network] = HostSubnetAllocator(network, subnets)
            for node in self._cached_nodes():
                existing = parse_node_subnets(node).get(network)
                if existing:
                    self._reserve(allocator, node["metadata"]["name"], existing)
        return allocator

    def _reserve(self, allocator: HostSubnetAllocator, node: str, cidrs: list[str]) -> None:
        try:
            allocator.reserve(node, cidrs)
        except (SubnetConflict, ValueError) as exc:
            log.warning("node %s: %s; a new subnet will be allocated", node, exc)

    def _kept_unknown(self, network: str) -> bool:
        """Whether a node keeps its entry of a network it gets no allocation for now: the
        network is not (yet, or not fully) in the registry but a NAD still names it."""
        entry = self.registry.get(network)
        if entry is not None and entry.network_id is not None \
                and not entry.netinfo.needs.node_subnets:
            return False  # known, and not a network with node subnets
        return self.catalog.network_exists(network)

    def _activity_changed(self, _network: str, node: str) -> None:
        if node:
            self.controller.queue.add(node)
        else:
            self.controller.reconcile_all()

    def sync(self) -> None:
        wait_for_networks(self.catalog, "node allocator")
        for node in self._cached_nodes():  # a restart keeps what it finds for a grace period
            for network in parse_node_subnets(node):
                if network != DEFAULT_NETWORK_NAME:
                    self.activity.assume_active(network, node["metadata"]["name"])
        self._reserve_node_ids()
        for network, subnets in self.node_subnet_networks().items():
            self._allocator(network, subnets)

    def _reserve_node_ids(self) -> None:
        """Upstream's ``syncNodeIDs``: every node keeps the ID it carries (one an older
        release handed out beyond today's range too); a node whose ID cannot be kept —
        another node's, a reserved one, out of range — gets a new one now, in the order
        the nodes are listed, before any node without an ID gets one.  An annotation that
        is no number at all counts as none: that node gets its ID at its turn."""
        conflicting: list[str] = []
        for node in self._cached_nodes():
            name = node["metadata"]["name"]
            raw = (node["metadata"].get("annotations") or {}).get(NODE_ID_ANNOTATION)
            if raw is None:
                continue
            try:
                self.node_ids.reserve(name, parse_node_id(raw))
            except (IdAllocationError, NodeIdError) as exc:
                log.warning("node %s: annotated node ID %r not reused: %s", name, raw, exc)
                if isinstance(raw, str) and raw.isdigit():
                    conflicting.append(name)
        for name in conflicting:
            log.info("node %s: new node ID %d", name, self.node_ids.allocate(name))

    def networks_changed(self) -> None:
        """Called when the registry changes: every node gets the new set of networks."""
        self.controller.reconcile_all()

    # -- one node ----------------------------------------------------------------------------
    def reconcile(self, name: str) -> None:
        node = self.nodes.get(name)
        networks = self.node_subnet_networks()
        if node is None or node["metadata"].get("deletionTimestamp"):
            self.node_ids.release(name)
            for allocator in self.subnets.values():
                allocator.release(name)
            for network in list(self.failing):
                self._clear_failure(network, name)
                for starved in self.failing.get(network, set()):
                    self.controller.requeue(starved)  # a slice was freed: try again
            return
        node_id = self.node_ids.allocate(name)
        written = parse_node_subnets(node)
        result: dict[str, list[str]] = {}
        for network, subnets in networks.items():
            allocator = self._allocator(network, subnets)
            if not self.activity.is_active(network, name):
                allocator.release(name)  # not used here (any more): no slice
                self._clear_failure(network, name)
                continue
            if allocator.get(name) is None and written.get(network):
                self._reserve(allocator, name, written[network])  # its own slice first
            try:
                allocated = allocator.allocate(name)
            except SubnetsExhausted as exc:
                self._record_failure(network, name, str(exc))
                continue
            result[network] = [str(net) for net in allocated]
            self._clear_failure(network, name)
        for network, cidrs in written.items():
            if network not in networks and self._kept_unknown(network):
                result[network] = cidrs  # not described yet: kept exactly as written
        for network in [n for n in self.subnets if n not in networks]:
            if self._kept_unknown(network):
                continue  # its slices stay reserved until the network is gone
            self.subnets[network].release(name)
            if not self.subnets[network].nodes():
                del self.subnets[network]
        self._write(node, node_id, result)

    def _write(self, node: JSON, node_id: int, subnets: dict[str, list[str]]) -> None:
        meta = node["metadata"]
        current = meta.get("annotations") or {}
        wanted: dict[str, str | None] = {
            NODE_ID_ANNOTATION: serialize_node_id(node_id),
            TRANSIT_PORT_ADDRESSES_ANNOTATION: self.transit_addresses(node_id),
            NODE_SUBNETS_ANNOTATION: serialize_node_subnets(subnets) if subnets else None}
        if all(current.get(key) == wanted[key]
               for key in (NODE_ID_ANNOTATION, TRANSIT_PORT_ADDRESSES_ANNOTATION)) and \
                parse_node_subnets(node) == subnets:
            return
        try:
            # through nodes/status, as upstream: the role needs no write access to the spec
            self.client.patch_status(NODES, meta["name"], {"metadata": {
                "annotations": wanted, "resourceVersion": meta.get("resourceVersion")}})
        except NotFound:
            return
        except Conflict:
            raise NotReady(f"node {meta['name']} changed meanwhile", delay=0.1) from None
        log.info("node %s: node-id %d, subnets %s", meta["name"], node_id, subnets)

    def transit_addresses(self, node_id: int) -> str | None:
        """``k8s.ovn.org/node-transit-switch-port-ifaddr`` of the node with ``node_id``: the
        transit subnet's base + the ID, per IP family of the cluster (``--cluster-subnets``);
        ``None`` (no annotation, logged) when the ID does not fit a transit subnet."""
        try:
            return serialize_transit(transit_addresses_of(
                [self.config.transit_subnet(version) for version in self.config.ip_families],
                node_id))
        except ValueError as exc:
            log.error("no transit switch addresses: %s", exc)
            return None

    # -- reporting on the UDN/CUDN -----------------------------------------------------------
    def _record_failure(self, network: str, node: str, message: str) -> None:
        failing = self.failing.setdefault(network, set())
        first = not failing
        failing.add(node)
        log.warning("network %s: %s", network, message)
        target = self._owner_object(network)
        if target is None:
            return
        resource, obj = target
        self.recorder.event(obj, WARNING, "NetworkAllocationFailed",
                            f"Error occurred for node {node}: {message}")
        if first:
            self._condition(resource, obj, Condition(
                ALLOCATION_CONDITION, "False", "InternalError",
                f"Network allocation failed for at least one node: {node}, check UDN events "
                "for more info."))

    def _clear_failure(self, network: str, node: str) -> None:
        failing = self.failing.get(network)
        if failing is None or node not in failing:
            return
        failing.discard(node)
        if failing:
            return
        del self.failing[network]
        target = self._owner_object(network)
        if target is not None:
            self._condition(target[0], target[1], Condition(
                ALLOCATION_CONDITION, "True", "NetworkAllocationSucceeded",
                "Network allocation succeeded for all synced nodes."))

    def _owner_object(self, network: str) -> tuple[Any, JSON] | None:
        owner = owner_of_network(network)
        if owner is None:
            return None
        resource, namespace, name = owner
        try:
            return resource, self.client.get(resource, name, namespace)
        except NotFound:
            return None

    def _condition(self, resource: Any, obj: JSON, condition: Condition) -> None:
        try:
            set_conditions(self.client, resource, obj, [condition])
        except (NotFound, Conflict) as exc:
            log.warning("cannot set %s on %s: %s", condition.type, obj["metadata"]["name"], exc)

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
