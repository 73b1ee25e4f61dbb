"""Pod IPAM: every scheduled pod gets its ``k8s.ovn.org/pod-networks`` annotation.

For each pod the controller works out its networks — the default network
(role ``primary``, or ``infrastructure-locked`` when the namespace has a
primary user-defined network), the namespace's primary UDN, and secondary
networks named in ``k8s.v1.cni.cncf.io/networks`` (``network_selections``:
a selection ovnk cannot honour is a Warning event ``ErrorAllocatingPod``) —
allocates one address
per subnet family from the node's slice (networks with per-node subnets,
``NetworkNeeds.node_subnets``) or the network's shared subnet (cluster-wide
IPAM), and writes the annotation once.  Existing
entries are never rewritten with other IPs; addresses go back to the pool
when the pod is deleted or completes.  After a restart the allocators are
rebuilt from the annotations before any new allocation, so no address is
ever handed out twice: nothing is allocated before the network catalog is
synced (every existing network registered) and every live pod's addresses
are read; an entry whose network the registry does not describe yet is held
aside and reserved before that network's first allocation.  A pod whose
namespace is not in the cache yet waits (its primary network depends on it).

A pod in a namespace labelled for a primary network that does not exist yet
is held: a Warning event ``ErrorReconcilingPod`` and a retry with a growing
delay that never gives up, until the UDN appears.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections.abc import Callable
from typing import Any

from ovnk_core.allocators.ids import IdAllocationError, IdAllocator
from ovnk_core.allocators.ips import IpAllocationError, IpAllocator
from ovnk_core.annotations import pod_networks
from ovnk_core.annotations.node_subnets import NODE_SUBNETS_ANNOTATION, parse_node_subnets
from ovnk_core.clustermanager.claim_holdings import ClaimHoldings
from ovnk_core.clustermanager.ipam_claims import Claim, ClaimError, IpamClaims
from ovnk_core.clustermanager.network_catalog import NetworkCatalog, wait_for_networks
from ovnk_core.config import Config
from ovnk_core.errors import NotReady, PermanentError
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.informer import index_by_namespace, index_by_node
from ovnk_core.kube.parsed_cache import ParsedByVersion, annotations_version
from ovnk_core.kube.resources import NADS, NAMESPACES, NODES, PODS, object_key, split_key
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME, NetInfo
from ovnk_core.networks.registry import NetworkRegistry
from ovnk_core.pods import annotation, network_selections
from ovnk_core.pods.ip_pools import excluded_subnets, uses_node_subnets
from ovnk_core.pods.ipam_claim_refs import claim_reference
from ovnk_core.topology import Topology
from ovnk_core.udn.controller import invalid_primary_network_message
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

log = logging.getLogger(__name__)

NETWORKS_ANNOTATION = network_selections.NETWORKS_ANNOTATION
MAX_POD_TUNNEL_ID = pod_networks.MAX_POD_TUNNEL_ID
PLATFORM_TUNNEL_IDS = range(1, 10)
"""Pod tunnel IDs kept for platform ports (upstream ``reserved-platform-port-<i>``): new
pods start at 10; a pod that already holds one keeps it."""
Interface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


def unannotated_pod_node(pod: JSON) -> list[str]:
    """Index: the node of a pod that has no ``k8s.ovn.org/pod-networks`` yet."""
    if (pod["metadata"].get("annotations") or {}).get(pod_networks.POD_NETWORKS_ANNOTATION):
        return []
    return index_by_node(pod)


class PodAllocator:
    def __init__(self, client: KubeClient, informers: InformerFactory, config: Config,
                 registry: NetworkRegistry, recorder: EventRecorder,
                 catalog: NetworkCatalog, topologies: Callable[[str], Topology]) -> None:
        """``topologies`` gives the topology plugin of a network's ``topology`` name (its
        ``pod_routing`` makes the entry's gateway and routes)."""
        self.client = client
        self.topologies = topologies
        self.config = config
        self.registry = registry
        self.recorder = recorder
        self.catalog = catalog
        self.pods = informers.get(PODS, indexers={"namespace": index_by_namespace,
                                                  "node": index_by_node,
                                                  "unannotated-node": unannotated_pod_node})
        self.namespaces = informers.get(NAMESPACES)
        self.nodes = informers.get(NODES)
        self.nads = informers.get(NADS)  # the NADs pods select
        self.ips: dict[str, IpAllocator] = {}
        self.tunnel_ids: dict[str, IdAllocator] = {}
        self.held: dict[str, list[tuple[str, str]]] = {}  # pod key → (allocator, owner)
        self.held_tunnels: dict[str, list[tuple[str, str]]] = {}  # pod key → (network, owner)
        self.platform_ids_reserved: set[str] = set()  # networks whose IDs 1-9 are set aside
        # persistent IPs: the claims, and the addresses they hold in self.ips
        self.claims = IpamClaims(client, informers, self.release_claim) \
            if config.enable_persistent_ips else None
        self.holdings = ClaimHoldings(self.claims, self._pool, self.ips.get)
        # entries of live pods whose network was not known when they were read:
        # NAD key → pod key → entry, reserved before that network's first allocation
        self.unresolved: dict[str, dict[str, pod_networks.PodNetwork]] = {}
        self._lock = threading.RLock()  # reservations, allocations and releases
        self.controller = Controller("cluster-manager-pod-allocator", self.reconcile,
                                     initial_sync=self.sync, workers=2)
        self.controller.watch(self.pods, primary=True)
        self.controller.watch(self.nodes, key_func=self._pods_on_node)
        # each node's subnets, parsed once per version of the Node (an entry per network)
        self._node_subnets = ParsedByVersion(parse_node_subnets,
                                             annotations_version(NODE_SUBNETS_ANNOTATION))
        self.nodes.add_handler(self._node_event)
        self.controller.watch(self.namespaces, key_func=self._pods_in_namespace)

    def _node_event(self, event: str, old: JSON | None, new: JSON | None) -> None:
        if new is None and old is not None:
            self._node_subnets.forget(object_key(old))

    def _pods_on_node(self, node: JSON) -> list[str]:
        """The pods of a node still waiting for their addresses (a node's new subnet may be
        what they wait for)."""
        return self.pods.keys_by_index("unannotated-node", node["metadata"]["name"])

    def _pods_in_namespace(self, namespace: JSON) -> list[str]:
        return self.pods.keys_by_index("namespace", namespace["metadata"]["name"])

    def networks_changed(self) -> None:
        self.controller.reconcile_all()

    # -- allocators --------------------------------------------------------------------------
    def _pool(self, network: str, netinfo: NetInfo | None, subnet: Any
              ) -> tuple[str, IpAllocator]:
        """(key, allocator) of a subnet of a network (made on first use, without what its
        pods never get)."""
        key = f"{network}|{subnet}"
        allocator = self.ips.get(key)
        if allocator is None:
            allocator = self.ips[key] = IpAllocator(subnet, excluded_subnets(netinfo, subnet))
        return key, allocator

    def _tunnel_allocator(self, network: str) -> IdAllocator:
        return self.tunnel_ids.setdefault(network, IdAllocator(
            f"TunnelIDs-{network}", MAX_POD_TUNNEL_ID))

    def _allocate_tunnel_id(self, network: str, owner: str) -> int:
        """A new pod's tunnel ID; the first allocation of a network reserves the platform
        IDs that no live pod holds (every existing entry was reserved before: at sync, or
        when its network became known)."""
        allocator = self._tunnel_allocator(network)
        if network not in self.platform_ids_reserved:
            for value in PLATFORM_TUNNEL_IDS:
                if allocator.owner_of(value) is None:
                    allocator.reserve(f"reserved-platform-port-{value}", value)
            self.platform_ids_reserved.add(network)
        return allocator.allocate(owner)

    def sync(self) -> None:
        """Reserve every address already annotated on a live pod (once every network that
        existed at startup is registered)."""
        wait_for_networks(self.catalog, "pod allocator")
        for key in self.pods.list_keys():
            pod = self.pods.peek(key)
            if pod is None:
                continue
            try:
                existing = pod_networks.parse((pod["metadata"].get("annotations") or {}).get(
                    pod_networks.POD_NETWORKS_ANNOTATION))
            except pod_networks.PodAnnotationError as exc:
                log.warning("pod %s: %s", key, exc)
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            for nad_key, entry in existing.items():
                self._reserve(key, nad_key, entry)
        if self.unresolved:
            log.warning("pod allocator: addresses on NADs not (yet) describing a known network "
                        "are held aside until it is: %s", ", ".join(sorted(self.unresolved)))

    def _network_for(self, nad_key: str) -> tuple[str, NetInfo | None]:
        if nad_key == "default":
            return DEFAULT_NETWORK_NAME, None
        network = self.registry.network_of_nad(nad_key)
        entry = self.registry.get(network) if network else None
        if network is None or entry is None:
            raise NotReady(f"NAD {nad_key} is not a known network (yet)", backoff=True)
        return network, entry.netinfo

    def _reserve(self, pod_key: str, nad_key: str, entry: pod_networks.PodNetwork) -> None:
        with self._lock:
            try:
                network, netinfo = self._network_for(nad_key)
            except NotReady:
                self.unresolved.setdefault(nad_key, {})[pod_key] = entry
                return
            owner = f"{pod_key}|{nad_key}"
            claim = self._existing_claim(pod_key, nad_key, entry, network, netinfo)
            for text in entry.ip_addresses:
                interface = ipaddress.ip_interface(text)
                try:
                    if claim is not None:  # the claim holds them, not the pod
                        self.holdings.hold(claim, network, netinfo, interface)
                        self.holdings.note_pod(pod_key, claim)
                        continue
                    key, allocator = self._pool(network, netinfo, interface.network)
                    allocator.reserve(owner, interface.ip)
                    self.held.setdefault(pod_key, []).append((key, owner))
                except (IpAllocationError, ClaimError) as exc:
                    log.warning("pod %s: %s", pod_key, exc)
            if entry.tunnel_id is not None:
                try:
                    self._tunnel_allocator(network).reserve(owner, entry.tunnel_id)
                    self.held_tunnels.setdefault(pod_key, []).append((network, owner))
                except IdAllocationError as exc:
                    log.warning("pod %s: %s", pod_key, exc)

    def _existing_claim(self, pod_key: str, nad_key: str, entry: pod_networks.PodNetwork,
                        network: str, netinfo: NetInfo | None) -> str | None:
        """The owner of the IPAMClaim that holds a live pod's addresses on this network (at
        startup), or ``None`` when the pod holds them itself."""
        pod = self.pods.peek(pod_key)
        if pod is None or not self._keeps_ips(netinfo):
            return None
        try:
            _, claim = self._named_claim(pod, nad_key, entry.role == "primary", network)
        except (network_selections.NetworkSelectionError, ClaimError):
            return None
        return claim.owner if claim is not None else None

    def _resolve_unresolved(self, network: str) -> None:
        """Reserve the held-aside entries of ``network``'s NADs (before it allocates)."""
        for nad_key in self.registry.nads_of(network):
            for pod_key, entry in (self.unresolved.pop(nad_key, None) or {}).items():
                self._reserve(pod_key, nad_key, entry)

    def _release(self, pod_key: str) -> None:
        with self._lock:
            for key, owner in self.held.pop(pod_key, []):
                allocator = self.ips.get(key)
                if allocator is not None:
                    allocator.release(owner)
            for network, owner in self.held_tunnels.pop(pod_key, []):
                self._tunnel_allocator(network).release(owner)
            for waiting in self.unresolved.values():
                waiting.pop(pod_key, None)
            for owner in self.holdings.gone_claims_of(pod_key):
                # the claim keeps its addresses; one that is gone gives them back (upstream)
                self.release_claim(owner)

    # -- one pod -----------------------------------------------------------------------------
    def reconcile(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self._release(key)
            return
        spec = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        if spec.get("hostNetwork") or not node_name or pod["metadata"].get("deletionTimestamp"):
            return
        namespace, _ = split_key(key)
        assert namespace is not None
        try:
            existing = pod_networks.parse((pod["metadata"].get("annotations") or {}).get(
                pod_networks.POD_NETWORKS_ANNOTATION))
        except pod_networks.PodAnnotationError as exc:
            self.recorder.event(pod, WARNING, "ErrorReconcilingPod", str(exc))
            raise PermanentError(f"pod {key}: {exc}") from None
        ns = self.namespaces.peek(namespace)
        if ns is None:  # its primary network depends on the namespace's labels
            raise NotReady(f"pod {key}: namespace {namespace} is not known yet")
        labelled = PRIMARY_NAMESPACE_LABEL in (ns["metadata"].get("labels") or {})
        primary = self.registry.primary_nad_for_namespace(namespace)
        if labelled and primary is None:
            message = invalid_primary_network_message(namespace)
            self.recorder.event(pod, WARNING, "ErrorReconcilingPod", message)
            raise NotReady(f"pod {key}: {message}", backoff=True)
        node = self.nodes.peek(node_name)
        node_subnets = self._node_subnets.get(node) if node else {}
        wanted: dict[str, pod_networks.PodNetwork] = {}
        plan = [("default", "infrastructure-locked" if primary else "primary")]
        if primary:
            plan.append((primary, "primary"))
        plan += [(nad_key, "secondary") for nad_key in self._secondary_nads(pod, primary)]
        for nad_key, role in plan:
            if nad_key in existing:
                continue
            wanted[nad_key] = self._allocate(key, nad_key, role, node_name, node_subnets,
                                             pod)
        if not wanted:
            return
        merged = pod_networks.merge(existing, wanted)
        meta = pod["metadata"]
        try:
            # through pods/status, as upstream: the role needs no write access to pod specs
            self.client.patch_status(PODS, meta["name"], {"metadata": {
                "annotations": {
                    pod_networks.POD_NETWORKS_ANNOTATION: pod_networks.serialize(merged)},
                "resourceVersion": meta.get("resourceVersion")}}, namespace)
        except NotFound:
            self._release(key)
            return
        except Conflict:
            for nad_key in wanted:  # give the addresses back; the next attempt redoes it
                self._release_owner(key, nad_key)
            raise NotReady(f"pod {key} changed meanwhile", delay=0.1) from None
        log.info("pod %s: networks %s", key, ", ".join(
            f"{k}={','.join(v.ip_addresses)}" for k, v in wanted.items()))

    def _release_owner(self, pod_key: str, nad_key: str) -> None:
        owner = f"{pod_key}|{nad_key}"
        with self._lock:
            kept = []
            for key, held_owner in self.held.get(pod_key, []):
                if held_owner == owner and key in self.ips:
                    self.ips[key].release(owner)
                else:
                    kept.append((key, held_owner))
            self.held[pod_key] = kept
            tunnels = []
            for network, held_owner in self.held_tunnels.get(pod_key, []):
                if held_owner == owner:
                    self._tunnel_allocator(network).release(owner)
                else:
                    tunnels.append((network, held_owner))
            self.held_tunnels[pod_key] = tunnels

    def _allocate(self, pod_key: str, nad_key: str, role: str, node: str,
                  node_subnets: dict[str, list[str]], pod: JSON | None = None
                  ) -> pod_networks.PodNetwork:
        network, netinfo = self._network_for(nad_key)
        if uses_node_subnets(netinfo):
            texts = node_subnets.get(network)
            if not texts:
                raise NotReady(f"pod {pod_key}: node {node} has no subnet of network {network} "
                               "yet", backoff=True)
            subnets = [ipaddress.ip_network(text, strict=False) for text in texts]
        else:
            assert netinfo is not None
            subnets = [s.cidr for s in netinfo.subnets]
        owner = f"{pod_key}|{nad_key}"
        claim = self._claim_of(pod, nad_key, role, network, netinfo) if pod else None
        interfaces: list[Interface] = []
        tunnel_id = None
        claim_error: ClaimError | None = None
        full: IpAllocationError | None = None
        with self._lock:
            self._resolve_unresolved(network)
            self.holdings.reserve_network(network, netinfo)
            if claim is not None:
                try:
                    interfaces = self.holdings.addresses(pod_key, claim, network, netinfo,
                                                         subnets)
                except ClaimError as exc:
                    claim_error = exc
                    if not claim.ips:
                        self.holdings.release(claim.owner)
            for subnet in subnets if claim is None else ():
                key, allocator = self._pool(network, netinfo, subnet)
                try:
                    address = allocator.allocate(owner)
                except IpAllocationError as exc:
                    self._release_owner(pod_key, nad_key)
                    full = exc
                    break
                self.held.setdefault(pod_key, []).append((key, owner))
                interfaces.append(ipaddress.ip_interface(f"{address}/{subnet.prefixlen}"))
            if netinfo is not None and netinfo.needs.pod_tunnel_ids and claim_error is None \
                    and full is None:
                tunnel_id = self._allocate_tunnel_id(network, owner)
                self.held_tunnels.setdefault(pod_key, []).append((network, owner))
        if full is not None:  # events are written outside the allocator lock
            if pod is not None:
                self.recorder.event(pod, WARNING, network_selections.REASON,
                                    f"failed to allocate an address on network {network}: "
                                    f"{full}")
            raise NotReady(f"pod {pod_key}: {full}", backoff=True)
        if claim_error is not None and claim is not None and pod is not None:
            if not claim.ips and self.claims is not None:  # never wipe a claim's IPs
                self.claims.record(claim, "", None, claim_error.reason, str(claim_error))
            self.recorder.event(pod, WARNING, network_selections.REASON, str(claim_error))
            raise NotReady(f"pod {pod_key}: {claim_error}", backoff=True)
        if claim is not None and self.claims is not None and pod is not None:
            try:
                self.claims.record(claim, pod["metadata"]["name"], [str(i) for i in interfaces])
            except ClaimError as exc:
                self._release_owner(pod_key, nad_key)
                self.recorder.event(pod, WARNING, network_selections.REASON, str(exc))
                raise NotReady(f"pod {pod_key}: {exc}", backoff=True) from None
        topology = None if netinfo is None else self.topologies(netinfo.topology)
        return annotation.build_pod_network(self.config, netinfo, role, interfaces, tunnel_id,
                                            topology, mac="" if interfaces else
                                            annotation.random_mac())

    # -- persistent IPs ------------------------------------------------------------------------
    def _keeps_ips(self, netinfo: NetInfo | None) -> bool:
        return self.claims is not None and netinfo is not None and netinfo.allow_persistent_ips

    def _named_claim(self, pod: JSON, nad_key: str, primary: bool, network: str,
                     look: bool = True) -> tuple[str, Claim | None]:
        """(the IPAMClaim the pod names for this network, "" for none; that claim when
        ``look`` and it exists).

        :raises NetworkSelectionError: the annotation naming it cannot be read.
        :raises ClaimError: the claim cannot be read, or is for another network.
        """
        name = claim_reference(pod, nad_key, primary=primary)
        if not name or not look or self.claims is None:
            return name, None
        namespace = pod["metadata"]["namespace"]
        claim = self.claims.find(namespace, name)
        if claim is not None and claim.network != network:
            raise ClaimError(f"IPAMClaim {namespace}/{name} is for network "
                             f"{claim.network!a}, not {network}")
        return name, claim

    def _claim_of(self, pod: JSON, nad_key: str, role: str, network: str,
                  netinfo: NetInfo | None) -> Claim | None:
        """The IPAMClaim that holds the pod's addresses on this network, or ``None``: the pod
        names none, or the network does not keep IPs (a reference there is only logged).

        :raises NotReady: the claim does not exist (yet), or is unusable (Warning event).
        """
        pod_key = object_key(pod)
        keeps = self._keeps_ips(netinfo)
        try:
            name, claim = self._named_claim(pod, nad_key, role == "primary", network, keeps)
        except network_selections.NetworkSelectionError as exc:
            self.recorder.event(pod, WARNING, exc.reason, str(exc))
            raise
        except ClaimError as exc:
            self.recorder.event(pod, WARNING, network_selections.REASON, str(exc))
            raise NotReady(f"pod {pod_key}: {exc}", backoff=True) from None
        if not name:
            return None
        if not keeps:
            log.info("pod %s: IPAMClaim %s ignored: network %s does not keep persistent IPs",
                     pod_key, name, network)
            return None
        if claim is None:
            namespace = pod["metadata"]["namespace"]
            message = f'failed to get IPAMClaim {namespace}/{name}: ipamclaims "{name}" not found'
            self.recorder.event(pod, WARNING, network_selections.REASON, message)
            raise NotReady(f"pod {pod_key}: {message}", backoff=True)
        return claim

    def release_claim(self, owner: str) -> None:
        """Free a claim's addresses (the claim is gone)."""
        with self._lock:
            self.holdings.release(owner)
        log.info("%s: addresses released", owner)

    def _secondary_nads(self, pod: JSON, primary: str | None) -> list[str]:
        """The OVN-Kubernetes NADs the pod selects; what cannot be honoured is a Warning
        event ``ErrorAllocatingPod`` on the pod (a missing NAD is waited for)."""
        try:
            return network_selections.secondary_nads(pod, primary, self.nads.peek)
        except network_selections.NetworkSelectionError as exc:
            self.recorder.event(pod, WARNING, exc.reason, str(exc))
            raise
        except network_selections.MissingNad as exc:
            self.recorder.event(pod, WARNING, network_selections.REASON, str(exc))
            raise NotReady(f"pod {object_key(pod)}: {exc}", backoff=True) from None

    def start(self) -> None:
        if self.claims is not None:
            self.claims.start()
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        if self.claims is not None:
            self.claims.stop()
