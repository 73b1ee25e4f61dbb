"""The node agent's UDN isolation controller: the host's nftables kept in step with pods.

Runs in every node agent (``ovnk_node_controllers``).  Level-driven: pod
events only enqueue the pod key; ``reconcile`` reads the pod from the
informer cache (``peek``, no copy), computes its elements
(``host_elements.build_pod_elements``) and writes only the difference, in one
nftables transaction, with reference counts for IPs two pods hold.

Only the node's own pods are watched (``spec.nodeName=<node>``), as upstream,
whose node agent's pod informer is filtered to the node: host traffic to a
pod's default-network IP on another node leaves through the node's OVN
management port and is handled by the ACLs of the zone side.

At start (``initial_sync``) the kubelet cgroup is found (``kubelet_cgroup``;
none → Warning ``UDNKubeletProbesNotSupported`` on the Node, isolation stays
without the kubelet rule) and the table is compared with what every pod
wants: equal, nothing is written; otherwise the whole table is replaced in
one transaction (``nft.apply_table``).  nftables failures are retried with
backoff by the controller, never crash the agent.

nft resolves the kubelet's cgroup path to the cgroup's id once, when the rule
is loaded, so a kubelet whose cgroup is removed and created again (a restart)
would no longer match.  Upstream watches systemd over D-Bus for that; here the
cgroup's id (its directory's inode) is checked every ``kubelet_check_period``
seconds and the table rewritten when it changed, which also covers a kubelet
not run by systemd (``ovnk local``).  A configured cgroup missing at start is
looked for again the same way; a discovered one (``kubelet.service``) is
searched for only at start, as upstream does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION, PodAnnotationError
from ovnk_core.contexts import NodeContext
from ovnk_core.errors import TemporaryError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING
from ovnk_core.kube.resources import PODS, object_key
from ovnk_core.node import nft
from ovnk_isolation import host_rules
from ovnk_isolation.host_elements import ElementRefs, PodDesired, build_pod_elements
from ovnk_isolation.kubelet_cgroup import (
    NFT_CGROUP_ROOT,
    KubeletCgroup,
    KubeletCgroupMissing,
    find_kubelet_cgroup,
)
from ovnk_isolation.open_ports import ANNOTATION as OPEN_PORTS_ANNOTATION

log = logging.getLogger(__name__)

FEATURE = "isolation"
CONTROLLER = "udn-host-isolation-manager"
NO_KUBELET_REASON = "UDNKubeletProbesNotSupported"
OPEN_PORTS_ERROR_REASON = "ErrorUpdatingResource"
FULL_SYNC_KEY = ":full-sync"  # no pod key looks like this (they are <namespace>/<name>)
KUBELET_CHECK_KEY = ":kubelet-cgroup"
KUBELET_CHECK_PERIOD = 2.0
_WATCHED_ANNOTATIONS = (POD_NETWORKS_ANNOTATION, OPEN_PORTS_ANNOTATION)


def pod_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> bool:
    """Whether a pod event can change its elements (adds, deletes, IPs, the annotations)."""
    if old is None or new is None:
        return True
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    old_ann, new_ann = old_meta.get("annotations") or {}, new_meta.get("annotations") or {}
    return (any(old_ann.get(name) != new_ann.get(name) for name in _WATCHED_ANNOTATIONS)
            or (old.get("status") or {}).get("podIPs") != (new.get("status") or {}).get("podIPs")
            or (old.get("spec") or {}).get("hostNetwork")
            != (new.get("spec") or {}).get("hostNetwork"))


class HostIsolation:
    """The ``udn-isolation`` chain and its sets on one node.

    :param kubelet_cgroup_path: the kubelet's cgroup relative to the v2 mount; ``None``:
        ``config.kubelet_cgroup_path`` (empty: look for ``kubelet.service``).
    :param find_cgroup2: where cgroup v2 is mounted (``None``: not at all); default: as
        /proc/self/mounts says.
    :param kubelet_check_period: how often the kubelet cgroup is checked for having been
        created again (0: never).
    """

    def __init__(self, context: NodeContext, kubelet_cgroup_path: str | None = None,
                 find_cgroup2: Callable[[], Path | None] = nft.cgroup2_root,
                 kubelet_check_period: float = KUBELET_CHECK_PERIOD) -> None:
        self.context = context
        self.table = context.nft_table(FEATURE)
        self.kubelet_cgroup_path = (context.config.kubelet_cgroup_path
                                    if kubelet_cgroup_path is None else kubelet_cgroup_path)
        self.find_cgroup2 = find_cgroup2
        self.kubelet: KubeletCgroup | None = None
        self.kubelet_missing: KubeletCgroupMissing | None = None
        self.kubelet_check_period = kubelet_check_period
        self._kubelet_id: int | None = None  # the cgroup id the rules were written for
        self.ip_versions = sorted(context.config.ip_families)
        self.refs = ElementRefs()
        self._synced = False
        self.pods = context.informers.get(PODS, field_selector=f"spec.nodeName={context.node}")
        self.controller = Controller(CONTROLLER, self.reconcile, initial_sync=self.initial_sync)
        self.controller.watch(self.pods, relevant=pod_changed)

    # -- start ---------------------------------------------------------------------------
    def initial_sync(self) -> None:
        """Find the kubelet's cgroup, then bring the table in line with every pod; an
        nftables failure is logged and retried by the first reconcile."""
        found = find_kubelet_cgroup(self.kubelet_cgroup_path, self.find_cgroup2())
        if isinstance(found, KubeletCgroupMissing):
            self.kubelet, self.kubelet_missing = None, found
            message = found.message(self.context.node)
            log.warning("node %s: %s%s", self.context.node, message,
                        f" ({found.reason})" if found.cgroup_v1 else "")
            self.context.recorder.event(
                {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.context.node}},
                WARNING, NO_KUBELET_REASON, message)
        else:
            self.kubelet = found
            log.info("node %s: kubelet cgroup %s (level %d)", self.context.node,
                     found.rule_path, found.level)
        try:
            self.full_sync()
        except nft.NftError as exc:
            log.error("node %s: UDN host isolation not set up yet (retried): %s",
                      self.context.node, exc)
            self.controller.queue.add(FULL_SYNC_KEY)  # retried even if no pod changes
        if self.kubelet_check_period > 0:
            self.controller.reconcile_after(KUBELET_CHECK_KEY, self.kubelet_check_period)

    def desired_of(self, pod_key: str) -> PodDesired | None:
        """The pod's elements; ``None`` when its pod-networks annotation is unusable
        (its elements are then left as they are until the annotation changes)."""
        pod = self.pods.peek(pod_key)
        try:
            return build_pod_elements(pod)
        except PodAnnotationError as exc:
            log.warning("pod %s: %s; its UDN host isolation elements are left as they are",
                        pod_key, exc)
            return None

    def full_sync(self) -> None:
        """Make the whole table what the pods want: nothing written when it already is,
        else replaced in one transaction.

        :raises NftError: nftables refused.
        """
        kubelet_id = self._current_kubelet_id()  # before writing: a later change is seen
        wanted: list[tuple[str, Mapping[str, frozenset[str]]]] = []
        for pod in self.pods.peek_all():
            key = object_key(pod)
            desired = self.desired_of(key)
            if desired is not None:
                self._report_open_ports(pod, desired)
                wanted.append((key, desired.elements))
        refs = ElementRefs.of(wanted)
        members = {name: refs.members(name) for name in host_rules.SET_NAMES}
        netns = self.context.node_netns
        if self._table_is(members):
            log.info("node %s: UDN host isolation table %s already up to date",
                     self.context.node, self.table)
        else:
            nft.apply_table(host_rules.build_table(self.table, self.kubelet, self.ip_versions,
                                                   members), netns)
            log.info("node %s: UDN host isolation table %s written (%d pods)",
                     self.context.node, self.table, len(refs.by_pod))
        self.refs = refs
        self._synced = True
        self._kubelet_id = kubelet_id

    def _table_is(self, members: Mapping[str, set[str]]) -> bool:
        netns = self.context.node_netns
        listing = nft.list_table_text(host_rules.FAMILY, self.table, netns)
        if listing != host_rules.build_listing(self.table, self.kubelet, self.ip_versions):
            return False
        return all(set(nft.set_elements(host_rules.FAMILY, self.table, name, netns)) == wanted
                   for name, wanted in members.items())

    # -- the kubelet's cgroup ------------------------------------------------------------
    def _current_kubelet_id(self) -> int | None:
        """The id of the kubelet's cgroup now (its directory's inode), None when absent."""
        if self.kubelet is None:
            return None
        try:
            return (NFT_CGROUP_ROOT / self.kubelet.rule_path).stat().st_ino
        except OSError:
            return None

    def check_kubelet(self) -> None:
        """Rewrite the table when the kubelet's cgroup was created again (a new id), or when
        a configured one missing at start exists now."""
        if self.kubelet is None:
            missing = self.kubelet_missing
            if missing is None or missing.cgroup_v1 or not self.kubelet_cgroup_path:
                return
            found = find_kubelet_cgroup(self.kubelet_cgroup_path, self.find_cgroup2())
            if isinstance(found, KubeletCgroupMissing):
                return
            log.info("node %s: kubelet cgroup %s exists now: kubelet rules added",
                     self.context.node, found.rule_path)
            self.kubelet, self.kubelet_missing = found, None
        else:
            current = self._current_kubelet_id()
            if current is None or current == self._kubelet_id:
                return
            log.info("node %s: kubelet cgroup %s created again: kubelet rules rewritten",
                     self.context.node, self.kubelet.rule_path)
        self._retry(self.full_sync)

    # -- per pod -------------------------------------------------------------------------
    def reconcile(self, pod_key: str) -> None:
        if pod_key == KUBELET_CHECK_KEY:
            self.controller.reconcile_after(KUBELET_CHECK_KEY, self.kubelet_check_period)
            if self._synced:
                self.check_kubelet()
            return
        if not self._synced:
            self._retry(self.full_sync)
            return
        if pod_key == FULL_SYNC_KEY:
            return
        desired = self.desired_of(pod_key)
        if desired is None:
            return
        pod = self.pods.peek(pod_key)
        if pod is not None:
            self._report_open_ports(pod, desired)
        changes = self.refs.changes(pod_key, desired.elements)
        if changes:
            self._retry(lambda: nft.update_elements(
                host_rules.FAMILY, self.table,
                {name: (change.add, change.delete) for name, change in changes.items()},
                self.context.node_netns))
        self.refs.commit(pod_key, desired.elements)

    def _retry(self, write: Callable[[], None]) -> None:
        """Run an nftables write; a refusal is retried with backoff by the controller."""
        try:
            write()
        except nft.NftError as exc:
            raise TemporaryError(str(exc)) from None

    def _report_open_ports(self, pod: JSON, desired: PodDesired) -> None:
        if desired.open_ports_error:
            log.warning("pod %s: open default-network ports ignored: %s", object_key(pod),
                        desired.open_ports_error)
            self.context.recorder.event(pod, WARNING, OPEN_PORTS_ERROR_REASON,
                                        desired.open_ports_error)
