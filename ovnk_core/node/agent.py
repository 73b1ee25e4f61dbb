"""The node agent (``ovnk node``): the CNI side of the pods bound to one node, and its gateway.

It answers the kubelet's CNI ADD and DEL (``cni_server``): ADD builds the
pod's namespace and interfaces from its ``k8s.ovn.org/pod-networks``
annotation, plugs them into ``br-int`` and answers only once ovn-controller
has bound every port (``ovn-installed``), as upstream's CNI does before the
kubelet may call the pod ready.  A pod controller removes the network of
pods that are deleted, finished or moved away even when no DEL comes (the
kubelet was down), and at startup every pod port or namespace on this node
whose pod no longer exists is removed.  A pod attached to a network that no
enabled topology plugin renders into OVN is refused at once, with the reason
(``networks.rendering``), rather than left waiting for a binding that never
comes; so is one whose topology says this node cannot attach it
(``Topology.node_attachment_problem``: a physical network the node does not map).
With a gateway (``gateway.NodeGateway``) it also owns the shared-gateway bridge's
flows, host rules and bridge mapping.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ovnk_core.errors import NetworkConfigError
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.informer import Informer
from ovnk_core.kube.resources import NADS, NODES, PODS, split_key
from ovnk_core.networks.netconf import parse_common
from ovnk_core.networks.port_names import DEFAULT_NAD_KEY
from ovnk_core.networks.rendering import rendering_problem
from ovnk_core.node import pod_network
from ovnk_core.node.bridge_mappings import OvsHost
from ovnk_core.node.cni_server import CniNotReady, CniRequest, CniRequestError, CniServer
from ovnk_core.node.gateway import NodeGateway
from ovnk_core.node.management_port import ManagementPorts
from ovnk_core.node.netns import NETNS_DIR
from ovnk_core.topology import Topology

log = logging.getLogger(__name__)
UNATTACHABLE_REASON = "NetworkNotAttachable"


def pod_is_gone(pod: JSON | None, node: str) -> bool:
    """Deleted, being deleted, finished, or no longer on this node."""
    if pod is None or pod["metadata"].get("deletionTimestamp"):
        return True
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    return bool((pod.get("spec") or {}).get("nodeName") != node)


class NodeAgent:
    """Pod networking of one node: the CNI server and the cleanup controller."""

    def __init__(self, client: KubeClient, node: str, vsctl: pod_network.Vsctl,
                 pod_netns_prefix: str, cni_socket: Path, node_netns: str | None = None,
                 gateway: NodeGateway | None = None,
                 management_ports: ManagementPorts | None = None,
                 informers: InformerFactory | None = None,
                 topologies: Mapping[str, Topology] | None = None,
                 recorder: EventRecorder | None = None) -> None:
        """:param topologies: the enabled topology plugins; with ``informers``, pods of a
            network none of them renders, or one its topology cannot attach on this node
            (``Topology.node_attachment_problem``), are refused at CNI ADD.
        :param recorder: puts the reason a network cannot be attached here on the Node,
            once per network and reason."""
        self.client = client
        self.node = node
        self.node_netns = node_netns
        self.gateway = gateway
        self.management_ports = management_ports
        self.informers = informers
        self.vsctl = vsctl
        self.pod_netns_prefix = pod_netns_prefix
        self.pods = Informer(client, PODS, field_selector=f"spec.nodeName={node}")
        self.topologies = topologies
        self.nads = informers.get(NADS) if informers is not None and topologies is not None \
            else None
        self.controller = Controller(f"node-agent-{node}", self.reconcile,
                                     initial_sync=self.sync)
        self.controller.watch(self.pods, primary=True)
        self.cni = CniServer(cni_socket, self.cni_add, self.cni_del)
        self._locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)
        self.recorder = recorder
        self.host = OvsHost(vsctl, gateway.physical_network if gateway is not None else None)
        self._reported: set[tuple[str, str]] = set()  # (network, problem) on the Node

    def pod_netns(self, key: str) -> str:
        namespace, name = split_key(key)
        return f"{self.pod_netns_prefix}{namespace}.{name}"

    # -- CNI -------------------------------------------------------------------------------
    def _current_pod(self, request: CniRequest) -> JSON:
        pod = self.pods.get(request.key)
        if pod is None or (request.uid and pod["metadata"].get("uid") != request.uid):
            namespace, name = split_key(request.key)
            try:
                pod = self.client.get(PODS, name, namespace)
            except NotFound:
                raise CniRequestError(f"pod {request.key} does not exist") from None
        if request.uid and pod["metadata"].get("uid") != request.uid:
            raise CniRequestError(f"pod {request.key} has UID {pod['metadata'].get('uid')}, "
                                  f"not {request.uid}")
        if (pod.get("spec") or {}).get("nodeName") != self.node:
            raise CniRequestError(f"pod {request.key} is not bound to node {self.node}")
        return pod

    def cni_add(self, request: CniRequest) -> dict[str, Any]:
        pod = self._current_pod(request)
        try:
            interfaces = pod_network.build_pod_interfaces(pod)
        except pod_network.PodNetworkPending as exc:
            raise CniNotReady(str(exc)) from None
        except pod_network.PodNetworkError as exc:
            raise CniRequestError(f"pod {request.key}: {exc}") from None
        self._refuse_unattachable(request.key, interfaces)
        with self._locks[request.key]:
            pod_network.ensure_pod_network(self.pod_netns(request.key), self.node_netns,
                                           interfaces,
                                           request.key, str(pod["metadata"]["uid"]),
                                           self.vsctl)
            bound = pod_network.bound_ports(self.vsctl, interfaces)
        waiting = [ifname for ifname, ready in bound.items() if not ready]
        if waiting:
            raise CniNotReady(f"waiting for ovn-controller to bind {', '.join(waiting)} "
                              f"of pod {request.key} (ovn-installed)")
        log.info("pod %s: network ready in %s (%s)", request.key, self.pod_netns(request.key),
                 ", ".join(f"{i.ifname}={','.join(i.addresses)}" for i in interfaces))
        return {"netns": self.pod_netns(request.key),
                "interfaces": [{"name": i.ifname, "mac": i.mac, "ips": list(i.addresses),
                                "network": i.nad_key} for i in interfaces]}

    def _refuse_unattachable(self, key: str, interfaces: list[pod_network.PodInterface]
                             ) -> None:
        """:raises CniRequestError: a network of the pod is one no enabled plugin renders
            (its port would never be bound), or one its topology cannot attach on this node
            (a network on a physical network this node does not map, say)."""
        if self.nads is None or self.topologies is None:
            return
        for interface in interfaces:
            nad = None if interface.nad_key == DEFAULT_NAD_KEY else \
                self.nads.peek(interface.nad_key)
            if nad is None:
                continue
            try:
                conf = parse_common((nad.get("spec") or {}).get("config") or "")
            except NetworkConfigError:
                continue  # reported on the NAD by the cluster manager
            where = f"pod {key}: network {conf.name} (NAD {interface.nad_key})"
            problem = rendering_problem(self.topologies, conf.topology)
            if problem is not None:
                raise CniRequestError(f"{where} is not rendered: {problem}; its interface "
                                      f"{interface.ifname} would never be bound")
            topology = self.topologies[conf.topology]
            try:
                netinfo = topology.parse_netconf(conf)
            except NetworkConfigError:
                continue  # reported on the NAD by the cluster manager
            problem = topology.node_attachment_problem(netinfo, self.host)
            if problem is not None:
                self._report_unattachable(conf.name, problem)
                raise CniRequestError(f"{where} cannot be attached on node {self.node}: "
                                      f"{problem}")

    def _report_unattachable(self, network: str, problem: str) -> None:
        if self.recorder is None or (network, problem) in self._reported:
            return
        self._reported.add((network, problem))
        try:
            node = self.client.get(NODES, self.node)
        except NotFound:
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.node}}
        self.recorder.event(node, WARNING, UNATTACHABLE_REASON,
                            f"network {network} cannot be attached on this node: {problem}")

    def cni_del(self, request: CniRequest) -> dict[str, Any]:
        self.teardown(request.key)
        return {}

    # -- cleanup ---------------------------------------------------------------------------
    def teardown(self, key: str) -> None:
        with self._locks[key]:
            ports = pod_network.pod_ports(self.vsctl).get(key, [])
            netns = self.pod_netns(key)
            if ports or (NETNS_DIR / netns).exists():
                pod_network.delete_pod_network(netns, ports, self.vsctl)
                log.info("pod %s: network removed", key)

    def reconcile(self, key: str) -> None:
        if pod_is_gone(self.pods.get(key), self.node):
            self.teardown(key)

    def sync(self) -> None:
        """Remove the network of every pod that went away while the agent was not running."""
        live = set(self.pods.list_keys())
        for key in pod_network.pod_ports(self.vsctl):
            if key not in live:
                self.teardown(key)
        if NETNS_DIR.exists():
            for path in NETNS_DIR.iterdir():
                if not path.name.startswith(self.pod_netns_prefix):
                    continue
                namespace, _, name = path.name[len(self.pod_netns_prefix):].partition(".")
                if f"{namespace}/{name}" not in live:
                    self.teardown(f"{namespace}/{name}")

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        if self.informers is not None:
            self.informers.start()
        if self.gateway is not None:
            self.gateway.start()
        if self.management_ports is not None:
            self.management_ports.start()
        self.pods.start()
        self.controller.start()
        self.cni.start()

    def stop(self) -> None:
        self.cni.stop()
        self.controller.stop()
        self.pods.stop()
        if self.management_ports is not None:
            self.management_ports.stop()
        if self.gateway is not None:
            self.gateway.stop()
        if self.informers is not None:
            self.informers.stop()
