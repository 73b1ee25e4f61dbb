"""The pod status a kubelet reports, computed from what it knows (pure functions).

The kubelet stand-in (``ovnk_local.kubelet``) decides what runs; these functions turn
that into ``status``: the pod's addresses from ovnk's ``k8s.ovn.org/pod-networks``
(eth0's, as upstream's CNI reports them) and its node's, container statuses, the
phase as the kubelet's ``getPhase`` derives it, conditions with kept transition times,
and the restart policy's and back-off's arithmetic.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ovnk_core.annotations import pod_networks
from ovnk_core.kube.client import JSON
from ovnk_local import workloads


def node_addresses(node: JSON | None) -> list[str]:
    """The node's InternalIPs, in its order (a dual-stack node's primary family first): a
    pod's ``hostIPs``, and a hostNetwork pod's ``podIPs``."""
    return [str(address.get("address")) for address in
            ((node or {}).get("status") or {}).get("addresses") or []
            if address.get("type") == "InternalIP" and address.get("address")]


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


def build_running_status(pod: JSON, ips: list[str], host_ips: list[str], now: str) -> JSON:
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
    return with_addresses(status, ips, host_ips)


def with_addresses(status: JSON, ips: list[str], host_ips: list[str]) -> JSON:
    """``status`` with the pod's IPs (``podIP(s)``: eth0's) and its node's (``hostIP(s)``),
    each of both families on a dual-stack cluster, the primary first."""
    if ips:
        status["podIP"] = ips[0]
        status["podIPs"] = [{"ip": ip} for ip in ips]
    if host_ips:
        status["hostIP"] = host_ips[0]
        status["hostIPs"] = [{"ip": ip} for ip in host_ips]
    return status


def same_status(a: JSON, b: JSON) -> bool:
    def strip(status: JSON) -> JSON:
        return {k: v for k, v in status.items() if k != "conditions"} | {
            "conditions": [(c.get("type"), c.get("status")) for c in status.get("conditions")
                           or []]}
    return strip(a) == strip(b)


# -- status with containers (real dataplane) --------------------------------------------------
UNSUPPORTED_REASON = workloads.UNSUPPORTED_REASON
BACKOFF_REASON = "CrashLoopBackOff"


def container_status(container: JSON, state: JSON, *, ready: bool = False,
                     started: bool = False, restart_count: int = 0,
                     last_state: JSON | None = None, container_id: str = "") -> JSON:
    """One entry of ``status.containerStatuses``."""
    status: dict[str, Any] = {"name": container.get("name", ""),
                              "image": container.get("image", ""), "imageID": "",
                              "ready": ready, "restartCount": restart_count,
                              "started": started, "state": state,
                              "lastState": last_state or {}}
    if container_id:
        status["containerID"] = container_id
    return status


def pod_phase(restart_policy: str, statuses: list[JSON]) -> str:
    """The pod's phase from its containers' states (the kubelet's ``getPhase``)."""
    waiting = running = stopped = succeeded = 0
    for status in statuses:
        state = status.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            if state["terminated"].get("exitCode") == 0:
                succeeded += 1
        elif (status.get("lastState") or {}).get("terminated"):
            stopped += 1  # waiting to be restarted
        else:
            waiting += 1
    if waiting or not statuses:
        return "Pending"
    if running:
        return "Running"
    if restart_policy == "Always":
        return "Running"  # every container is being restarted
    if stopped == succeeded:
        return "Succeeded"
    return "Running" if restart_policy == "OnFailure" else "Failed"


def build_pod_status(pod: JSON, ips: list[str], host_ips: list[str], now: str,
                     statuses: list[JSON]) -> JSON:
    """The status a kubelet reports for a pod whose containers are in ``statuses``:
    phase, conditions (``ContainersReady`` and ``Ready`` follow the containers' ``ready``),
    addresses; transition times kept from the previous status when a condition stays."""
    previous = pod.get("status") or {}
    started = previous.get("startTime") or now
    unready = [str(s.get("name")) for s in statuses if not s.get("ready")]
    ready = "False" if unready or not statuses else "True"
    conditions: list[dict[str, Any]] = [
        {"type": "PodScheduled", "status": "True"}, {"type": "Initialized", "status": "True"},
        {"type": "ContainersReady", "status": ready}, {"type": "Ready", "status": ready}]
    old = {c.get("type"): c for c in previous.get("conditions") or []}
    for condition in conditions:
        before = old.get(condition["type"]) or {}
        condition["lastTransitionTime"] = before.get("lastTransitionTime", now) \
            if before.get("status") == condition["status"] else now
        if condition["type"] in ("ContainersReady", "Ready") and unready:
            condition["reason"] = "ContainersNotReady"
            condition["message"] = f"containers with unready status: [{' '.join(unready)}]"
    restart_policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
    status: dict[str, Any] = {"phase": pod_phase(restart_policy, statuses),
                              "conditions": conditions, "startTime": started,
                              "containerStatuses": statuses}
    return with_addresses(status, ips, host_ips)


def should_restart(restart_policy: str, exit_code: int) -> bool:
    return restart_policy == "Always" or (restart_policy == "OnFailure" and exit_code != 0)


def restart_delay(restarts: int, base: float, cap: float) -> float:
    """How long a container that ended waits before its next start: at once the first
    time, then ``base`` doubling up to ``cap`` (the kubelet's 10s ... 300s)."""
    if restarts <= 0:
        return 0.0
    return float(min(base * 2 ** (restarts - 1), cap))


def grace_period(pod: JSON, default: float = 30.0) -> float:
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    for value in (meta.get("deletionGracePeriodSeconds"),
                  spec.get("terminationGracePeriodSeconds")):
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
    return default
