"""The local cluster's container runtime: one process per container, in the pod's namespace.

The kubelet stand-in (``ovnk_local.kubelet``) starts each supported container
(``ovnk_local.workloads``) as ``python -m ovnk_local.workloads.launch`` in the
pod's network namespace (the node's, for host-network pods), in the pod's cgroup
when the cluster has cgroup v2 (``ovnk_local.cgroups``), as ``nobody``, with its
output in ``DIR/logs/pods/<namespace>.<pod>/<container>.log``.

Containers outlive a restart of the kubelet, as under a real container runtime:
each one is recorded in ``DIR/run/containers/<pod uid>/<container>.json`` (pid, the
process's start time, so a reused pid is never taken for it, and when it started),
and a new kubelet adopts the live ones (``adopt``); one that ended while no kubelet
watched is reported with reason ``ContainerStatusUnknown`` and exit code 137, as
upstream reports a container it lost.  ``kill_leftovers`` (called by ``ovnk local
down`` and ``up``) kills every recorded container that still runs, so no process
outlives its cluster; the cgroups catch anything else.

A monitor thread notices exits (``Popen.poll`` for our children, ``/proc`` for
adopted ones), sends SIGKILL when a termination's grace period is over, and tells
the kubelet through ``on_exit`` (which only enqueues the pod's key).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ovnk_core.kube.conditions import now_rfc3339
from ovnk_local.cgroups import KUBELET_CGROUP_FILE, KubeletCgroup, ensure_kubelet_cgroup
from ovnk_local.workloads import Workload

log = logging.getLogger(__name__)

LAUNCHER = ("-m", "ovnk_local.workloads.launch")
UNKNOWN_EXIT = 137
UNKNOWN_REASON = "ContainerStatusUnknown"


def process_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22);
    None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _alive(pid: int, start_time: int) -> bool:
    return pid > 0 and process_start_time(pid) == start_time


@dataclass
class Container:
    """One run of one container."""

    key: str  # the pod's namespace/name
    uid: str  # the pod's
    name: str
    pid: int
    start_time: int  # process_start_time(pid)
    started_at: str  # RFC 3339
    record: Path
    process: subprocess.Popen[bytes] | None = None  # None when adopted
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    finished_at: str = ""
    signal_deadline: float | None = None  # SIGKILL then, when terminating
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def exited(self) -> bool:
        return self.exit_code is not None

    @property
    def container_id(self) -> str:
        """How the pod's status names this run (``containerID``)."""
        return f"ovnk-local://{self.uid}/{self.name}/{self.pid}"

    def termination(self) -> dict[str, object]:
        """``state.terminated`` / ``lastState.terminated`` of the status."""
        result: dict[str, object] = {"exitCode": self.exit_code, "reason": self.reason,
                                     "startedAt": self.started_at,
                                     "finishedAt": self.finished_at,
                                     "containerID": self.container_id}
        if self.message:
            result["message"] = self.message
        return result


class Runtime:
    """Starts, watches and stops container processes; ``on_exit(container)`` on exits."""

    def __init__(self, state_dir: Path, log_dir: Path,
                 on_exit: Callable[[Container], None], poll: float = 0.2) -> None:
        self.state_dir = state_dir
        self.log_dir = log_dir
        self.on_exit = on_exit
        self.poll = poll
        self._containers: dict[tuple[str, str], Container] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start_monitor(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._monitor, name="runtime-monitor",
                                            daemon=True)
            self._thread.start()

    def stop_monitor(self) -> None:
        """Stop watching; the containers keep running (a new kubelet adopts them)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # -- starting ---------------------------------------------------------------------------
    def start(self, key: str, uid: str, name: str, workload: Workload, netns: str | None,
              hostname: str, cgroup: Path | None = None,
              unprivileged_ports: bool = True) -> Container:
        argv = [sys.executable, *LAUNCHER, "--hostname", hostname]
        if netns:
            argv += ["--netns", netns]
        if cgroup is not None:
            argv += ["--cgroup", str(cgroup)]
        if unprivileged_ports:
            argv.append("--unprivileged-ports")
        argv += ["--", *workload.argv()]
        namespace, _, pod = key.partition("/")
        log_file = self.log_dir / f"{namespace}.{pod}" / f"{name}.log"
        log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(log_file, "ab") as output:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=output,
                                       stderr=subprocess.STDOUT, start_new_session=True,
                                       cwd="/")
        start_time = process_start_time(process.pid) or 0
        record = self.state_dir / uid / f"{name}.json"
        container = Container(key, uid, name, process.pid, start_time, now_rfc3339(), record,
                              process=process)
        record.parent.mkdir(parents=True, exist_ok=True)
        temporary = record.with_suffix(".tmp")
        temporary.write_text(json.dumps({"key": key, "uid": uid, "name": name,
                                         "pid": process.pid, "start_time": start_time,
                                         "started_at": container.started_at}))
        temporary.replace(record)
        with self._lock:
            self._containers[(uid, name)] = container
        log.info("runtime: started container %s of pod %s (%s) as pid %d", name, key,
                 " ".join(workload.argv()), process.pid)
        return container

    def adopt(self) -> list[Container]:
        """The containers an earlier kubelet started (live ones watched from now on;
        gone ones reported exited with an unknown status)."""
        adopted = []
        for record in sorted(self.state_dir.glob("*/*.json")):
            try:
                data = json.loads(record.read_text())
                container = Container(str(data["key"]), str(data["uid"]), str(data["name"]),
                                      int(data["pid"]), int(data["start_time"]),
                                      str(data["started_at"]), record)
            except (OSError, ValueError, KeyError, TypeError):
                log.warning("runtime: unreadable container record %s; removed", record)
                record.unlink(missing_ok=True)
                continue
            if not _alive(container.pid, container.start_time):
                self._lost(container)
            with self._lock:
                self._containers[(container.uid, container.name)] = container
            adopted.append(container)
        return adopted

    @staticmethod
    def _lost(container: Container) -> None:
        container.exit_code = UNKNOWN_EXIT
        container.reason = UNKNOWN_REASON
        container.message = "The container's exit status is unknown: it ended while no " \
                            "kubelet watched it"
        container.finished_at = now_rfc3339()
        container.record.unlink(missing_ok=True)

    # -- looking -----------------------------------------------------------------------------
    def get(self, uid: str, name: str) -> Container | None:
        with self._lock:
            return self._containers.get((uid, name))

    def of_pod(self, uid: str) -> list[Container]:
        with self._lock:
            return [c for (u, _), c in self._containers.items() if u == uid]

    def pods(self) -> dict[str, str]:
        """Pod uid → key of every pod with a container the runtime knows."""
        with self._lock:
            return {c.uid: c.key for c in self._containers.values()}

    # -- stopping ----------------------------------------------------------------------------
    def terminate(self, container: Container, grace: float) -> None:
        """SIGTERM now, SIGKILL after ``grace`` seconds (0: at once); idempotent."""
        with self._lock:
            if container.exited or container.signal_deadline is not None:
                return
            container.signal_deadline = time.monotonic() + max(grace, 0.0)
        self._signal(container, signal.SIGKILL if grace <= 0 else signal.SIGTERM)

    def _signal(self, container: Container, signum: int) -> None:
        if not _alive(container.pid, container.start_time):
            return
        try:
            os.kill(container.pid, signum)
        except ProcessLookupError:
            pass

    def forget(self, container: Container) -> None:
        """Drop an exited container (its record is gone already)."""
        with self._lock:
            if self._containers.get((container.uid, container.name)) is container:
                del self._containers[(container.uid, container.name)]

    def forget_pod(self, uid: str) -> None:
        with self._lock:
            for key in [k for k in self._containers if k[0] == uid]:
                del self._containers[key]
        directory = self.state_dir / uid
        if directory.is_dir():
            for record in directory.glob("*"):
                record.unlink(missing_ok=True)
            directory.rmdir()

    # -- watching ------------------------------------------------------------------------------
    def _check(self, container: Container) -> bool:
        """Whether it has just been seen to end (its exit recorded)."""
        if container.exited:
            return False
        if container.process is not None:
            code = container.process.poll()
            if code is None:
                return False
            container.exit_code = code if code >= 0 else 128 - code
        elif _alive(container.pid, container.start_time):
            return False
        else:  # adopted: not our child, its status is not ours to read
            self._lost(container)
            return True
        container.reason = "Completed" if container.exit_code == 0 else "Error"
        container.finished_at = now_rfc3339()
        container.record.unlink(missing_ok=True)
        return True

    def _monitor(self) -> None:
        while not self._stop.wait(self.poll):
            with self._lock:
                containers = list(self._containers.values())
            for container in containers:
                if self._check(container):
                    log.info("runtime: container %s of pod %s (pid %d) ended: exit code %s",
                             container.name, container.key, container.pid,
                             container.exit_code)
                    try:
                        self.on_exit(container)
                    except Exception:
                        log.exception("runtime: on_exit of %s failed", container.key)
                elif container.signal_deadline is not None and not container.exited and \
                        time.monotonic() >= container.signal_deadline:
                    self._signal(container, signal.SIGKILL)


TX_CHECKSUM_FEATURES = ("tx-checksum-ip-generic", "tx-checksum-ipv4", "tx-checksum-ipv6")


def disable_tx_checksum_offload(netns: str) -> list[str]:
    """Turn TX checksum offload off on every interface of ``netns`` but ``lo``; the
    interfaces changed.

    The local dataplane's OVS runs the userspace datapath, which reads the node ends of
    pod veths through AF_PACKET and forwards what it reads as it is: a TCP or UDP packet
    a pod sent with its checksum left to the "hardware" (``CHECKSUM_PARTIAL``, the veth
    default) reaches the other pod with a wrong checksum and is dropped (ICMP, whose
    checksum the kernel always computes, is unaffected).  So the pod computes its
    checksums itself, as with any userspace datapath.
    """
    from ovnk_core.node.netns import run_in_netns

    def disable() -> list[str]:
        from pyroute2 import IPRoute
        from pyroute2.ethtool import Ethtool

        changed = []
        with IPRoute() as ipr:
            names = [str(link.get_attr("IFLA_IFNAME")) for link in ipr.get_links()]
        ethtool = Ethtool()
        try:
            for name in names:
                if name == "lo":
                    continue
                features = ethtool.get_features(name)
                on = [f for f in TX_CHECKSUM_FEATURES
                      if f in features.features and features.features[f].enable]
                if not on:
                    continue
                for feature in on:
                    features.features[feature].enable = False
                ethtool.set_features(name, features)
                changed.append(name)
        finally:
            ethtool.close()
        return changed

    return run_in_netns(netns, disable)


def kill_leftovers(state_dir: Path) -> list[int]:
    """Kill every container recorded under ``state_dir`` that still runs (SIGKILL), remove
    the records; the pids killed."""
    killed = []
    for record in state_dir.glob("*/*.json") if state_dir.is_dir() else ():
        try:
            data = json.loads(record.read_text())
            pid, start_time = int(data["pid"]), int(data["start_time"])
        except (OSError, ValueError, KeyError, TypeError):
            pid, start_time = 0, -1
        if _alive(pid, start_time):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        record.unlink(missing_ok=True)
    for directory in state_dir.glob("*") if state_dir.is_dir() else ():
        try:
            directory.rmdir()
        except OSError:
            pass
    return killed


@dataclass(frozen=True)
class Sandboxes:
    """Where one cluster's nodes and pods live, for the kubelet: network namespaces
    (``ovnk_local.dataplane``), kubelet cgroups (``ovnk_local.cgroups``), container
    records and logs."""

    prefix: str  # the cluster's namespace prefix (``ovnk<hash>``)
    nodes_dir: Path  # DIR/nodes (each node's kubelet-cgroup.json)
    state_dir: Path  # DIR/run/containers
    log_dir: Path  # DIR/logs/pods

    @classmethod
    def of_cluster(cls, cluster_dir: Path) -> Sandboxes:
        from ovnk_local.dataplane import namespace_prefix

        return cls(namespace_prefix(cluster_dir), cluster_dir / "nodes",
                   cluster_dir / "run" / "containers", cluster_dir / "logs" / "pods")

    def node_netns(self, node: str) -> str:
        return f"{self.prefix}-{node}"

    def pod_netns(self, node: str, namespace: str, name: str) -> str:
        return f"{self.prefix}-{node}-pod-{namespace}.{name}"

    def kubelet_cgroup(self, node: str) -> KubeletCgroup:
        """The node's kubelet cgroup as ``ovnk local up`` recorded it (created now when
        nothing was recorded)."""
        node_dir = self.nodes_dir / node
        file = node_dir / KUBELET_CGROUP_FILE
        if file.exists():
            return KubeletCgroup.read(file)
        return ensure_kubelet_cgroup(self.prefix, node, node_dir)
