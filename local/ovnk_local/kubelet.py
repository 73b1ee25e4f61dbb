"""A kubelet stand-in: reports pods bound to its nodes as running, with their IPs.

A real kubelet starts containers and asks the CNI plugin for the pod's
network; here the network is whatever ovnk wrote into the pod's
``k8s.ovn.org/pod-networks`` annotation — its ``default`` entry, the
network of eth0; pods of a primary UDN still report their default-network
IPs, as upstream does — so a pod becomes Running
with ``status.podIPs`` exactly when ovnk has allocated its addresses — as
upstream's CNI would.  An annotation that cannot wire the pod (one that
``ovnk_core.annotations.pod_networks`` refuses: not JSON, addresses that are
not CIDRs...) is a Warning ``FailedCreatePodSandBox`` on the pod, as a
kubelet reports its CNI plugin's failure, not a retry loop.
Host-network pods get their node's address at once.  Pods marked for
deletion are removed (there are no containers to stop).

When the local cluster runs a real dataplane, each node's agent serves CNI on
``CNI_DIR/<node>.sock``; the kubelet then calls ADD before it reports a pod
running (and keeps retrying while the agent answers "not ready": the ports
are not bound yet), and DEL before it removes a deleted pod, as a kubelet
does through its CNI plugin.
"""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from typing import Any

from ovnk_core.annotations import pod_networks
from ovnk_core.errors import NotReady, PermanentError, TemporaryError
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.conditions import now_rfc3339
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.informer import Informer
from ovnk_core.kube.resources import NODES, PODS, split_key
from ovnk_core.node.cni_server import CniRequest, cni_call

log = logging.getLogger(__name__)



def node_address(node: JSON) -> str | None:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address"))
    return None


class UnusablePodNetworks(ValueError):
    """The pod's ``k8s.ovn.org/pod-networks`` cannot wire eth0 (a CNI plugin would fail)."""


def pod_ips_from_annotation(pod: JSON) -> list[str] | None:
    """IPs the pod's interface (eth0) carries, from ``k8s.ovn.org/pod-networks``.

    ``None`` when the annotation or its ``default`` entry is missing (not wired yet).

    :raises UnusablePodNetworks: it is there but cannot be used (the annotation's contract
        refuses it); waiting would not help.
    """
    raw = (pod.get("metadata", {}).get("annotations") or {}).get(
        pod_networks.POD_NETWORKS_ANNOTATION)
    if not raw:
        return None
    try:
        networks = pod_networks.parse(raw)
    except pod_networks.PodAnnotationError as exc:
        raise UnusablePodNetworks(
            f"{pod_networks.POD_NETWORKS_ANNOTATION} of pod "
            f"{pod['metadata'].get('namespace')}/{pod['metadata'].get('name')} is unusable: "
            f"{exc}") from None
    entry = networks.get("default")
    if entry is None:
        return None
    return [str(ipaddress.ip_interface(address).ip) for address in entry.ip_addresses]


def build_running_status(pod: JSON, ips: list[str], host_ip: str | None, now: str) -> JSON:
    """The status a kubelet reports for a pod whose containers all run."""
    previous = pod.get("status") or {}
    started = previous.get("startTime") or now
    conditions = [{"type": kind, "status": "True", "lastTransitionTime": now}
                  for kind in ("PodScheduled", "Initialized", "ContainersReady", "Ready")]
    old = {c.get("type"): c for c in previous.get("conditions") or []}
    for condition in conditions:
        if old.get(condition["type"], {}).get("status") == "True":
            condition["lastTransitionTime"] = old[condition["type"]].get(
                "lastTransitionTime", now)
    containers = [{"name": c.get("name", "main"), "ready": True, "restartCount": 0,
                   "image": c.get("image", ""), "started": True,
                   "state": {"running": {"startedAt": started}}}
                  for c in (pod.get("spec") or {}).get("containers") or []]
    status: dict[str, Any] = {"phase": "Running", "conditions": conditions,
                              "startTime": started, "containerStatuses": containers}
    if ips:
        status["podIP"] = ips[0]
        status["podIPs"] = [{"ip": ip} for ip in ips]
    if host_ip:
        status["hostIP"] = host_ip
        status["hostIPs"] = [{"ip": host_ip}]
    return status


def _same_status(a: JSON, b: JSON) -> bool:
    def strip(status: JSON) -> JSON:
        return {k: v for k, v in status.items() if k != "conditions"} | {
            "conditions": [(c.get("type"), c.get("status")) for c in status.get("conditions")
                           or []]}
    return strip(a) == strip(b)


class Kubelet:
    """Serves the pods of ``nodes`` (all nodes when empty)."""

    def __init__(self, client: KubeClient, nodes: tuple[str, ...] = (),
                 resync_period: float = 30.0, cni_dir: Path | None = None) -> None:
        self.client = client
        self.recorder = EventRecorder(client, "kubelet", "ovnk-local")
        self.node_names = nodes
        self.cni_dir = cni_dir
        self._cni_waits: dict[str, str] = {}
        self._unusable: dict[str, str] = {}  # pod uid → the reason last reported
        self.pods = Informer(client, PODS, resync_period=resync_period)
        self.nodes = Informer(client, NODES, resync_period=resync_period)
        self.controller = Controller("kubelet", self.reconcile, workers=2)
        self.controller.watch(self.pods, primary=True)

    def serves(self, node: str | None) -> bool:
        return bool(node) and (not self.node_names or node in self.node_names)

    def reconcile(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not self.serves(node_name):
            return
        namespace, name = split_key(key)
        if pod["metadata"].get("deletionTimestamp"):
            self._cni(str(node_name), "del", pod)
            try:
                self.client.delete(PODS, name, namespace, preconditions={
                    "uid": pod["metadata"]["uid"]})
            except (NotFound, Conflict):
                pass
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        node = self.nodes.get(str(node_name))
        host_ip = node_address(node) if node else None
        if (pod.get("spec") or {}).get("hostNetwork"):
            ips: list[str] | None = [host_ip] if host_ip else []
        else:
            ips = self._pod_ips(pod)
        if ips is None:
            return  # not wired yet; the annotation update wakes us
        status = build_running_status(pod, ips, host_ip, now_rfc3339())
        if _same_status(pod.get("status") or {}, status):
            return
        if not (pod.get("spec") or {}).get("hostNetwork"):
            self._cni(str(node_name), "add", pod)
        try:
            self.client.patch_status(PODS, name, {
                "metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]},
                "status": status}, namespace=namespace)
        except (Conflict, NotFound):
            return
        log.info("kubelet: pod %s running on %s with IPs %s", key, node_name, ",".join(ips))

    def _pod_ips(self, pod: JSON) -> list[str] | None:
        """``pod_ips_from_annotation``; an unusable annotation is what a kubelet reports
        when its CNI plugin fails (a Warning ``FailedCreatePodSandBox``, once per reason),
        and the pod waits for the annotation to change instead of being retried."""
        uid = str(pod["metadata"].get("uid"))
        try:
            ips = pod_ips_from_annotation(pod)
        except UnusablePodNetworks as exc:
            if self._unusable.get(uid) != str(exc):
                self._unusable[uid] = str(exc)
                log.warning("kubelet: %s", exc)
                self.recorder.event(pod, WARNING, "FailedCreatePodSandBox",
                                    f"Failed to create pod sandbox: failed to set up the pod "
                                    f"network: {exc}")
            raise PermanentError(str(exc), reason="FailedCreatePodSandBox") from None
        self._unusable.pop(uid, None)
        return ips

    def _cni(self, node: str, command: str, pod: JSON) -> None:
        """CNI ``command`` for ``pod`` through its node's agent, when the node has one."""
        if self.cni_dir is None:
            return
        socket_path = self.cni_dir / f"{node}.sock"
        if not socket_path.exists():
            if command == "add":
                raise NotReady(f"node {node} has no CNI server yet ({socket_path})", delay=0.5)
            return
        meta = pod["metadata"]
        request = CniRequest(str(meta.get("namespace")), str(meta["name"]), str(meta["uid"]))
        try:
            status, body = cni_call(socket_path, command, request)
        except OSError as exc:
            raise TemporaryError(f"CNI {command} {request.key} on {node}: {exc}") from None
        if status == 503:
            message = str(body.get("error"))
            if self._cni_waits.get(request.key) != message:  # say each new reason once
                self._cni_waits[request.key] = message
                log.info("kubelet: pod %s not ready on %s: %s", request.key, node, message)
            raise NotReady(f"CNI {command} {request.key}: {message}", delay=0.2)
        self._cni_waits.pop(request.key, None)
        if status != 200:
            message = f"CNI {command} {request.key} on {node} failed ({status}): " \
                      f"{body.get('error')}"
            if command == "add":
                # what a kubelet reports when its CNI plugin fails
                self.recorder.event(pod, WARNING, "FailedCreatePodSandBox",
                                    f"Failed to create pod sandbox: failed to set up the pod "
                                    f"network: {body.get('error')}")
            raise TemporaryError(message)

    def start(self) -> None:
        self.pods.start()
        self.nodes.start()
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        self.pods.stop()
        self.nodes.stop()
