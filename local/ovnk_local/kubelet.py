"""A kubelet stand-in: runs the pods bound to its nodes and reports their status.

A real kubelet starts containers and asks the CNI plugin for the pod's
network; here the network is whatever ovnk wrote into the pod's
``k8s.ovn.org/pod-networks`` annotation — its ``default`` entry, the
network of eth0; pods of a primary UDN still report their default-network
IPs, as upstream does — so a pod gets ``status.podIPs`` exactly when ovnk has
allocated its addresses — as upstream's CNI would.  An annotation that cannot
wire the pod (one that ``ovnk_core.annotations.pod_networks`` refuses: not JSON,
addresses that are not CIDRs...) is a Warning ``FailedCreatePodSandBox`` on the
pod, as a kubelet reports its CNI plugin's failure, not a retry loop.
Host-network pods get their node's address at once.

**Without a real dataplane** (``ovnk local up --no-dataplane``) there are no pod
namespaces: a pod is Running and Ready once it is annotated, its containers are
reported running, no process runs and no probe is run (images are not checked).

**With a real dataplane** the kubelet is a CNI runtime (``ovnk_local.cni_runtime``):
before it starts the pod's containers it creates the pod's network namespace and runs
the node's conflist (``DIR/nodes/<node>/cni/net.d``: ovnk's ``ovn-k8s-cni-overlay``,
which forwards to the node agent's socket ``CNI_DIR/<node>.sock``, then ``tuning``),
retrying while a plugin answers "try again later" (the ports are not bound yet); after
the containers stopped it runs DEL in reverse order with the cached result and deletes
the namespace.  Then containers run and probes are probed:

* **Containers** (``ovnk_local.workloads``, ``ovnk_local.runtime``): each supported
  container (``agnhost netexec``, ``agnhost pause``, ``pause``) is a process in the
  pod's network namespace; any other image or command stays ``waiting`` with reason
  ``UnsupportedImage`` (a Warning event of that reason says which image and command)
  and keeps the pod ``Pending``.  A container that ends is restarted by
  ``restartPolicy`` (default ``Always``; ``OnFailure``; ``Never``) with the kubelet's
  back-off (at once the first time, then 10s doubling up to 300s, ``CrashLoopBackOff``
  while it waits), counting ``restartCount`` and keeping ``lastState.terminated``.
  Deleting the pod stops its containers (SIGTERM, SIGKILL after the grace period)
  before the pod is removed; containers outlive a restart of the kubelet, which
  adopts them.
* **Probes** (``ovnk_local.probes``, ``ovnk_local.prober``): ``httpGet`` and
  ``tcpSocket`` probes are dialled from the node's network namespace by a process in
  the node's kubelet cgroup (``ovnk_local.cgroups``), to the pod's ``status.podIPs``
  (its default-network IP) unless the probe names a host; ``exec`` probes run in the
  container's namespaces as the container's user; ``grpc`` probes fail as
  unsupported.  Readiness decides the container's ``ready`` and the pod's
  ``ContainersReady``/``Ready``; a failed liveness (or startup) probe kills the
  container (event ``Killing``), which is then restarted; failed probes are Warning
  ``Unhealthy`` events, worded as the kubelet words them.

The kubelet is level-driven: informer events, container exits and probe results
only enqueue the pod's key; probes run on their own timer thread and pool.
"""

from __future__ import annotations

import logging
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovnk_core.errors import NotReady, PermanentError, TemporaryError
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.conditions import now_rfc3339
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.events import NORMAL, WARNING, EventRecorder
from ovnk_core.kube.informer import Informer
from ovnk_core.kube.resources import NODES, PODS, object_key
from ovnk_core.node.cni_server import CniRequest, cni_call
from ovnk_local import probes, workloads
from ovnk_local.apiserver.exec_session import UNPRIVILEGED
from ovnk_local.cgroups import pod_cgroup, remove_pod_cgroup
from ovnk_local.cni_runtime import CniPluginError, CniRuntime, Sandbox, node_cni_conf_dir
from ovnk_local.pod_status import (
    BACKOFF_REASON,
    UNSUPPORTED_REASON,
    UnusablePodNetworks,
    build_pod_status,
    build_running_status,
    container_status,
    grace_period,
    node_addresses,
    pod_ips_from_annotation,
    restart_delay,
    same_status,
    should_restart,
)
from ovnk_local.prober import ProberClient
from ovnk_local.runtime import Container, Runtime, Sandboxes, disable_tx_checksum_offload

log = logging.getLogger(__name__)




@dataclass
class ContainerState:
    """What the kubelet knows about one container of a pod it runs."""

    spec: JSON
    workload: workloads.Workload | None = None
    unsupported: str = ""  # why it cannot run
    reported: bool = False  # the UnsupportedImage event was recorded
    probes: list[probes.ProbeSpec] = field(default_factory=list)
    restart_count: int = 0
    ran_before: bool = False
    current: Container | None = None
    probing: str = ""  # the container id its probes were registered for
    last_terminated: JSON | None = None
    final: JSON | None = None  # state.terminated of a container not to be restarted
    backoff_until: float = 0.0
    seed_ready: bool | None = None

    @property
    def name(self) -> str:
        return str(self.spec.get("name", ""))


@dataclass
class PodState:
    key: str
    uid: str
    node: str
    containers: dict[str, ContainerState]
    grace: float = 30.0  # the pod's termination grace period
    wired: bool = False
    cgroup: Path | None = None


class Kubelet:
    """Serves the pods of ``nodes`` (all nodes when empty).

    ``sandboxes`` (a real dataplane) makes it run containers and probes; without it a
    pod is Running once it is annotated (see the module docstring).
    """

    def __init__(self, client: KubeClient, nodes: tuple[str, ...] = (),
                 resync_period: float = 30.0, cni_dir: Path | None = None,
                 sandboxes: Sandboxes | None = None, restart_backoff: float = 10.0,
                 restart_backoff_cap: float = 300.0) -> None:
        self.client = client
        self.recorder = EventRecorder(client, "kubelet", "ovnk-local")
        self.node_names = nodes
        self.cni_dir = cni_dir
        self.sandboxes = sandboxes
        self.restart_backoff = restart_backoff
        self.restart_backoff_cap = restart_backoff_cap
        self._cni_waits: dict[str, str] = {}
        self._unusable: dict[str, str] = {}  # pod uid → the reason last reported
        self.pods = Informer(client, PODS, resync_period=resync_period)
        self.nodes = Informer(client, NODES, resync_period=resync_period)
        self.runtime: Runtime | None = None
        self.probes: probes.ProbeManager | None = None
        self._states: dict[str, PodState] = {}  # pod uid →
        self._by_container: dict[str, tuple[str, str]] = {}  # container id → (uid, name)
        self._probers: dict[str, ProberClient] = {}
        self._lock = threading.Lock()
        if sandboxes is not None:
            self.probes = probes.ProbeManager(self._on_probe)
            self.runtime = Runtime(sandboxes.state_dir, sandboxes.log_dir,
                                   lambda container: self.controller.requeue(container.key))
        self.controller = Controller("kubelet", self.reconcile, workers=2,
                                     initial_sync=self._adopt if sandboxes else None)
        self.controller.watch(self.pods, primary=True)

    def serves(self, node: str | None) -> bool:
        return bool(node) and (not self.node_names or node in self.node_names)

    def reconcile(self, key: str) -> None:
        pod = self.pods.get(key)
        if self.runtime is not None:
            self._reconcile_containers(key, pod)
            return
        if pod is None:
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not self.serves(node_name):
            return
        if pod["metadata"].get("deletionTimestamp"):
            self._cni(str(node_name), "del", pod)
            self._delete(pod)
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        node = self.nodes.peek(str(node_name))
        host_ips = node_addresses(node)
        ips = self._ips(pod, host_ips)
        if ips is None:
            return  # not wired yet; the annotation update wakes us
        status = build_running_status(pod, ips, host_ips, now_rfc3339())
        if same_status(pod.get("status") or {}, status):
            return
        if not (pod.get("spec") or {}).get("hostNetwork"):
            self._cni(str(node_name), "add", pod)
        self._patch_status(pod, status, ips)

    def _ips(self, pod: JSON, host_ips: list[str]) -> list[str] | None:
        if (pod.get("spec") or {}).get("hostNetwork"):
            return host_ips
        return self._pod_ips(pod)

    def _delete(self, pod: JSON) -> None:
        meta = pod["metadata"]
        try:
            self.client.delete(PODS, meta["name"], meta.get("namespace"),
                               preconditions={"uid": meta["uid"]})
        except (NotFound, Conflict):
            pass

    def _patch_status(self, pod: JSON, status: JSON, ips: list[str]) -> None:
        meta = pod["metadata"]
        try:
            self.client.patch_status(PODS, meta["name"], {
                "metadata": {"resourceVersion": meta["resourceVersion"]},
                "status": status}, namespace=meta.get("namespace"))
        except (Conflict, NotFound):
            return
        log.info("kubelet: pod %s/%s %s on %s with IPs %s", meta.get("namespace"),
                 meta["name"], status.get("phase"), (pod.get("spec") or {}).get("nodeName"),
                 ",".join(ips))

    # -- with containers ---------------------------------------------------------------------
    def _adopt(self) -> None:
        """Before the workers start: take over the containers an earlier kubelet started,
        and look at each of their pods (gone ones get their containers stopped)."""
        assert self.runtime is not None
        adopted = self.runtime.adopt()
        self.runtime.start_monitor()
        if adopted:
            log.info("kubelet: adopted %d container(s) of an earlier kubelet",
                     len([c for c in adopted if not c.exited]))
        for key in {container.key for container in adopted}:
            self.controller.requeue(key)

    def _reconcile_containers(self, key: str, pod: JSON | None) -> None:
        assert self.runtime is not None and self.sandboxes is not None
        uid = str(pod["metadata"].get("uid")) if pod is not None else ""
        with self._lock:
            known = {state.uid: state.key for state in self._states.values()}
        for other, other_key in (known | self.runtime.pods()).items():
            if other_key == key and other != uid:  # gone, or replaced by a new pod
                self._stop_pod(other, None)
        if pod is None:
            return
        node_name = str((pod.get("spec") or {}).get("nodeName") or "")
        if not self.serves(node_name):
            return
        if pod["metadata"].get("deletionTimestamp"):
            self._stop_pod(uid, pod)  # and DEL through the CNI chain
            self._delete(pod)
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return
        node = self.nodes.peek(node_name)
        host_ips = node_addresses(node)
        ips = self._ips(pod, host_ips)
        if ips is None:
            return  # not wired yet; the annotation update wakes us
        state = self._pod_state(pod, node_name)
        if not state.wired:
            if not (pod.get("spec") or {}).get("hostNetwork"):
                self._cni_add(node_name, pod)
                meta = pod["metadata"]
                try:
                    disable_tx_checksum_offload(self.sandboxes.pod_netns(
                        node_name, str(meta.get("namespace")), str(meta["name"])))
                except Exception as exc:  # ICMP still works: say why TCP may not
                    log.warning("kubelet: pod %s: cannot turn TX checksum offload off (TCP "
                                "and UDP between pods may fail): %s", key, exc)
            state.wired = True
        statuses = [self._sync_container(pod, state, cs, ips or host_ips or [""])
                    for cs in state.containers.values()]
        status = build_pod_status(pod, ips, host_ips, now_rfc3339(), statuses)
        if not same_status(pod.get("status") or {}, status):
            self._patch_status(pod, status, ips)

    def _pod_state(self, pod: JSON, node: str) -> PodState:
        """The pod's state, created from its spec and its last reported status (restart
        counts, last terminations, containers adopted from an earlier kubelet)."""
        assert self.runtime is not None
        uid = str(pod["metadata"]["uid"])
        with self._lock:
            state = self._states.get(uid)
        if state is not None:
            return state
        previous = {str(s.get("name")): s for s in (pod.get("status") or {}).get(
            "containerStatuses") or []}
        containers: dict[str, ContainerState] = {}
        for spec in (pod.get("spec") or {}).get("containers") or []:
            cs = ContainerState(spec)
            try:
                cs.workload = workloads.resolve(spec)
                cs.probes = probes.container_probes(spec)
            except (workloads.Unsupported, probes.InvalidProbe) as exc:
                cs.unsupported = str(exc)
            before = previous.get(cs.name) or {}
            cs.restart_count = int(before.get("restartCount") or 0)
            cs.ran_before = bool(before.get("containerID"))
            cs.last_terminated = (before.get("lastState") or {}).get("terminated")
            cs.current = self.runtime.get(uid, cs.name)
            if cs.current is not None and not cs.current.exited:
                cs.seed_ready = bool(before.get("ready"))
            containers[cs.name] = cs
        state = PodState(object_key(pod), uid, node, containers, grace=grace_period(pod))
        with self._lock:
            self._states[uid] = state
        return state

    def _sync_container(self, pod: JSON, state: PodState, cs: ContainerState,
                        ips: list[str]) -> JSON:
        """Start, restart or leave one container; its status entry."""
        assert self.runtime is not None and self.sandboxes is not None
        if cs.unsupported:
            if not cs.reported:
                cs.reported = True
                log.warning("kubelet: pod %s container %s: %s", state.key, cs.name,
                            cs.unsupported)
                self.recorder.event(pod, WARNING, UNSUPPORTED_REASON,
                                    f"container {cs.name}: {cs.unsupported}")
            return container_status(cs.spec, {"waiting": {"reason": UNSUPPORTED_REASON,
                                                          "message": cs.unsupported}},
                                    restart_count=cs.restart_count,
                                    last_state=self._last_state(cs))
        policy = str((pod.get("spec") or {}).get("restartPolicy") or "Always")
        current = cs.current
        if current is not None and current.exited:
            self._forget_container(current)
            cs.current = None
            cs.last_terminated = current.termination()
            if should_restart(policy, int(current.exit_code or 0)):
                cs.backoff_until = time.monotonic() + restart_delay(
                    cs.restart_count, self.restart_backoff, self.restart_backoff_cap)
            else:
                cs.final = cs.last_terminated
        if cs.final is not None:
            return container_status(cs.spec, {"terminated": cs.final},
                                    restart_count=cs.restart_count,
                                    container_id=str(cs.final.get("containerID", "")))
        if cs.current is None:
            wait = cs.backoff_until - time.monotonic()
            if cs.ran_before and wait > 0:
                self.controller.reconcile_after(state.key, wait)
                delay = restart_delay(cs.restart_count, self.restart_backoff,
                                      self.restart_backoff_cap)
                meta = pod["metadata"]
                return container_status(cs.spec, {"waiting": {
                    "reason": BACKOFF_REASON,
                    "message": f"back-off {delay:.0f}s restarting failed container={cs.name} "
                               f"pod={meta['name']}_{meta.get('namespace')}({state.uid})"}},
                    restart_count=cs.restart_count, last_state=self._last_state(cs))
            self._start(pod, state, cs)
        current = cs.current
        assert current is not None
        if cs.probing != current.container_id:
            self._probe(pod, state, cs, current, ips[0] if ips else "")
        started = self._probe_result(current, probes.STARTUP, True)
        ready = bool(started and self._probe_result(current, probes.READINESS, True)
                     and self._probe_result(current, probes.LIVENESS, True) is not False)
        return container_status(cs.spec, {"running": {"startedAt": current.started_at}},
                                ready=ready, started=bool(started),
                                restart_count=cs.restart_count,
                                last_state=self._last_state(cs),
                                container_id=current.container_id)

    @staticmethod
    def _last_state(cs: ContainerState) -> JSON:
        return {"terminated": cs.last_terminated} if cs.last_terminated else {}

    def _probe_result(self, container: Container, kind: str, default: bool) -> bool | None:
        assert self.probes is not None
        if not self.probes.has(container.container_id, kind):
            return default
        return self.probes.result(container.container_id, kind)

    def _start(self, pod: JSON, state: PodState, cs: ContainerState) -> None:
        assert self.runtime is not None and self.sandboxes is not None
        assert cs.workload is not None
        meta, spec = pod["metadata"], pod.get("spec") or {}
        host_network = bool(spec.get("hostNetwork"))
        if host_network:
            netns, hostname = self.sandboxes.node_netns(state.node), state.node
        else:
            netns = self.sandboxes.pod_netns(state.node, str(meta.get("namespace")),
                                             str(meta["name"]))
            hostname = str(spec.get("hostname") or meta["name"])
        if state.cgroup is None:
            state.cgroup = pod_cgroup(self.sandboxes.kubelet_cgroup(state.node), state.uid)
        try:
            cs.current = self.runtime.start(state.key, state.uid, cs.name, cs.workload, netns,
                                            hostname, state.cgroup,
                                            unprivileged_ports=not host_network)
        except OSError as exc:
            raise TemporaryError(f"cannot start container {cs.name} of pod {state.key}: "
                                 f"{exc}") from None
        if cs.ran_before:
            cs.restart_count += 1
        cs.ran_before = True
        self.recorder.event(pod, NORMAL, "Started", f"Started container {cs.name}")

    def _forget_container(self, container: Container) -> None:
        assert self.runtime is not None and self.probes is not None
        self.probes.remove(container.container_id)
        with self._lock:
            self._by_container.pop(container.container_id, None)
        self.runtime.forget(container)

    def _stop_pod(self, uid: str, pod: JSON | None) -> None:
        """Stop the pod's containers (SIGTERM, SIGKILL after the grace period); not ready
        while one still runs; then forget the pod.  ``pod`` None: it is gone from the API
        already (the local API server deletes pods at once, as a forced deletion)."""
        assert self.runtime is not None
        running = [c for c in self.runtime.of_pod(uid) if not c.exited]
        with self._lock:
            known = self._states.get(uid)
        grace = grace_period(pod) if pod is not None else known.grace if known else 0.0
        for container in running:
            self.runtime.terminate(container, grace)
        if running:
            names = ", ".join(c.name for c in running)
            raise NotReady(f"pod {running[0].key}: stopping container(s) {names}", delay=0.2)
        for container in self.runtime.of_pod(uid):
            self._forget_container(container)
        if known is not None:
            self._cni_del(known.node, known.key, uid)
        self.runtime.forget_pod(uid)
        with self._lock:
            state = self._states.pop(uid, None)
        if state is not None and state.cgroup is not None:
            remove_pod_cgroup(state.cgroup)

    # -- probes ----------------------------------------------------------------------------
    def _probe(self, pod: JSON, state: PodState, cs: ContainerState, container: Container,
               pod_ip: str) -> None:
        assert self.probes is not None
        cs.probing = container.container_id
        if not cs.probes:
            return
        with self._lock:
            self._by_container[container.container_id] = (state.uid, cs.name)
        spec, node, pid = cs.spec, state.node, container.pid

        def runner(probe: probes.ProbeSpec) -> probes.Runner:
            return lambda _spec: self._run_probe(probe, node, pod_ip, spec, pid)

        self.probes.add(container.container_id, cs.probes, runner, ready=cs.seed_ready)
        cs.seed_ready = None

    def _run_probe(self, probe: probes.ProbeSpec, node: str, pod_ip: str, container: JSON,
                   pid: int) -> tuple[bool, str]:
        if probe.handler in (probes.HTTP, probes.TCP):
            port = probes.resolve_port(probe.port, container)
            request: dict[str, Any] = {"kind": probe.handler, "host": probe.host or pod_ip,
                                       "port": port, "timeout": probe.timeout}
            if probe.handler == probes.HTTP:
                request |= {"scheme": probe.scheme, "path": probe.path,
                            "headers": [list(h) for h in probe.headers]}
            return self._prober(node).probe(request, probe.timeout)
        if probe.handler == probes.EXEC:
            return exec_probe(pid, list(probe.command), probe.timeout)
        return False, "gRPC probes are not supported by ovnk local"

    def _prober(self, node: str) -> ProberClient:
        assert self.sandboxes is not None
        with self._lock:
            prober = self._probers.get(node)
            if prober is not None:
                return prober
            cgroup = self.sandboxes.kubelet_cgroup(node)
            prober = self._probers[node] = ProberClient(
                node, self.sandboxes.node_netns(node), cgroup.directory,
                self.sandboxes.log_dir.parent / f"{node}-prober.log")
        reason = cgroup.error
        if not reason:
            try:
                prober.start()
            except OSError as exc:
                log.warning("kubelet: %s", exc)
            reason = prober.error
        if reason:
            log.warning("kubelet: probes of node %s run outside a kubelet cgroup: %s", node,
                        reason)
            self.recorder.event(
                {"kind": "Node", "apiVersion": "v1", "metadata": {"name": node, "uid": node}},
                WARNING, "KubeletCgroupUnavailable",
                f"probes run from the node's network namespace but outside a dedicated "
                f"kubelet cgroup: {reason}")
        return prober

    def _on_probe(self, container_id: str, kind: str, ok: bool, message: str,
                  changed: bool) -> None:
        """A probe ran (probe pool thread): events, a kill on a failed liveness or
        startup probe, and the pod's key enqueued when its result changed."""
        assert self.runtime is not None
        with self._lock:
            owner = self._by_container.get(container_id)
            state = self._states.get(owner[0]) if owner else None
        if owner is None or state is None:
            return
        pod = self.pods.get(state.key)
        if pod is None:
            return
        if not ok:
            self.recorder.event(pod, WARNING, "Unhealthy",
                                f"{probes.TITLE[kind]} probe failed: {message}")
        if not changed:
            return
        container = self.runtime.get(owner[0], owner[1])
        if kind in (probes.LIVENESS, probes.STARTUP) and not ok and container is not None \
                and container.container_id == container_id:
            cs = state.containers.get(owner[1])
            grace = next((p.termination_grace for p in cs.probes if p.kind == kind), None) \
                if cs is not None else None
            self.recorder.event(pod, NORMAL, "Killing",
                                f"Container {owner[1]} failed {kind} probe, will be restarted")
            log.info("kubelet: pod %s container %s failed its %s probe: restarting it",
                     state.key, owner[1], kind)
            self.runtime.terminate(container, grace if grace is not None
                                   else grace_period(pod))
        self.controller.requeue(state.key)

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

    # -- CNI, as a container runtime runs it (real dataplane) ------------------------------
    def _cni_runtime(self, node: str) -> CniRuntime:
        assert self.sandboxes is not None and self.cni_dir is not None
        return CniRuntime(node_cni_conf_dir(self.sandboxes.nodes_dir / node),
                          self.cni_dir / "results")

    def _sandbox(self, node: str, key: str, uid: str) -> Sandbox:
        assert self.sandboxes is not None
        namespace, _, name = key.partition("/")
        return Sandbox(uid, self.sandboxes.pod_netns(node, namespace, name), namespace, name,
                       uid)

    def _cni_add(self, node: str, pod: JSON) -> None:
        """The pod's sandbox network: its namespace and the node's CNI chain's ADD."""
        if self.sandboxes is None or self.cni_dir is None:
            self._cni(node, "add", pod)
            return
        meta = pod["metadata"]
        sandbox = self._sandbox(node, object_key(pod), str(meta["uid"]))
        try:
            result = self._cni_runtime(node).add(sandbox)
        except CniPluginError as exc:
            if exc.try_again:
                if self._cni_waits.get(sandbox.uid) != str(exc):  # each new reason once
                    self._cni_waits[sandbox.uid] = str(exc)
                    log.info("kubelet: pod %s not ready on %s: %s", object_key(pod), node, exc)
                raise NotReady(f"CNI ADD {object_key(pod)}: {exc}", delay=0.2) from None
            self.recorder.event(pod, WARNING, "FailedCreatePodSandBox",
                                f"Failed to create pod sandbox: failed to set up the pod "
                                f"network: {exc.reason}")
            raise TemporaryError(f"CNI ADD {object_key(pod)} on {node}: {exc}") from None
        self._cni_waits.pop(sandbox.uid, None)
        log.info("kubelet: pod %s: CNI ADD on %s: %s", object_key(pod), node,
                 ", ".join(ip.get("address", "") for ip in result.get("ips") or []))

    def _cni_del(self, node: str, key: str, uid: str) -> None:
        """DEL through the chain, then the namespace; a failure is logged and the namespace
        removed all the same (the agent removes the ports of pods that are gone)."""
        if self.cni_dir is None:
            return
        runtime, sandbox = self._cni_runtime(node), self._sandbox(node, key, uid)
        if runtime.cached(sandbox) is None and not sandbox.netns_path.exists():
            return
        try:
            runtime.delete(sandbox)
        except CniPluginError as exc:
            log.warning("kubelet: pod %s: CNI DEL on %s failed: %s", key, node, exc)
            try:
                runtime.delete_netns(sandbox)
            except CniPluginError as again:
                log.warning("kubelet: pod %s: %s", key, again)
            runtime.forget(sandbox)

    def _cni(self, node: str, command: str, pod: JSON) -> None:
        """CNI ``command`` for ``pod`` through its node's agent's private endpoint, when the
        node has one (the kubelet without a real dataplane's sandboxes)."""
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
        """Stop serving; containers keep running (the next kubelet adopts them)."""
        self.controller.stop()
        if self.probes is not None:
            self.probes.stop()
        if self.runtime is not None:
            self.runtime.stop_monitor()
        for prober in list(self._probers.values()):
            prober.stop()
        self.pods.stop()
        self.nodes.stop()


def exec_probe(pid: int, command: list[str], timeout: float) -> tuple[bool, str]:
    """An ``exec`` probe: ``command`` in the container's network and UTS namespaces, as
    the container's user (``nobody``, no capabilities, ``no_new_privs``); exit 0 passes."""
    if not command:
        return False, "exec probe without a command"
    argv = ["nsenter", "-t", str(pid), "-n", "-u", *UNPRIVILEGED, "--", *command]
    try:
        result = subprocess.run(argv, capture_output=True, timeout=timeout, cwd="/",
                                env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:"
                                             "/usr/bin:/sbin:/bin", "HOME": "/"})
    except subprocess.TimeoutExpired:
        return False, f"command {command!r} timed out"
    except OSError as exc:
        return False, f"command {command!r} could not run: {exc}"
    output = (result.stdout + result.stderr).decode(errors="replace").strip()
    if result.returncode == 0:
        return True, output
    return False, output or f"command {command!r} exited with {result.returncode}"
