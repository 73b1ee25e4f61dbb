"""The zone controller: converges OVN Northbound to the networks, nodes and pods of the zone.

Two level-driven controllers share the zone's informers:

* the **network controller** (key: network name) renders a network's own rows
  and the rows of every node in it, through the network's topology plugin,
  and removes the rows of nodes that are gone.  A network whose last NAD is
  gone loses every row its controller owns (pods, nodes, network).  NAD
  changes enqueue their network; node changes enqueue every network.
* the **pod controller** (key: ``ns/name``) renders one port per network in
  the pod's ``k8s.ovn.org/pod-networks`` annotation and removes the ports of
  networks the pod left, or of a pod that is gone or completed.

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
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable

from ovnk_core.clustermanager.nad_controller import nad_network_name
from ovnk_core.config import Config
from ovnk_core.errors import NotReady, PermanentError, TopologyNotSupported
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import NADS, NODES, PODS, object_key, split_key
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME
from ovnk_core.ovn.declarative import DesiredRow, MissingReference, apply_many
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.pods import annotation
from ovnk_core.topology import RenderingNotSupported, Topology
from ovnk_core.zone import owners
from ovnk_core.zone.model import NetworkState, NodeState, PodAttachment
from ovnk_core.zone.networks import GONE, READY, lookup_network
from ovnk_core.zone.node_facts import read_node

log = logging.getLogger(__name__)

TERMINAL_PHASES = ("Succeeded", "Failed")


def pod_nad_keys(pod: JSON) -> list[str]:
    """Index: the NAD keys (``default`` or ``ns/nad``) of a pod's annotated networks."""
    raw = (pod["metadata"].get("annotations") or {}).get(annotation.ANNOTATION)
    try:
        return sorted(annotation.parse(raw))
    except annotation.PodAnnotationError:
        return []


def pod_attachments(pod: JSON) -> dict[str, PodAttachment]:
    """NAD key → attachment, from the pod's annotation.

    :raises PermanentError: the annotation is malformed (reported on the pod).
    """
    meta = pod["metadata"]
    try:
        entries = annotation.parse((meta.get("annotations") or {}).get(annotation.ANNOTATION))
    except annotation.PodAnnotationError as exc:
        raise PermanentError(str(exc), reason="ErrorReconcilingPod") from None
    node = (pod.get("spec") or {}).get("nodeName") or ""
    result = {}
    for nad_key, entry in entries.items():
        if not entry.mac_address or not entry.ip_addresses:
            continue
        result[nad_key] = PodAttachment(meta["namespace"], meta["name"], meta.get("uid", ""),
                                        node, nad_key, entry.mac_address, entry.ip_addresses,
                                        entry.role)
    return result


class ZoneController:
    def __init__(self, informers: InformerFactory, config: Config, host: PluginHost,
                 nb: NbWriter, recorder: EventRecorder | None = None) -> None:
        self.config = config
        self.host = host
        self.nb = nb
        self.recorder = recorder
        self.nads = informers.get(NADS, indexers={"network": nad_network_name})
        self.nodes = informers.get(NODES)
        self.pods = informers.get(PODS, indexers={"nad": pod_nad_keys})
        self.rendered: dict[str, NetworkState] = {}
        self._lock = threading.Lock()
        self._reported: dict[str, str] = {}
        self.network_controller = Controller("zone-network-controller", self.reconcile_network,
                                             initial_sync=self.sync_networks,
                                             on_error=self._network_error)
        self.network_controller.watch(self.nads, key_func=nad_network_name)
        self.network_controller.watch(self.nodes, key_func=lambda _node: ())
        self.nodes.add_handler(self._node_changed)
        self._node_facts: dict[str, object] = {}
        self.pod_controller = Controller("zone-pod-controller", self.reconcile_pod, workers=2,
                                         initial_sync=self.sync_pods,
                                         on_error=self._pod_error)
        self.pod_controller.watch(self.pods, primary=True)
        self._stop = threading.Event()
        self._resync_thread: threading.Thread | None = None
        nb.on_drift = self._repair

    # -- names ---------------------------------------------------------------------------
    def network_names(self) -> list[str]:
        names = {DEFAULT_NETWORK_NAME}
        for nad in self.nads.items():
            names.update(nad_network_name(nad))
        return sorted(names)

    def network_of_nad(self, nad_key: str) -> str | None:
        if nad_key == DEFAULT_NETWORK_NAME:
            return DEFAULT_NETWORK_NAME
        nad = self.nads.get(nad_key)
        names = nad_network_name(nad) if nad is not None else []
        return names[0] if names else None

    def _node_changed(self, event: str, old: JSON | None, new: JSON | None) -> None:
        """Every network is reconciled when a node comes, goes, or changes what it tells us
        (not on status heartbeats)."""
        node = new or old
        if node is None:
            return
        name = node["metadata"]["name"]
        facts = read_node(new) if new is not None else None
        with self._lock:
            if self._node_facts.get(name) == facts and new is not None:
                return
            if facts is None:
                self._node_facts.pop(name, None)
            else:
                self._node_facts[name] = facts
        for network in self.network_names():
            self.network_controller.queue.add(network)

    # -- startup ---------------------------------------------------------------------------
    def sync_networks(self) -> None:
        """Enqueue every live network and every network that still owns rows in NB."""
        names = set(self.network_names())
        for controller in self.nb.owner_controllers():
            network = owners.network_of_controller(controller)
            if network is not None:
                names.add(network)
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
            pod = owners.scope_pod(owner)
            if pod is not None:
                self.pod_controller.queue.add(pod)
                continue
            network = owners.network_of_controller(owner.controller)
            if network is not None:
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
    def _topology(self, state: NetworkState) -> Topology | None:
        try:
            topology = self.host.topology(state.netinfo.topology)
        except TopologyNotSupported as exc:  # reported on the network by the cluster manager
            self._note(f"network/{state.netinfo.name}", f"network {state.netinfo.name}: {exc}")
            return None
        return topology if topology.renders else None

    def reconcile_network(self, name: str) -> None:
        nads = self.nads.by_index("network", name)
        lookup = lookup_network(name, nads, self.config, self.host)
        if lookup.status == GONE:
            self.delete_network(name)
            return
        if lookup.status != READY or lookup.state is None:
            self._note(f"network/{name}", f"network {name} not rendered yet: {lookup.reason}")
            return
        state = lookup.state
        topology = self._topology(state)
        if topology is None:
            self._note(f"network/{name}", f"network {name}: topology "
                       f"{state.netinfo.topology} does not render into OVN Northbound")
            return
        netinfo = state.netinfo
        controller = owners.controller_name(name)
        try:
            # One transaction: the network's rows, every node's rows, and the removal of
            # nodes that are gone.
            desired = {owners.network_owner(netinfo): topology.build_network(state)}
            live_nodes = set()
            for node in self.nodes.items():
                node_state = self._node_state(node, name)
                live_nodes.add(node_state.name)
                desired[owners.node_owner(netinfo, node_state.name)] = \
                    topology.build_node(state, node_state)
        except RenderingNotSupported:
            return
        for owner in self.nb.owners(controller=controller):
            node_name = owners.scope_node(owner)
            if node_name is not None and node_name not in live_nodes:
                desired[owner] = []
        try:
            changed = apply_many(self.nb, desired).changed
        except MissingReference as exc:
            raise NotReady(f"network {name}: {exc}") from None
        with self._lock:
            previous = self.rendered.get(name)
            self.rendered[name] = state
        self._reported.pop(f"network/{name}", None)
        if changed or previous != state:
            log.info("network %s: rendered (%d node(s))", name, len(live_nodes))
            for nad_key in (lookup.nads or (DEFAULT_NETWORK_NAME,)):
                for pod in self.pods.by_index("nad", nad_key):
                    self.pod_controller.queue.add(object_key(pod))

    def _node_state(self, node: JSON, network: str) -> NodeState:
        facts = read_node(node)
        if facts.problems:
            self._warn(node, f"node/{facts.name}", "InvalidNodeAnnotation",
                       f"node {facts.name}: " + "; ".join(facts.problems))
        return NodeState(name=facts.name, subnets=facts.subnets.get(network, ()),
                         node_id=facts.node_id, chassis_id=facts.chassis_id,
                         gateway=facts.gateway)

    def delete_network(self, name: str) -> None:
        """Remove every row of the network's controller: pods, then nodes, then the network."""
        controller = owners.controller_name(name)
        found = self.nb.owners(controller=controller)
        pods = [o for o in found if owners.scope_pod(o) is not None]
        nodes = [o for o in found if owners.scope_node(o) is not None]
        rest = [o for o in found if o not in pods and o not in nodes]
        for group in (pods, nodes, rest):
            if group:
                apply_many(self.nb, {owner: [] for owner in group})
        with self._lock:
            self.rendered.pop(name, None)
        if found:
            log.info("network %s: removed (%d owner(s))", name, len(found))

    # -- pods ------------------------------------------------------------------------------
    def reconcile_pod(self, key: str) -> None:
        pod = self.pods.get(key)
        wanted: dict[Owner, list[DesiredRow]] = {}
        keep: set[str] = set()  # controllers whose rows of this pod stay as they are
        if pod is not None and self._pod_is_running(pod):
            for nad_key, attachment in pod_attachments(pod).items():
                network = self.network_of_nad(nad_key)
                if network is None:
                    continue
                with self._lock:
                    state = self.rendered.get(network)
                if state is None:
                    keep.add(owners.controller_name(network))  # not rendered (yet)
                    continue
                topology = self._topology(state)
                if topology is None:
                    continue
                wanted[owners.pod_owner(state.netinfo, attachment.namespace,
                                        attachment.name)] = topology.build_pod(state, attachment)
        namespace, name = split_key(key)
        for owner in self.nb.owners(owner_key=f"{owners.POD_SCOPE_PREFIX}{key}"):
            if owner not in wanted and owner.controller not in keep:
                wanted[owner] = []
        if not wanted:
            return
        try:
            apply_many(self.nb, wanted)
        except MissingReference as exc:
            raise NotReady(f"pod {namespace}/{name}: {exc}", delay=1.0, backoff=True) from None

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

    def _network_error(self, key: str, error: BaseException, kind: str) -> None:
        log.error("network %s: %s (%s)", key, error, kind)

    def _pod_error(self, key: str, error: BaseException, kind: str) -> None:
        pod = self.pods.get(key)
        reason = error.reason if isinstance(error, PermanentError) else "ErrorReconcilingPod"
        if pod is not None:
            self._warn(pod, f"pod/{key}", reason, f"pod {key}: {error}")

    # -- lifecycle -------------------------------------------------------------------------
    def controllers(self) -> Iterable[Controller]:
        return (self.network_controller, self.pod_controller)

    def start(self) -> None:
        self.network_controller.start()
        self.pod_controller.start()
        interval = self.config.nb_resync_interval
        if interval > 0:
            self._stop.clear()
            self._resync_thread = threading.Thread(target=self._resync_loop, args=(interval,),
                                                   name="nb-resync", daemon=True)
            self._resync_thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._resync_thread is not None:
            self._resync_thread.join(timeout=10)
            self._resync_thread = None
        self.pod_controller.stop()
        self.network_controller.stop()
