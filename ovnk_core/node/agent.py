"""The node agent (``ovnk node``): the CNI side of the pods bound to one node, and its gateway.

It answers the CNI plugin ``ovn-k8s-cni-overlay`` (``ovnk_cni``; ``POST /cni`` of
``cni_server``): ADD builds the pod's interfaces from its ``k8s.ovn.org/pod-networks``
annotation in the namespace the runtime made (``CNI_NETNS``), plugs them into ``br-int``
and answers the spec result only once ovn-controller has bound every port
(``ovn-installed``), as upstream's CNI does before the kubelet may call the pod ready;
DEL unplugs them and leaves the namespace to the runtime; CHECK compares.  The private
``POST /add`` and ``/del`` (the agent makes the namespace ``pod_netns(key)`` itself)
serve the kubelet stand-in without a runtime.  A pod controller removes the network of
pods that are deleted, finished or moved away even when no DEL comes (the
kubelet was down), and at startup every pod port or namespace on this node
whose pod no longer exists is removed.  Only the entries the zone renders are
plumbed (``pod_attachments``): an entry the zone refuses (a NAD that does not
exist, a multicast MAC, an address outside this node's subnet...), of a network
no enabled plugin renders, or of one this node cannot attach, refuses the ADD at
once with the reason, rather than leave it waiting for a binding that never
comes; two entries never share an interface.  An error of the kernel or OVS
while plumbing is answered with its message and logged in one line.
With a gateway (``gateway.NodeGateway``) it also owns the shared-gateway bridge's
flows, host rules and bridge mapping.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ovnk_cni import spec
from ovnk_core.config import Config
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.informer import Informer
from ovnk_core.kube.resources import PODS, split_key
from ovnk_core.node import pod_network
from ovnk_core.node.bridge_mappings import OvsHost
from ovnk_core.node.cni_server import (
    CniNotReady,
    CniPodUnknown,
    CniRequest,
    CniRequestError,
    CniServer,
)
from ovnk_core.node.gateway import NodeGateway
from ovnk_core.node.management_port import ManagementPorts
from ovnk_core.node.netns import NETNS_DIR, netns_path
from ovnk_core.node.pod_attachments import PodAttachmentChecks
from ovnk_core.pods.network_selections import DEFAULT_INTERFACE
from ovnk_core.topology import Topology

log = logging.getLogger(__name__)


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
                 recorder: EventRecorder | None = None,
                 config: Config | None = None) -> None:
        """:param topologies: the enabled topology plugins; with ``informers``, a pod's
            entries are checked at CNI ADD (``pod_attachments``): of a network none of them
            renders, or one its topology cannot attach on this node, of a NAD that does not
            exist or was not accepted.
        :param config: the cluster configuration; with it, the zone's own checks of each
            entry too.
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
        self.host = OvsHost(vsctl, gateway.physical_network if gateway is not None else None)
        self.attachments = PodAttachmentChecks(client, node, informers, topologies, self.host,
                                               config, recorder) \
            if informers is not None and topologies is not None else None
        self.controller = Controller(f"node-agent-{node}", self.reconcile,
                                     initial_sync=self.sync)
        self.controller.watch(self.pods, primary=True)
        self.cni = CniServer(cni_socket, self.cni_add, self.cni_del, self.cni_spec)
        self.bind_wait = 10.0  # how long a spec ADD waits for ovn-controller
        self._locks: defaultdict[str, threading.Lock] = defaultdict(threading.Lock)

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
                raise CniPodUnknown(f"pod {request.key} does not exist") from None
        if request.uid and pod["metadata"].get("uid") != request.uid:
            raise CniPodUnknown(f"pod {request.key} has UID {pod['metadata'].get('uid')}, "
                                  f"not {request.uid}")
        if (pod.get("spec") or {}).get("nodeName") != self.node:
            raise CniRequestError(f"pod {request.key} is not bound to node {self.node}")
        return pod

    def _pod_interfaces(self, request: CniRequest) -> tuple[JSON, list[pod_network.PodInterface]]:
        """The pod and the interfaces it must have, checked as an ADD needs them."""
        pod = self._current_pod(request)
        try:
            interfaces = pod_network.build_pod_interfaces(pod)
        except pod_network.PodNetworkPending as exc:
            raise CniNotReady(str(exc)) from None
        except pod_network.PodNetworkError as exc:
            raise CniRequestError(f"pod {request.key}: {exc}") from None
        if self.attachments is not None:
            verdict = self.attachments.verdict(pod, interfaces)
            if verdict.refused:
                raise CniRequestError("; ".join(verdict.refused))
            if verdict.waiting:
                raise CniNotReady(f"pod {request.key}: " + "; ".join(verdict.waiting))
        shared = pod_network.shared_interface_problem(interfaces)
        if shared is not None:
            raise CniRequestError(f"pod {request.key}: {shared}")
        return pod, interfaces

    def cni_add(self, request: CniRequest) -> dict[str, Any]:
        pod, interfaces = self._pod_interfaces(request)
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

    def cni_del(self, request: CniRequest) -> dict[str, Any]:
        self.teardown(request.key)
        return {}

    # -- CNI, as the spec's plugin calls it (ovnk_cni) ------------------------------------------
    def cni_spec(self, call: spec.CniCall) -> dict[str, Any] | None:
        """One call of ``ovn-k8s-cni-overlay``: ADD plumbs the namespace the runtime made
        (``CNI_NETNS``) and answers the spec result once ovn-controller bound the ports; DEL
        removes what ADD made and succeeds when it is gone already; CHECK compares; STATUS
        answers that the agent serves; GC removes the ports of sandboxes not in
        ``cni.dev/valid-attachments`` and the network of pods that are gone.  Ports carry the
        sandbox's container ID (``external_ids:sandbox``, as upstream's), so a DEL of an
        old sandbox never unplugs a re-created namesake's."""
        if call.command == "STATUS":
            return None
        if call.command == "GC":
            self._cni_gc(call)
            return None
        request = CniRequest(call.pod_namespace, call.pod_name, call.pod_uid)
        if call.command == "DEL":
            with self._locks[request.key]:
                ports = pod_network.sandbox_ports(self.vsctl).get(call.container_id, [])
                if ports:
                    pod_network.remove_pod_interfaces(ports, self.node_netns, self.vsctl)
                    log.info("pod %s: network of sandbox %s removed (CNI DEL)", request.key,
                             call.container_id)
            return None
        if not netns_path(call.netns).exists():
            raise spec.CniError(spec.INVALID_ENVIRONMENT,
                                "the network namespace in CNI_NETNS does not exist", call.netns)
        pod, interfaces = self._pod_interfaces(request)
        interfaces = [dataclasses.replace(i, ifname=call.ifname)
                      if i.ifname == DEFAULT_INTERFACE else i for i in interfaces]
        if call.command == "CHECK":
            self._cni_check(call, interfaces)
            return None
        with self._locks[request.key]:
            pod_network.ensure_pod_network(call.netns, self.node_netns, interfaces,
                                           request.key, str(pod["metadata"]["uid"]),
                                           self.vsctl, create=False,
                                           sandbox=call.container_id)
        deadline = time.monotonic() + self.bind_wait
        while True:
            bound = pod_network.bound_ports(self.vsctl, interfaces)
            waiting = [ifname for ifname, ready in bound.items() if not ready]
            if not waiting:
                break
            if time.monotonic() >= deadline:
                raise CniNotReady(f"waiting for ovn-controller to bind {', '.join(waiting)} "
                                  f"of pod {request.key} (ovn-installed)")
            time.sleep(0.05)
        log.info("pod %s: network ready in %s (%s)", request.key, call.netns,
                 ", ".join(f"{i.ifname}={','.join(i.addresses)}" for i in interfaces))
        return spec.build_result(call.cni_version, call.netns, [
            spec.ResultInterface(i.ifname, i.mac, i.addresses, i.gateways, i.routes)
            for i in interfaces])

    def _cni_gc(self, call: spec.CniCall) -> None:
        """Remove the ports of every sandbox the runtime no longer lists in
        ``cni.dev/valid-attachments``, and the network of pods that are gone."""
        valid = call.netconf.get("cni.dev/valid-attachments")
        if isinstance(valid, list):
            keep = {str(a.get("containerID")) for a in valid if isinstance(a, dict)}
            for sandbox, ports in pod_network.sandbox_ports(self.vsctl).items():
                if sandbox not in keep:
                    pod_network.remove_pod_interfaces(ports, self.node_netns, self.vsctl)
                    log.info("sandbox %s: network removed (CNI GC)", sandbox)
        self.sync()

    def _cni_check(self, call: spec.CniCall,
                   interfaces: list[pod_network.PodInterface]) -> None:
        problems = pod_network.pod_network_differences(call.netns, interfaces)
        previous = call.netconf.get("prevResult") or {}
        expected = {i.ifname for i in interfaces}
        for entry in previous.get("interfaces") or [] if isinstance(previous, dict) else []:
            name = str((entry or {}).get("name") or "")
            if (entry or {}).get("sandbox") == call.netns and name not in expected:
                problems.append(f"interface {name} of the previous result is not the pod's")
        if problems:
            raise spec.CniError(spec.CHECK_FAILED, "the pod's network is not as ADD left it",
                                "; ".join(problems))

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
