"""cgroup v2 directories of the local cluster: each node's kubelet, each pod.

A real kubelet runs in a cgroup of its own, so its health-check connections can
be told apart from everything else on the node (upstream's UDN isolation lets
kubelet probes into a pod while blocking the rest, with an nftables match
``socket cgroupv2 level N "<path>"``).  ``ovnk local`` gives every node's kubelet
stand-in one too, under the cgroup v2 mount (``/sys/fs/cgroup`` on a pure v2
system, ``/sys/fs/cgroup/unified`` on a hybrid one)::

    <mount>/ovnk-local/<cluster>/<node>/kubelet     the node's prober process
    <mount>/ovnk-local/<cluster>/<node>/pods/<uid>  the pod's container processes

where ``<cluster>`` is the cluster's namespace prefix (``ovnk<hash>``, as in
``ip netns``).  ``ovnk local up`` creates the kubelet's directory before the node
agents start and writes where it is to **``DIR/nodes/<node>/kubelet-cgroup.json``**
(``KUBELET_CGROUP_FILE``), for the node agent and the kubelet to read at run time::

    {"mount": "/sys/fs/cgroup/unified",
     "path": "ovnk-local/ovnk1a2b3c/ovn-worker/kubelet",   # relative to the mount
     "level": 4}                                           # its number of components

``ovnk local`` starts each node agent with ``--kubelet-cgroup-path <path>``
(``kubelet_cgroup_flags``), from which UDN isolation builds nftables'
``socket cgroupv2 level 4 "ovnk-local/ovnk1a2b3c/ovn-worker/kubelet"`` (the path
prefixed with the mount's place under /sys/fs/cgroup, ``unified/`` on a hybrid
system); without it the agent would look for a ``kubelet.service`` directory, as
upstream does.  Without a writable cgroup v2
mount the file says why instead: ``{"error": "..."}``; probes then still run, from
the node's network namespace but outside a dedicated cgroup, and the kubelet says
so (a log line and a Warning event ``KubeletCgroupUnavailable`` on the Node).
``ovnk local down`` kills what is left in the cluster's directories
(``cgroup.kill``) and removes them.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

ROOT = "ovnk-local"
KUBELET_CGROUP_FILE = "kubelet-cgroup.json"
MOUNTINFO = Path("/proc/self/mountinfo")


def cgroup2_mount(mountinfo: Path = MOUNTINFO) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted, None when it is not."""
    try:
        lines = mountinfo.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        left, _, right = line.partition(" - ")
        fields = left.split()
        if right.split()[:1] == ["cgroup2"] and len(fields) > 4:
            return Path(fields[4])
    return None


@dataclass(frozen=True)
class KubeletCgroup:
    """Where one node's kubelet cgroup is (``error`` when it has none)."""

    mount: str = ""
    path: str = ""  # relative to the mount, no leading slash
    error: str = ""

    @property
    def level(self) -> int:
        return len(self.path.split("/")) if self.path else 0

    @property
    def directory(self) -> Path | None:
        return Path(self.mount, self.path) if self.path else None

    def to_json(self) -> str:
        if self.error:
            return json.dumps({"error": self.error}) + "\n"
        return json.dumps({"mount": self.mount, "path": self.path, "level": self.level}) + "\n"

    @classmethod
    def read(cls, file: Path) -> KubeletCgroup:
        try:
            data = json.loads(file.read_text())
        except (OSError, ValueError) as exc:
            return cls(error=f"cannot read {file}: {exc}")
        if not isinstance(data, dict):
            return cls(error=f"{file} does not hold an object")
        if data.get("error"):
            return cls(error=str(data["error"]))
        return cls(mount=str(data.get("mount", "")), path=str(data.get("path", "")))


def kubelet_cgroup_flags(node_dir: Path) -> list[str]:
    """The node agent's ``--kubelet-cgroup-path`` from the node's ``KUBELET_CGROUP_FILE``
    (none when the node has no kubelet cgroup: the agent then reports that itself)."""
    recorded = KubeletCgroup.read(node_dir / KUBELET_CGROUP_FILE)
    return ["--kubelet-cgroup-path", recorded.path] if recorded.path else []


def cluster_path(cluster: str) -> str:
    return f"{ROOT}/{cluster}"


def ensure_kubelet_cgroup(cluster: str, node: str, node_dir: Path,
                          mount: Path | None = None) -> KubeletCgroup:
    """Create the node's kubelet cgroup (idempotent) and write ``KUBELET_CGROUP_FILE``
    in ``node_dir``; a machine without a writable cgroup v2 gets the reason there."""
    mount = mount if mount is not None else cgroup2_mount()
    relative = f"{cluster_path(cluster)}/{node}/kubelet"
    if mount is None:
        result = KubeletCgroup(error="cgroup v2 is not mounted (no cgroup2 in "
                                     "/proc/self/mountinfo)")
    else:
        try:
            (mount / relative).mkdir(parents=True, exist_ok=True)
            (mount / relative.rsplit("/", 1)[0] / "pods").mkdir(exist_ok=True)
            result = KubeletCgroup(mount=str(mount), path=relative)
        except OSError as exc:
            result = KubeletCgroup(error=f"cannot create {mount / relative}: {exc.strerror}")
    node_dir.mkdir(parents=True, exist_ok=True)
    (node_dir / KUBELET_CGROUP_FILE).write_text(result.to_json())
    if result.error:
        log.warning("node %s: no kubelet cgroup: %s", node, result.error)
    return result


def pod_cgroup(kubelet: KubeletCgroup, uid: str) -> Path | None:
    """The pod's cgroup directory (created), next to the kubelet's; None without one."""
    directory = kubelet.directory
    if directory is None:
        return None
    pod = directory.parent / "pods" / uid
    try:
        pod.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        log.warning("no cgroup for pod %s: %s", uid, exc)
        return None
    return pod


def remove_tree(directory: Path, timeout: float = 5.0) -> bool:
    """Kill every process in ``directory`` and below (``cgroup.kill``), remove the
    directories; True when something was removed."""
    if not directory.is_dir():
        return False
    try:
        (directory / "cgroup.kill").write_text("1")
    except OSError:  # kernels before 5.14: kill what is listed
        for procs in directory.rglob("cgroup.procs"):
            for pid in procs.read_text().split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
    deadline = time.monotonic() + timeout
    children = sorted((p for p in directory.rglob("*") if p.is_dir()),
                      key=lambda p: len(p.parts), reverse=True)
    for path in [*children, directory]:
        while True:
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError as exc:  # still populated while the kill lands
                if time.monotonic() > deadline:
                    log.warning("cannot remove cgroup %s: %s", path, exc)
                    break
                time.sleep(0.05)
    return True


def remove_pod_cgroup(path: Path) -> None:
    remove_tree(path, timeout=2.0)


def remove_cluster_cgroups(cluster: str, mount: Path | None = None) -> bool:
    """Everything of one cluster: the kubelets', the pods' (their processes killed)."""
    mount = mount if mount is not None else cgroup2_mount()
    if mount is None:
        return False
    removed = remove_tree(mount / cluster_path(cluster))
    try:
        (mount / ROOT).rmdir()  # the last cluster's
    except OSError:
        pass
    return removed
