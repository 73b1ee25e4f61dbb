"""Which of a pod's ``k8s.ovn.org/pod-networks`` entries the node plumbs: those the zone
renders, and no other.

The zone controller checks every entry before it renders the entry's logical port
(``zone.attachment_checks``: a network the pod may use, addresses in this node's subnet and
not reserved, the network's gateways and routes, a unicast MAC) and renders none for an
entry it refuses.  Plumbed anyway, such an entry waits forever for ovn-controller's binding,
and one for a NAD that does not exist takes the real primary network's interface name
(``ovn-udn1``).  So at CNI ADD the node agent runs the zone's own checks on the same inputs,
read from its own caches: the NAD the entry names (as the cluster manager accepted it:
carrying the network's ID), this node's subnets, the cluster configuration.  An entry the
zone refuses refuses the ADD, with the zone's words (the kubelet reports them as
``FailedCreatePodSandBox``), before anything is plumbed; an entry whose network has no
subnet on this node yet is waited for.  A NAD missing from the cache, or not accepted there,
is read again from the API server before the ADD is refused (the cache may lag behind the
cluster manager, which accepted the NAD before it allocated the pod's addresses).

Before the zone's checks, an entry is refused when no enabled plugin renders its network
(``networks.rendering``), and when its topology cannot attach it on this node
(``Topology.node_attachment_problem``: a physical network the node does not map), which is
also said once on the Node (``UNATTACHABLE_REASON``).

What the node cannot see, it does not check: two pods claiming one IP on one network are
told apart by the zone alone, which sees every pod (``attachment_checks.choose_holder``);
the entry it refuses for that gets no port, and the ADD keeps waiting for ``ovn-installed``
as for any port the zone has not rendered.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from ovnk_core.annotations import pod_networks
from ovnk_core.annotations.network_id import accepted_id
from ovnk_core.annotations.node_subnets import parse_node_subnets
from ovnk_core.config import Config
from ovnk_core.config.values import IPNetwork
from ovnk_core.errors import NetworkConfigError
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import NADS, NODES, object_key, split_key
from ovnk_core.networks.nad_config import nad_network_name, primary_nad_namespace
from ovnk_core.networks.netconf import parse_common
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.port_names import DEFAULT_NAD_KEY
from ovnk_core.networks.rendering import rendering_problem
from ovnk_core.node.bridge_mappings import OvsHost
from ovnk_core.node.pod_network import PodInterface
from ovnk_core.pods.ip_pools import uses_node_subnets
from ovnk_core.pods.network_selections import NetworkSelectionError, requested_networks
from ovnk_core.topology import Topology
from ovnk_core.zone.attachment_checks import PodContext, check_attachment, refusal_message
from ovnk_core.zone.networks import default_network

UNATTACHABLE_REASON = "NetworkNotAttachable"
PRIMARY_NAMESPACE_INDEX = "primary-namespace"


@dataclass(frozen=True)
class Verdict:
    """Why the ADD must be refused (``refused``) or wait (``waiting``); both empty: go."""

    refused: tuple[str, ...] = ()
    waiting: tuple[str, ...] = ()


class PodAttachmentChecks:
    """The zone's checks of a pod's entries, run by the node agent at CNI ADD.

    :param topologies: the enabled topology plugins.
    :param config: the cluster configuration; without it, only the rendering and
        node-attachment problems and the NADs' existence and acceptance are checked.
    :param recorder: says on the Node why a network cannot be attached here, once per
        network and reason.
    """

    def __init__(self, client: KubeClient, node: str, informers: InformerFactory,
                 topologies: Mapping[str, Topology], host: OvsHost,
                 config: Config | None = None, recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.node = node
        self.topologies = topologies
        self.host = host
        self.config = config
        self.recorder = recorder
        self.nads = informers.get(NADS, indexers={PRIMARY_NAMESPACE_INDEX:
                                                  primary_nad_namespace})
        self.nodes = informers.get(NODES, field_selector=f"metadata.name={node}")
        self._reported: set[tuple[str, str]] = set()  # (network, problem) on the Node

    def verdict(self, pod: JSON, interfaces: list[PodInterface]) -> Verdict:
        """Whether the pod's ``interfaces`` (``pod_network.build_pod_interfaces``) may be
        plumbed: every refusal and every wait, in the interfaces' order."""
        key = object_key(pod)
        entries = pod_networks.parse(
            (pod["metadata"].get("annotations") or {}).get(pod_networks.POD_NETWORKS_ANNOTATION))
        context = self._context(pod)
        refused, waiting = [], []
        for interface in interfaces:
            problem, wait = self._entry(key, context, interface, entries[interface.nad_key])
            if problem is not None:
                refused.append(problem)
            elif wait is not None:
                waiting.append(wait)
        return Verdict(tuple(refused), tuple(waiting))

    # -- one entry ---------------------------------------------------------------------------
    def _entry(self, key: str, context: PodContext, interface: PodInterface,
               entry: pod_networks.PodNetwork) -> tuple[str | None, str | None]:
        """``(refusal, wait)`` of one entry (both None: it may be plumbed)."""
        nad_key = interface.nad_key
        if nad_key == DEFAULT_NAD_KEY:
            if self.config is None:
                return None, None
            netinfo = default_network(self.config).netinfo
            topology = self.topologies.get(netinfo.topology)
        else:
            found = self._network_of(key, context, interface)
            if isinstance(found, str):
                return found, None
            netinfo, topology = found
        if self.config is None:
            return None, None
        subnets = self._node_subnets(netinfo.name)
        if uses_node_subnets(netinfo) and not subnets:
            return None, f"node {self.node} has no subnet in network {netinfo.name} yet"
        problems = check_attachment(self.config, context, nad_key, entry, netinfo, subnets,
                                    topology)
        if problems:
            return refusal_message(context, nad_key, netinfo.name, problems), None
        return None, None

    def _network_of(self, key: str, context: PodContext, interface: PodInterface
                    ) -> tuple[NetInfo, Topology] | str:
        """The network of a NAD entry and its topology, or why the entry is refused."""
        nad_key = interface.nad_key
        nad = self._accepted_nad(nad_key)
        if nad is None:
            return refusal_message(context, nad_key, None, [f"NAD {nad_key} does not exist"])
        try:
            conf = parse_common((nad.get("spec") or {}).get("config") or "")
        except NetworkConfigError as exc:
            return refusal_message(context, nad_key, None, [
                f"NAD {nad_key} is not an OVN-Kubernetes network: {exc}"])
        where = f"pod {key}: network {conf.name} (NAD {nad_key})"
        problem = rendering_problem(self.topologies, conf.topology)
        if problem is not None:
            return (f"{where} is not rendered: {problem}; its interface {interface.ifname} "
                    "would never be bound")
        topology = self.topologies[conf.topology]
        try:
            netinfo = topology.parse_netconf(conf)
        except NetworkConfigError as exc:
            return refusal_message(context, nad_key, conf.name, [f"NAD {nad_key}: {exc}"])
        problem = topology.node_attachment_problem(netinfo, self.host)
        if problem is not None:
            self._report_unattachable(conf.name, problem)
            return f"{where} cannot be attached on node {self.node}: {problem}"
        if accepted_id(nad, conf.name) is None:
            return refusal_message(context, nad_key, conf.name, [
                f"NAD {nad_key} is not accepted for network {conf.name} (the cluster manager "
                "wrote no network ID on it)"])
        return netinfo, topology

    def _accepted_nad(self, nad_key: str) -> JSON | None:
        """The NAD: from the cache once the cluster manager's acceptance is there, else as
        the API server has it now (None: it does not exist)."""
        cached = self.nads.peek(nad_key)
        names = nad_network_name(cached)
        if cached is not None and names and accepted_id(cached, names[0]) is not None:
            return cached
        namespace, name = split_key(nad_key)
        try:
            return self.client.get(NADS, name, namespace)
        except NotFound:
            return None

    # -- the pod and the node -----------------------------------------------------------------
    def _context(self, pod: JSON) -> PodContext:
        """What the zone's checks need to know of the pod (``zone.controller`` builds the
        same from its own caches)."""
        meta, spec = pod["metadata"], pod.get("spec") or {}
        namespace = str(meta["namespace"])
        try:
            requested = tuple(requested_networks(pod))
        except NetworkSelectionError:  # a malformed selection requests nothing
            requested = ()
        primary = []
        for nad in self.nads.peek_by_index(PRIMARY_NAMESPACE_INDEX, namespace):
            try:
                conf = parse_common((nad.get("spec") or {}).get("config") or "")
            except NetworkConfigError:
                continue
            if conf.role == "primary" and accepted_id(nad, conf.name) is not None:
                primary.append(object_key(nad))
        return PodContext(namespace, str(meta["name"]), self.node,
                          host_network=bool(spec.get("hostNetwork")), requested=requested,
                          primary_nads=tuple(sorted(primary)))

    def _node_subnets(self, network: str) -> tuple[IPNetwork, ...]:
        node = self.nodes.peek(self.node)
        cidrs = parse_node_subnets(node).get(network, []) if node is not None else []
        found = []
        for cidr in cidrs:
            try:
                found.append(ipaddress.ip_network(cidr))
            except ValueError:
                continue
        return tuple(found)

    def _report_unattachable(self, network: str, problem: str) -> None:
        if self.recorder is None or (network, problem) in self._reported:
            return
        self._reported.add((network, problem))
        node = self.nodes.peek(self.node) or {
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node}}
        self.recorder.event(node, WARNING, UNATTACHABLE_REASON,
                            f"network {network} cannot be attached on this node: {problem}")
