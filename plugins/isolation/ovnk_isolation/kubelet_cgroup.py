"""Where the node's kubelet runs, for the nftables rule that lets its probes through.

UDN isolation drops every connection from the host to a primary-UDN pod's
default-network IP except the kubelet's (its health checks), matched with
``socket cgroupv2 level N "<path>"``.  nft resolves that path under
``/sys/fs/cgroup`` once, when the rule is loaded, so the path must be the
kubelet's directory relative to /sys/fs/cgroup (``unified/...`` on a hybrid
host, where the v2 hierarchy is mounted at /sys/fs/cgroup/unified) and ``N``
its depth in the v2 hierarchy.  Upstream walks the v2 mount for the first
directory named ``kubelet.service``; an operator (or ``ovnk local``) may name
it instead with ``--kubelet-cgroup-path`` (relative to the v2 mount).  Without
a v2 hierarchy, or without that directory, there is no kubelet rule: the
caller reports why (``KubeletCgroupMissing.message``) and isolates anyway.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

NFT_CGROUP_ROOT = Path("/sys/fs/cgroup")
KUBELET_UNIT = "kubelet.service"


@dataclass(frozen=True)
class KubeletCgroup:
    """The kubelet's cgroup as ``socket cgroupv2`` takes it."""

    rule_path: str  # relative to /sys/fs/cgroup (what nft resolves)
    level: int  # its number of components below the v2 mount


@dataclass(frozen=True)
class KubeletCgroupMissing:
    """No kubelet rule can be written; ``cgroup_v1`` when there is no v2 hierarchy."""

    reason: str
    cgroup_v1: bool = False

    def message(self, node: str) -> str:
        """The Node event's message (upstream's words for cgroup v1)."""
        if self.cgroup_v1:
            return (f"Kubelet probes for UDN are not supported on the node {node} as it uses "
                    "cgroup v1.")
        return (f"Kubelet probes for UDN are not supported on the node {node}: {self.reason}; "
                "connections from the host to pods of primary user-defined networks are all "
                "dropped on the default network, probes included.")


def is_cgroup2_root(directory: Path) -> bool:
    """Whether ``directory`` is the root of a cgroup v2 hierarchy (v1 roots have no
    ``cgroup.controllers``)."""
    return (directory / "cgroup.controllers").is_file()


def walk_for_unit(mount: Path, unit: str = KUBELET_UNIT) -> Path | None:
    """The first directory named ``unit`` below ``mount``, in lexical order, as upstream's
    walk finds it; ``None`` when there is none."""
    for current, dirs, _files in os.walk(mount):
        dirs.sort()
        if unit in dirs:
            return Path(current, unit)
    return None


def find_kubelet_cgroup(configured: str, mount: Path | None,
                        nft_root: Path = NFT_CGROUP_ROOT) -> KubeletCgroup | KubeletCgroupMissing:
    """The kubelet's cgroup: ``configured`` (relative to the v2 mount) or, when empty, the
    first ``kubelet.service`` below ``mount``.

    :param mount: the cgroup v2 mount (``ovnk_core.node.nft.cgroup2_root()``); ``None`` or
        a directory that is no v2 root means cgroup v1 only.
    """
    if mount is None or not is_cgroup2_root(mount):
        where = "no cgroup2 mount" if mount is None else f"{mount} is not a cgroup v2 root"
        return KubeletCgroupMissing(where, cgroup_v1=True)
    if configured:
        relative = configured.strip("/")
        directory = mount / relative
        if not relative or not directory.is_dir():
            return KubeletCgroupMissing(
                f"the kubelet cgroup {directory} (--kubelet-cgroup-path) does not exist")
    else:
        found = walk_for_unit(mount)
        if found is None:
            return KubeletCgroupMissing(f"no {KUBELET_UNIT} cgroup found under {mount}")
        directory = found
    try:
        rule_path = directory.relative_to(nft_root)
    except ValueError:
        return KubeletCgroupMissing(
            f"the cgroup v2 hierarchy is mounted at {mount}, outside {nft_root}, where "
            "nftables resolves socket cgroupv2 paths")
    return KubeletCgroup(str(rule_path), len(directory.relative_to(mount).parts))
