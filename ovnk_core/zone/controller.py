"""The zone controller: converges OVN Northbound to the networks, nodes and pods of the zone.

Two level-driven controllers share the zone's informers:

* the **network controller** (key: network name) renders a network's own rows
  and the rows of every node in it, through the network's topology plugin,
  and removes the rows of nodes that are gone.  A network whose definition
  now names a topology that does not render loses every row it had (its NAD
  was edited to name such a topology, say); another topology's rows replace
  the old ones owner by owner.  A network whose last NAD is
  gone loses every row its controller owns (pods, nodes, network), and so does
  one whose accepted NADs name a topology no loaded plugin provides (left out of
  ``--topologies``, or uninstalled): at startup, since the initial sync enqueues
  every network owning rows, as a disabled feature's rows go.  NAD
  changes enqueue their network; node changes enqueue every network.
  A network's definition comes only from the NADs the cluster manager
  accepted (``zone.networks``): a NAD claiming its name from another
  namespace changes none of its rows, and its pods are not attached to it.
* the **pod controller** (key: ``ns/name``) renders one port per network in
  the pod's ``k8s.ovn.org/pod-networks`` annotation and removes the ports of
  networks the pod left, or of a pod that is gone or completed.  Its workers'
  writes, and the services controller's, share transactions (``GroupCommit``):
  pods annotated while a transaction is in flight go out together in the next.

Everything is found again from NB after a restart: the initial sync
enqueues every network and pod that owns rows (``k8s.ovn.org/owner-*``
external_ids), so networks and pods deleted while the controller was down
are cleaned up, and, because ``apply`` writes only differences, a restart
with nothing changed writes nothing.

Rows changed in NB by someone else are repaired: the writer reads its rows
again every ``--nb-resync-interval`` (``resync_nb``), and every network and
pod whose rows differ from what was written is reconciled again.

Addresses are never chosen here: the cluster manager allocates them (node
subnets, node IDs, pod IPs) and this controller only reads its annotations.
It does not trust them, though: every pod-networks entry is checked first
(``attachment_checks``: a network the pod may use, addresses inside its
node's subnet and not reserved, the network's gateways and routes, a real
MAC) and no two pods render one IP on one network (the pod that held it
first keeps it).  A refused entry gets no row and a Warning event
``ErrorAddingLogicalPort`` on the pod; the pod's other entries, and every
other pod, still render.

With ``--zone NAME`` (interconnect, docs/design/interconnect.md) the zone
renders only its own nodes (``k8s.ovn.org/zone-name`` = NAME) and their pods
fully; the other zones' nodes are given to topologies that render
interconnect as remote nodes (their transit switch port and the routes to
them), their pods to topologies that render remote pods (a switch that spans
the zones: ``remote`` ports), and a node whose zone annotation is missing or bad is rendered
nowhere, with a Warning event ``InvalidNodeAnnotation`` on it.  Without
``--zone`` every node is the zone's own, as before.

A value OVSDB cannot hold (a NUL or a lone surrogate in a network name, a
node's chassis annotation, ...: ``ovn.storable``) refuses only the owner
whose rows hold it — never sent, so the connection and every other owner
are unaffected — with a Warning event on its pod, its node, or the
network's NADs.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import threading
from collections.abc import Callable, Iterable

from ovnk_core.annotations import pod_networks
from ovnk_core.config import Config
from ovnk_core.config.values import IPNetwork
from ovnk_core.contexts import (
    FEATURE_OWNER_PREFIX,
    feature_of_controller,
    feature_of_owner,
    is_feature_key,
)
from ovnk_core.errors import NotReady, PermanentError, TemporaryError, TopologyNotSupported
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.parsed_cache import ParsedByVersion, annotations_version
from ovnk_core.kube.resources import NADS, NODES, PODS, object_key, split_key
from ovnk_core.networks.nad_config import nad_network_name, primary_nad_namespace
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME
from ovnk_core.ovn.capabilities import NbCapabilities
from ovnk_core.ovn.declarative import DesiredRow, MissingReference, UnstorableValue, apply_many
from ovnk_core.ovn.group_commit import GroupCommit
from ovnk_core.ovn.nb import NbConnectError
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.pod_port import ERROR_ADDING, ERROR_DELETING, ERROR_UPDATING
from ovnk_core.pods.ip_pools import uses_node_subnets
from ovnk_core.pods.network_selections import requested_networks
from ovnk_core.render_state import NetworkState, NodeState, NodeSwitch, PodAttachment
from ovnk_core.topology import RenderingNotSupported, ServiceAttachment, Topology
from ovnk_core.zone import attachment_checks, owners
from ovnk_core.zone.attachment_checks import PodContext
from ovnk_core.zone.networks import GONE, READY, UNRENDERED, lookup_network
from ovnk_core.zone.node_facts import (
    NODE_FACT_ANNOTATIONS,
    NodeFacts,
    networks_affected,
    read_node,
)
from ovnk_core.zone.node_switches import node_switches
from ovnk_core.zone.pod_port_extras import merge_pod_port
from ovnk_core.zone.remote_chassis import RemoteChassisController
from ovnk_core.zone.services import desired as service_rows
from ovnk_core.zone.services import names as service_names
from ovnk_core.zone.services.controller import ServicesController
from ovnk_core.zone.services.desired import carries_services
from ovnk_core.zone.services.udn_enabled import UdnEnabledServices

log = logging.getLogger(__name__)

TERMINAL_PHASES = ("Succeeded", "Failed")
POD_WORKERS = 4  # pods reconciled at once (their writes share transactions: GroupCommit)


def pod_nad_keys(pod: JSON) -> list[str]:
    """Index: the NAD keys (``default`` or ``ns/nad``) of a pod's annotated networks."""
    raw = (pod["metadata"].get("annotations") or {}).get(pod_networks.POD_NETWORKS_ANNOTATION)
    try:
        return sorted(pod_networks.parse(raw))
    except pod_networks.PodAnnotationError:
        return []


def nad_ip_key(nad_key: str, ip: str) -> str:
    """The pod IP index's value for ``ip`` (without prefix length) on NAD ``nad_key``."""
    return f"{nad_key}@{ip}"


def pod_ip_keys(pod: JSON) -> list[str]:
    """Index: every IP of a pod's annotated networks, per NAD (``nad_ip_key``).  Networks
    overlap: keyed by IP alone, one lookup would find the pods of every network using the
    same range."""
    raw = (pod["metadata"].get("annotations") or {}).get(pod_networks.POD_NETWORKS_ANNOTATION)
    try:
        entries = pod_networks.parse(raw)
    except pod_networks.PodAnnotationError:
        return []
    return sorted({nad_ip_key(nad_key, str(ipaddress.ip_interface(ip).ip))
                   for nad_key, entry in entries.items() for ip in entry.ip_addresses})


def pod_entries(pod: JSON) -> dict[str, pod_networks.PodNetwork]:
    """NAD key → entry of the pod's annotation (every entry has a MAC; a network without
    IPAM gives its pods nothing else).

    :raises PermanentError: the annotation is malformed (reported on the pod).
    """
    meta = pod["metadata"]
    try:
        return pod_networks.parse(
            (meta.get("annotations") or {}).get(pod_networks.POD_NETWORKS_ANNOTATION))
    except pod_networks.PodAnnotationError as exc:
        raise PermanentError(str(exc), reason="ErrorReconcilingPod") from None


def attachment_of(pod: JSON, nad_key: str, entry: pod_networks.PodNetwork,
                  node_id: int | None = None) -> PodAttachment:
    meta = pod["metadata"]
    return PodAttachment(meta["namespace"], meta["name"], meta.get("uid", ""),
                         (pod.get("spec") or {}).get("nodeName") or "", nad_key,
                         entry.mac_address, entry.ip_addresses, entry.role, entry.tunnel_id,
                         node_id)


def pod_attachments(pod: JSON) -> dict[str, PodAttachment]:
    """NAD key → attachment, from the pod's annotation (unchecked).

    :raises PermanentError: the annotation is malformed (reported on the pod).
    """
    return {nad_key: attachment_of(pod, nad_key, entry)
            for nad_key, entry in pod_entries(pod).items()}


class ZoneController:
    def __init__(self, informers: InformerFactory, config: Config, host: PluginHost,
                 nb: NbWriter, recorder: EventRecorder | None = None) -> None:
        """:raises ConfigError: the default network's topology is not enabled."""
        self.config = config
        self.zone_name = config.zone  # empty: the single zone, every node is its own
        self.host = host
        host.default_topology()
        self.nb = nb
        self.recorder = recorder
        self.nads = informers.get(NADS, indexers={"network": nad_network_name,
                                                  "primary-namespace": primary_nad_namespace})
        self.nodes = informers.get(NODES)
        self.pods = informers.get(PODS, indexers={"nad": pod_nad_keys, "ip": pod_ip_keys})
        self.rendered: dict[str, NetworkState] = {}
        # network → the NADs its definition was last taken from (the cluster manager's
        # accepted ones): a NAD naming the network but not among them is not part of it
        self._accepted: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()
        self._reported: dict[str, str] = {}
        # Pod IPs rendered per network: network → IP → pod key, and pod key → network →
        # its IPs there; both guarded by _claims_lock.
        self._claims_lock = threading.Lock()
        self._holders: dict[str, dict[str, str]] = {}
        self._claimed: dict[str, dict[str, tuple[str, ...]]] = {}
        self._refused: dict[str, dict[str, str]] = {}  # pod key → NAD key → event message
        # pod key → the reason of the event saying its ports cannot be written (NB
        # unreachable), until they are
        self._unwritten: dict[str, str] = {}
        # pod key → NAD key → (reason, message) of the features' errors last reported
        self._feature_errors: dict[str, dict[str, tuple[str, str]]] = {}
        self.network_controller = Controller("zone-network-controller", self.reconcile_network,
                                             initial_sync=self.sync_networks,
                                             on_error=self._network_error)
        self.network_controller.watch(self.nads, key_func=nad_network_name)
        self.network_controller.watch(self.nodes, key_func=lambda _node: ())
        self.nodes.add_handler(self._node_changed)
        # node → the facts its last event carried (what the handler compares a change to)
        self._node_facts: dict[str, NodeFacts] = {}
        # each node's facts, read again only when an annotation they come from changes
        self._facts = ParsedByVersion(read_node, annotations_version(*NODE_FACT_ANNOTATIONS))
        # Pods' and services' ports go out together while a transaction is in flight: a
        # worker waiting for the writer joins the next transaction instead of waiting for
        # its own round trip.
        self.commit = GroupCommit(nb)
        self.pod_controller = Controller("zone-pod-controller", self.reconcile_pod,
                                         workers=POD_WORKERS,
                                         initial_sync=self.sync_pods,
                                         on_error=self._pod_error)
        self.pod_controller.watch(self.pods, primary=True)
        self._stop = threading.Event()
        self._resync_thread: threading.Thread | None = None
        self.network_listeners: list[Callable[[str], None]] = []
        # told the network's name each time its rows changed (nodes came or went, say)
        self.render_listeners: list[Callable[[str], None]] = []
        nb.on_drift = self._repair
        # told what NB supports once that changed (OVN upgraded or downgraded under the zone)
        self.capability_listeners: list[Callable[[NbCapabilities], None]] = []
        nb.on_capabilities_changed = self._capabilities_changed
        # where each network is active (every node, unless a plugin filters nodes per
        # network: hook ovnk_network_activity); a change re-renders the network
        self.activity = host.network_activity(informers)
        self.activity.add_listener(lambda network, _node: self.network_controller.queue.add(
            network))
        self.services = ServicesController(informers, self, nb, recorder, commit=self.commit)
        self.render_listeners.append(self.services.network_rendered)
        self.network_listeners.append(self.services.network_rendered)
        # upstream's address set of the default services UDN pods may use
        self.udn_enabled_services = UdnEnabledServices(
            informers, nb, config.udn_allowed_default_services, config.ip_families) \
            if config.enable_network_segmentation else None
        # the other zones' chassis in this zone's Southbound (interconnect only)
        self.remote_chassis = RemoteChassisController(
            self.nodes, self._facts.get, self.zone_name, config.sb_address) \
            if self.zone_name else None

    def rendered_network(self, name: str) -> NetworkState | None:
        """The network as last rendered (``None``: not rendered, or removed)."""
        with self._lock:
            return self.rendered.get(name)

    def _tell_listeners(self, network: str) -> None:
        for listener in list(self.network_listeners):
            listener(network)

    # -- names ---------------------------------------------------------------------------
    def network_names(self) -> list[str]:
        """The default network and every network some NAD names (from the NAD index)."""
        return sorted({DEFAULT_NETWORK_NAME, *self.nads.index_values("network")})

    def network_of_nad(self, nad_key: str) -> str | None:
        """The network a NAD belongs to; ``None`` for a NAD that names a network whose
        definition comes from other NADs (one the cluster manager did not accept)."""
        if nad_key == DEFAULT_NETWORK_NAME:
            return DEFAULT_NETWORK_NAME
        nad = self.nads.peek(nad_key)
        names = nad_network_name(nad) if nad is not None else []
        if not names:
            return None
        with self._lock:
            accepted = self._accepted.get(names[0])
        return None if accepted is not None and nad_key not in accepted else names[0]

    def _node_changed(self, event: str, old: JSON | None, new: JSON | None) -> None:
        """The networks a node change touches are reconciled: all of them when a node comes,
        goes or changes its ID, chassis or gateway; only those whose subnet on it changed
        otherwise (not on status heartbeats)."""
        node = new or old
        if node is None:
            return
        name = node["metadata"]["name"]
        facts = self._facts.get(new) if new is not None else None
        with self._lock:
            before = self._node_facts.get(name)
            if facts is None:
                self._node_facts.pop(name, None)
            else:
                self._node_facts[name] = facts
        if facts is None:
            self._facts.forget(name)
        if before == facts:
            return
        if self.zone_name and (before is None or facts is None or
                               (before.zone, before.zone_problem) !=
                               (facts.zone, facts.zone_problem)):
            self.pod_controller.reconcile_all()  # its pods came into the zone or left it
        affected = networks_affected(before, facts)
        for network in self.network_names() if affected is None else sorted(affected):
            self.network_controller.queue.add(network)

    def _capabilities_changed(self, capabilities: NbCapabilities) -> None:
        """NB supports other things now (another OVN under the zone): every network and pod
        is rendered again for it (rows that stay the same are not written), and the
        features are told."""
        log.info("zone: rendering every network and pod again for %s",
                 capabilities.describe())
        for name in self.network_names():
            self.network_controller.queue.add(name)
        self.pod_controller.reconcile_all()
        for listener in list(self.capability_listeners):
            listener(capabilities)

    # -- startup ---------------------------------------------------------------------------
    def sync_networks(self) -> None:
        """Enqueue every live network and every network that still owns rows in NB; remove
        the rows of features that are not enabled any more.  Every node found rendered in
        a network is reported to the network activity (kept for its grace period)."""
        self.pods.wait_for_sync(self.config.informer_sync_timeout)
        self.activity.start()
        for controller in self.nb.owner_controllers():
            network = owners.network_of_controller(controller)
            if network is None:
                continue
            for owner in self.nb.owners(controller=controller):
                node_name = owners.scope_node(owner)
                if node_name is not None:
                    self.activity.assume_active(network, node_name)
        names = set(self.network_names())
        for controller in self.nb.owner_controllers():
            network = owners.network_of_controller(controller)
            if network is not None:
                names.add(network)
        disabled: dict[str, set[Owner]] = {}
        for owner in self.nb.owners_with_key_prefix(FEATURE_OWNER_PREFIX) | {
                owner for controller in self.nb.owner_controllers()
                if feature_of_controller(controller) is not None
                for owner in self.nb.owners(controller=controller)}:
            feature = feature_of_owner(owner)
            if feature is not None and feature not in self.host.features:
                disabled.setdefault(feature, set()).add(owner)
        for feature, found in sorted(disabled.items()):
            apply_many(self.nb, {owner: [] for owner in found})
            log.info("feature %s is not enabled: removed its rows (%d owner(s))",
                     feature, len(found))
        for name in sorted(names):
            self.network_controller.queue.add(name)

    def sync_pods(self) -> None:
        """Enqueue pods that own ports in NB (some may be gone); live pods come from the
        informer."""
        for key in self.nb.owner_keys():
            pod = owners.pod_of_scope(key)
            if pod is not None:
                self.pod_controller.queue.add(pod)

    def resync_nb(self) -> set[Owner]:
        """Read the owned rows of NB again; the networks and pods whose rows were changed
        by someone else are reconciled again (``_repair``).  Returns those owners."""
        return self.nb.resync()

    def _repair(self, changed: set[Owner]) -> None:
        """Enqueue the networks and pods owning rows another writer changed."""
        for owner in changed:
            if self.udn_enabled_services is not None and \
                    self.udn_enabled_services.repair(owner):
                continue
            network = owners.network_of_controller(owner.controller)
            if network is None or is_feature_key(owner.key):
                continue  # a feature's rows: its own controllers repair them
            if self.services.repair(owner):
                continue
            pod = owners.scope_pod(owner)
            if pod is not None:
                self.pod_controller.queue.add(pod)
            else:
                self.network_controller.queue.add(network)
        log.warning("OVN Northbound: rows of %d owner(s) were changed by another writer; "
                    "repairing", len(changed))

    def _resync_loop(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self.resync_nb()
            except Exception as exc:  # the next period tries again; writes retry by themselves
                log.error("OVN Northbound resync failed: %s", exc)

    # -- networks --------------------------------------------------------------------------
    def topology_of(self, state: NetworkState) -> Topology | None:
        """The topology rendering ``state`` (``None``: not enabled, or not rendering)."""
        try:
            topology = self.host.topology(state.netinfo.topology)
        except TopologyNotSupported as exc:  # reported on the network by the cluster manager
            self._note(f"network/{state.netinfo.name}", f"network {state.netinfo.name}: {exc}")
            return None
        return topology if topology.renders else None

    def primary_network_of_namespace(self, namespace: str) -> str | None:
        """The rendered primary network of a namespace's NADs (``None``: it has none)."""
        for nad in self.nads.peek_by_index("primary-namespace", namespace):
            network = self.network_of_nad(object_key(nad))
            state = self.rendered_network(network) if network is not None else None
            if state is not None and state.netinfo.is_primary:
                return network
        return None

    def namespaces_of_network(self, network: str) -> list[str]:
        """The namespaces of the NADs that make up ``network``."""
        return sorted({nad["metadata"]["namespace"]
                       for nad in self.nads.peek_by_index("network", network)})

    def reconcile_network(self, name: str) -> None:
        nads = self.nads.by_index("network", name)
        lookup = lookup_network(name, nads, self.config, self.host)
        if lookup.status == GONE:
            self.delete_network(name)
            self._set_accepted(name, None)
            return
        if lookup.status == UNRENDERED:
            self._set_accepted(name, lookup.nads)
            self._note(f"network/{name}", f"network {name} is not rendered: {lookup.reason}")
            self.delete_network(name)  # its ID stays the network's: the cluster manager's
            return
        if lookup.status != READY or lookup.state is None:
            self._note(f"network/{name}", f"network {name} not rendered yet: {lookup.reason}")
            return
        self._set_accepted(name, lookup.nads)
        state = dataclasses.replace(lookup.state, nb=self.nb.capabilities,
                                    interconnect=bool(self.zone_name))
        topology = self.topology_of(state)
        if topology is None:
            self._note(f"network/{name}", f"network {name}: topology "
                       f"{state.netinfo.topology} does not render into OVN Northbound")
            # Nothing of the network is rendered now: rows an earlier definition rendered
            # (a NAD edited from a rendering topology to this one, say) must not stay behind.
            self.delete_network(name)
            return
        netinfo = state.netinfo
        controller = owners.controller_name(name)
        try:
            # One transaction: the network's rows, every node's rows, and the removal of
            # nodes that are gone.
            desired = {owners.network_owner(netinfo): topology.build_network(state)}
            live_nodes = set()
            attachments: list[ServiceAttachment] = []
            with_services = carries_services(topology, netinfo)
            for node in self.nodes.peek_all():
                if not self.activity.is_active(name, node["metadata"]["name"]):
                    continue  # its rows of the network go (below)
                local = self._is_local(node)
                if local is None or (not local and not topology.interconnect):
                    continue  # in no zone, or a remote node this topology does not render
                node_state = self._node_state(node, name, remote=not local)
                live_nodes.add(node_state.name)
                desired[owners.node_owner(netinfo, node_state.name)] = \
                    topology.build_node(state, node_state)
                attachment = topology.service_attachment(state, node_state) \
                    if with_services and local else None
                if attachment is not None:
                    attachments.append(attachment)
        except RenderingNotSupported:
            return
        if with_services:  # the load balancer groups, held by the switches and routers
            desired[owners.network_owner(netinfo)] += service_rows.group_rows(netinfo)
            desired = {owner: service_rows.with_groups(rows, netinfo, attachments)
                       for owner, rows in desired.items()}
        for owner in self.nb.owners(controller=controller):
            node_name = owners.scope_node(owner)
            if node_name is not None and node_name not in live_nodes:
                desired[owner] = []
        try:
            changed = apply_many(self.nb, desired).changed
        except NbConnectError as exc:  # waits for NB (retried at once when it is back)
            raise NotReady(f"network {name}: {exc}", backoff=True) from None
        except MissingReference as exc:
            raise NotReady(f"network {name}: {exc}") from None
        except UnstorableValue as exc:  # those owners alone were not written
            self._report_unstorable(exc, lookup.nads)
            if owners.network_owner(netinfo) in exc.problems:
                return  # nothing of it renders until its definition changes
            if exc.not_ready:
                raise NotReady(f"network {name!a}: {exc.not_ready}") from None
            changed = exc.result.changed
        with self._lock:
            previous = self.rendered.get(name)
            self.rendered[name] = state
        self._reported.pop(f"network/{name}", None)
        if previous != state:
            self._tell_listeners(name)
        if changed or previous != state:
            for listener in list(self.render_listeners):
                listener(name)
            log.info("network %s: rendered (%d node(s))", name, len(live_nodes))
            for nad_key in (lookup.nads or (DEFAULT_NETWORK_NAME,)):
                for pod in self.pods.by_index("nad", nad_key):
                    self.pod_controller.queue.add(object_key(pod))

    def _set_accepted(self, network: str, nads: tuple[str, ...] | None) -> None:
        """Record the NADs ``network`` is defined by; the pods of NADs that joined or left
        it are reconciled again (their ports appear or go)."""
        with self._lock:
            before = self._accepted.get(network, ())
            if nads is None:
                self._accepted.pop(network, None)
            else:
                self._accepted[network] = nads
        for nad_key in set(before).symmetric_difference(nads or ()):
            for pod_key in self.pods.keys_by_index("nad", nad_key):
                self.pod_controller.queue.add(pod_key)

    def node_switches(self, network: str) -> list[NodeSwitch]:
        """The switches of the network's nodes in this zone, with their management
        addresses (``zone.node_switches``); none while the network is not rendered."""
        state = self.rendered_network(network)
        topology = self.topology_of(state) if state is not None else None
        if state is None or topology is None:
            return []
        return node_switches(topology, state, self.node_states(network))

    def node_states(self, network: str) -> list[NodeState]:
        """Every node the network is active on, as it sees it (for per-node work of other
        controllers)."""
        return [self._node_state(node, network) for node in self.nodes.peek_all()
                if self.activity.is_active(network, node["metadata"]["name"])
                and self._is_local(node)]

    def _node_state(self, node: JSON, network: str, remote: bool = False) -> NodeState:
        facts = self._facts.get(node)
        problems = facts.problems + (facts.interconnect_problems if self.zone_name else [])
        if problems:
            self._warn(node, f"node/{facts.name}", "InvalidNodeAnnotation",
                       f"node {facts.name}: " + "; ".join(problems))
        return NodeState(name=facts.name, subnets=facts.subnets.get(network, ()),
                         node_id=facts.node_id, chassis_id=facts.chassis_id,
                         gateway=facts.gateway, transit_addresses=facts.transit_addresses,
                         remote=remote)

    def _is_local(self, node: JSON) -> bool | None:
        """Whether the node is this zone's own (``False``: another zone's); ``None`` for a
        node in no zone (its zone annotation is missing or bad: a Warning event on it).
        Every node is the single zone's own."""
        if not self.zone_name:
            return True
        facts = self._facts.get(node)
        if facts.zone is None:
            self._warn(node, f"node-zone/{facts.name}", "InvalidNodeAnnotation",
                       f"node {facts.name} is not rendered in any zone: {facts.zone_problem}")
            return None
        self._reported.pop(f"node-zone/{facts.name}", None)
        return facts.zone == self.zone_name

    def _pod_in_zone(self, pod: JSON) -> bool:
        """Whether the pod's node is this zone's own (always, in the single zone)."""
        if not self.zone_name:
            return True
        node = self.nodes.peek((pod.get("spec") or {}).get("nodeName") or "")
        return node is not None and self._facts.get(node).zone == self.zone_name

    def delete_network(self, name: str) -> None:
        """Remove every row of the network's controller: pods, then nodes, then the network."""
        controller = owners.controller_name(name)
        # a feature's rows may name this controller (to match upstream's): never ours to delete
        found = {owner for owner in self.nb.owners(controller=controller)
                 if not is_feature_key(owner.key)}
        pods = [o for o in found if owners.scope_pod(o) is not None]
        nodes = [o for o in found if owners.scope_node(o) is not None]
        rest = [o for o in found if o not in pods and o not in nodes]
        # load balancer groups read back from NB have no owner until claimed (a network
        # removed while the zone was down): the network owner takes them, to delete them
        network = owners.network_owner_of(name)
        for lb_group in service_names.LB_GROUPS:
            if self.nb.claim("Load_Balancer_Group", service_names.group_name(name, lb_group),
                             network) and network not in rest:
                rest.append(network)
        for group in (pods, nodes, rest):
            if group:
                apply_many(self.nb, {owner: [] for owner in group})
        with self._lock:
            was_rendered = self.rendered.pop(name, None) is not None
        with self._claims_lock:
            self._holders.pop(name, None)
        if was_rendered:
            self._tell_listeners(name)
        if found:
            log.info("network %s: removed (%d owner(s))", name, len(found))

    # -- pods ------------------------------------------------------------------------------
    def reconcile_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        wanted: dict[Owner, list[DesiredRow]] = {}
        keep: set[str] = set()  # controllers whose rows of this pod stay as they are
        claimed: set[str] = set()  # networks whose IPs the pod now holds
        refused: dict[str, str] = {}
        waiting: list[str] = []
        feature_errors: dict[str, tuple[str, str]] = {}  # NAD key → (reason, message)
        present = set(self.nb.owners(owner_key=f"{owners.POD_SCOPE_PREFIX}{key}"))
        if pod is not None and self._pod_is_running(pod) and self._pod_in_zone(pod):
            context = self._pod_context(pod)
            for nad_key, entry in pod_entries(pod).items():
                network = self.network_of_nad(nad_key)
                if network is None:
                    continue
                with self._lock:
                    state = self.rendered.get(network)
                if state is None:
                    keep.add(owners.controller_name(network))  # not rendered (yet)
                    continue
                topology = self.topology_of(state)
                if topology is None:
                    continue
                netinfo = state.netinfo
                node_subnets = self._node_subnets(context.node, network)
                if uses_node_subnets(netinfo) and not node_subnets:
                    # The node's subnet is not known (yet): nor is its switch rendered.
                    keep.add(owners.controller_name(network))
                    waiting.append(f"node {context.node} has no subnet in network {network} "
                                   "yet")
                    continue
                node_id = self._node_id(context.node)
                if netinfo.needs.node_gateway and node_id is None:
                    # the pod's way out is its node's gateway, addressed by the node's ID
                    keep.add(owners.controller_name(network))
                    waiting.append(f"node {context.node} has no node ID yet")
                    continue
                attachment = attachment_of(pod, nad_key, entry, node_id)
                rows: list[DesiredRow] = []
                problems = attachment_checks.check_attachment(
                    self.config, context, nad_key, entry, netinfo, node_subnets, topology)
                if not problems:
                    rows = topology.build_pod(state, attachment)
                    problems = self._claim(key, state, topology, attachment, rows)
                if problems:
                    refused[nad_key] = attachment_checks.refusal_message(
                        context, nad_key, network, problems)
                    continue
                owner = owners.pod_owner(netinfo, attachment.namespace, attachment.name)
                merged = merge_pod_port(self.host.hook, pod, attachment, netinfo, owner, rows)
                if merged.failure or (merged.errors and owner not in present):
                    # a plugin's bug, or unusable input for a port not written yet: as upstream,
                    # the port waits (what NB holds stays) and the pod is retried
                    keep.add(owner.controller)
                    feature_errors[nad_key] = (ERROR_ADDING, merged.failure or "; ".join(
                        merged.errors))
                    continue
                if merged.errors:
                    feature_errors[nad_key] = (ERROR_UPDATING, "; ".join(merged.errors))
                claimed.add(network)
                wanted[owner] = merged.rows
        elif pod is not None and self.zone_name and self._pod_is_running(pod):
            wanted.update(self._remote_pod_rows(pod, keep))
        self._release(key, keep=claimed | {owners.network_of_controller(c) or ""
                                           for c in keep})
        self._report_refused(pod, key, refused)
        self._report_feature_errors(pod, key, feature_errors)
        namespace, name = split_key(key)
        for owner in present:
            if owners.network_of_controller(owner.controller) is None:
                continue  # not a network's rows (a feature's): never the zone's to remove
            if owner not in wanted and owner.controller not in keep:
                wanted[owner] = []
        if wanted:
            try:
                self.commit.apply(wanted)
            except NbConnectError as exc:  # waits for NB (retried at once when it is back)
                self._report_unwritten(pod, key, wanted, present, exc)
                raise NotReady(f"pod {namespace}/{name}: {exc}", backoff=True) from None
            except MissingReference as exc:
                raise NotReady(f"pod {namespace}/{name}: {exc}", delay=1.0,
                               backoff=True) from None
            except UnstorableValue as exc:  # those owners alone were not written
                self._report_unstorable(exc, ())
                if exc.not_ready:
                    raise NotReady(f"pod {namespace}/{name}: {exc.not_ready}", delay=1.0,
                                   backoff=True) from None
        self._unwritten.pop(key, None)
        if waiting:
            raise NotReady(f"pod {namespace}/{name}: " + "; ".join(waiting), backoff=True)
        if feature_errors:
            raise TemporaryError(f"pod {namespace}/{name}: " + "; ".join(
                message for _reason, message in feature_errors.values()))

    def _remote_pod_rows(self, pod: JSON, keep: set[str]) -> dict[Owner, list[DesiredRow]]:
        """A pod on another zone's node (interconnect): the rows of its attachments to
        networks whose topology renders remote pods (``Topology.renders_remote_pods``);
        ``keep`` gets the controllers of networks not rendered yet.  Nothing for a pod whose
        node is in no zone, or whose annotation is malformed (its own zone says why)."""
        node = self.nodes.peek((pod.get("spec") or {}).get("nodeName") or "")
        if node is None or self._facts.get(node).zone is None:
            return {}
        try:
            entries = pod_entries(pod)
        except PermanentError:
            return {}
        wanted: dict[Owner, list[DesiredRow]] = {}
        for nad_key, entry in entries.items():
            network = self.network_of_nad(nad_key)
            if network is None:
                continue
            with self._lock:
                state = self.rendered.get(network)
            if state is None:
                keep.add(owners.controller_name(network))  # not rendered (yet)
                continue
            topology = self.topology_of(state)
            if topology is None or not topology.renders_remote_pods:
                continue
            attachment = attachment_of(pod, nad_key, entry, self._facts.get(node).node_id)
            owner = owners.pod_owner(state.netinfo, attachment.namespace, attachment.name)
            wanted[owner] = topology.build_remote_pod(state, attachment)
        return wanted

    def _pod_context(self, pod: JSON) -> PodContext:
        meta, spec = pod["metadata"], pod.get("spec") or {}
        namespace = meta["namespace"]
        try:
            requested = tuple(requested_networks(pod))
        except PermanentError:  # a malformed selection requests nothing
            requested = ()
        primary = []
        for nad in self.nads.peek_by_index("primary-namespace", namespace):
            nad_key = object_key(nad)
            network = self.network_of_nad(nad_key)
            with self._lock:
                state = self.rendered.get(network) if network else None
            if state is not None and state.netinfo.is_primary:
                primary.append(nad_key)
        return PodContext(namespace, meta["name"], spec.get("nodeName") or "",
                          host_network=bool(spec.get("hostNetwork")), requested=requested,
                          primary_nads=tuple(primary))

    def _node_id(self, node_name: str) -> int | None:
        node = self.nodes.peek(node_name)
        return self._facts.get(node).node_id if node is not None else None

    def _node_subnets(self, node_name: str, network: str) -> tuple[IPNetwork, ...]:
        node = self.nodes.peek(node_name)
        return self._facts.get(node).subnets.get(network, ()) if node is not None else ()

    # -- who holds a pod IP on a network ------------------------------------------------------
    def _claim(self, key: str, state: NetworkState, topology: Topology,
               attachment: PodAttachment, rows: list[DesiredRow]) -> list[str]:
        """Record that pod ``key`` holds the attachment's IPs on its network, unless another
        pod holds one of them; returns the conflicts."""
        network = state.netinfo.name
        ips = tuple(str(ip) for ip in attachment.addresses)
        with self._claims_lock:
            holders = self._holders.setdefault(network, {})
            problems = []
            for ip in ips:
                others = self._claimants(key, network, ip, attachment.nad_key)
                if not others:
                    continue
                in_nb = [other for other, theirs in others.items()
                         if self.nb.holds(topology.build_pod(state, theirs))]
                if self.nb.holds(rows):
                    in_nb.append(key)
                holder = attachment_checks.choose_holder(key, holders.get(ip),
                                                         {key, *others}, in_nb)
                if holder != key:
                    problems.append(attachment_checks.conflict_problem(ip, network, holder))
            if problems:
                return problems
            mine = self._claimed.setdefault(key, {})
            for ip in mine.get(network, ()):
                if ip not in ips and holders.get(ip) == key:
                    del holders[ip]
            for ip in ips:
                holders[ip] = key
            mine[network] = ips
        return []

    def _claimants(self, key: str, network: str, ip: str, nad_key: str
                   ) -> dict[str, PodAttachment]:
        """The other live pods whose entry for ``network`` has ``ip`` (pod key → its
        attachment there), found through the pods' IP index."""
        found: dict[str, PodAttachment] = {}
        with self._lock:
            accepted = self._accepted.get(network)
        nads = accepted if accepted is not None else self.nads.keys_by_index("network", network)
        for other_nad in sorted({nad_key, *nads}):
            for other in self.pods.peek_by_index("ip", nad_ip_key(other_nad, ip)):
                other_key = object_key(other)
                if other_key == key or not self._pod_is_running(other) \
                        or not self._pod_in_zone(other):
                    continue
                try:
                    entry = pod_entries(other).get(other_nad)
                except PermanentError:
                    continue
                if entry is not None:
                    found[other_key] = attachment_of(other, other_nad, entry)
        return found

    def _release(self, key: str, keep: set[str]) -> None:
        """Forget the IPs pod ``key`` held on every network but ``keep``."""
        with self._claims_lock:
            mine = self._claimed.get(key)
            if mine is None:
                return
            for network in [n for n in mine if n not in keep]:
                holders = self._holders.get(network, {})
                for ip in mine.pop(network):
                    if holders.get(ip) == key:
                        del holders[ip]
            if not mine:
                del self._claimed[key]

    def _report_refused(self, pod: JSON | None, key: str, refused: dict[str, str]) -> None:
        """A Warning event per newly refused entry (once per distinct message)."""
        if not refused:
            self._refused.pop(key, None)
            return
        assert pod is not None
        previous = self._refused.get(key, {})
        reported = self._refused[key] = {k: v for k, v in previous.items() if refused.get(k) == v}
        for nad_key, message in refused.items():
            if previous.get(nad_key) == message:
                continue
            log.warning("%s", message)
            if self.recorder is not None:
                self.recorder.event(pod, WARNING, attachment_checks.REASON, message)
            reported[nad_key] = message

    def _report_unwritten(self, pod: JSON | None, key: str,
                          wanted: dict[Owner, list[DesiredRow]], present: set[Owner],
                          error: NbConnectError) -> None:
        """A Warning event on a pod whose ports cannot be written because NB cannot be
        reached — once until they are written, not on every retry.  The reason is
        upstream's for a pod whose add (update, delete) failed."""
        if pod is None or key in self._unwritten:
            return
        if any(rows and owner not in present for owner, rows in wanted.items()):
            reason, what = ERROR_ADDING, "add"
        elif any(wanted.values()):
            reason, what = ERROR_UPDATING, "update"
        else:
            reason, what = ERROR_DELETING, "delete"
        self._unwritten[key] = reason
        message = f"failed to {what} the logical ports of pod {key}: {error}"
        log.warning("%s", message)
        if self.recorder is not None:
            self.recorder.event(pod, WARNING, reason, message)

    def _report_feature_errors(self, pod: JSON | None, key: str,
                               errors: dict[str, tuple[str, str]]) -> None:
        """A Warning event (``ErrorAddingResource``/``ErrorUpdatingResource``) per new
        feature error on the pod's ports, once per distinct message."""
        if not errors:
            self._feature_errors.pop(key, None)
            return
        assert pod is not None
        previous = self._feature_errors.get(key, {})
        self._feature_errors[key] = dict(errors)
        for nad_key, (reason, message) in errors.items():
            if previous.get(nad_key) == (reason, message):
                continue
            log.warning("pod %s, %s: %s", key, nad_key, message)
            if self.recorder is not None:
                self.recorder.event(pod, WARNING, reason, message)

    @staticmethod
    def _pod_is_running(pod: JSON) -> bool:
        return bool((pod.get("spec") or {}).get("nodeName")) and \
            (pod.get("status") or {}).get("phase") not in TERMINAL_PHASES

    # -- reporting -------------------------------------------------------------------------
    def _note(self, key: str, message: str) -> None:
        if self._reported.get(key) != message:
            self._reported[key] = message
            log.info("%s", message)

    def _warn(self, obj: JSON, key: str, reason: str, message: str) -> None:
        if self._reported.get(key) == message:
            return
        self._reported[key] = message
        log.warning("%s", message)
        if self.recorder is not None:
            self.recorder.event(obj, WARNING, reason, message)

    def _report_unstorable(self, exc: UnstorableValue, nads: Iterable[str]) -> None:
        """A Warning event on the object each refused owner renders: the pod, the node (its
        values come from its annotations), or the network's NADs (its name and config)."""
        for owner, problem in exc.problems.items():
            pod_key, node = owners.scope_pod(owner), owners.scope_node(owner)
            if pod_key is not None:
                found = [self.pods.peek(pod_key)]
                reason, what = attachment_checks.REASON, f"pod {pod_key}"
            elif node is not None:
                found = [self.nodes.peek(node)]
                reason, what = "InvalidNodeAnnotation", f"node {node}"
            else:
                found = [self.nads.peek(key) for key in nads]
                network = owners.network_of_controller(owner.controller) or owner.controller
                reason, what = "InvalidNetworkConfig", f"network {network!a}"
            message = f"{what}: cannot be written to OVN Northbound: {problem}"
            for obj in found:
                if obj is not None:
                    self._warn(obj, f"nb/{owner}/{object_key(obj)}", reason, message)

    def _network_error(self, key: str, error: BaseException, kind: str) -> None:
        log.error("network %s: %s (%s)", key, error, kind)

    def _pod_error(self, key: str, error: BaseException, kind: str) -> None:
        pod = self.pods.get(key)
        reason = error.reason if isinstance(error, PermanentError) else "ErrorReconcilingPod"
        if pod is not None:
            self._warn(pod, f"pod/{key}", reason, f"pod {key}: {error}")

    # -- lifecycle -------------------------------------------------------------------------
    def controllers(self) -> Iterable[Controller]:
        extra: tuple[Controller, ...] = (self.udn_enabled_services.controller,) \
            if self.udn_enabled_services is not None else ()
        if self.remote_chassis is not None:
            extra += (self.remote_chassis.controller,)
        return (self.network_controller, self.pod_controller, self.services.controller,
                *extra)

    def start(self) -> None:
        self.network_controller.start()
        self.pod_controller.start()
        self.services.start()
        if self.udn_enabled_services is not None:
            self.udn_enabled_services.start()
        if self.remote_chassis is not None:
            self.remote_chassis.start()
        interval = self.config.nb_resync_interval
        if interval > 0:
            self._stop.clear()
            self._resync_thread = threading.Thread(target=self._resync_loop, args=(interval,),
                                                   name="nb-resync", daemon=True)
            self._resync_thread.start()

    def stop(self) -> None:
        self.activity.stop()
        self._stop.set()
        if self.remote_chassis is not None:
            self.remote_chassis.stop()
        if self._resync_thread is not None:
            self._resync_thread.join(timeout=10)
            self._resync_thread = None
        if self.udn_enabled_services is not None:
            self.udn_enabled_services.stop()
        self.services.stop()
        self.pod_controller.stop()
        self.network_controller.stop()
