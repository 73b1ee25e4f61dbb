"""Which NADs are in use on which node: reference counting, and the pod source of it.

``NadReferences`` counts, per node and NAD key, the objects that use the NAD there, and
calls back on the first reference and on the last one going.  Sources feed it their
objects' references: ``PodNadReferences`` (each pod bound to a node uses its namespace's
primary NAD and the NADs of its network selection elements); other sources (EgressIPs,
say) plug in the same way with references of their own kind.

It is level-driven over informers: a pod event recomputes that pod's references alone; a
primary NAD appearing or going recomputes the pods of its namespace (through an index).
Nothing here decides what a reference means: a plugin does (``ovnk_network_activity``).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable

from ovnk_core.kube.client import JSON
from ovnk_core.kube.informer import Informer, index_by_namespace
from ovnk_core.kube.resources import object_key
from ovnk_core.networks.nad_config import primary_nad_namespace
from ovnk_core.pods.network_selections import NetworkSelectionError, pod_selections

ReferenceListener = Callable[[str, str, bool], None]
"""``(node, nad_key, referenced)``: the NAD got its first reference on the node (True) or
lost its last one (False)."""

FINISHED_PHASES = ("Succeeded", "Failed")


class NadReferences:
    """node → NAD key → the referrers (``<kind>:<key>``) using it there."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._referrers: dict[tuple[str, str], set[str]] = defaultdict(set)
        self._by_referrer: dict[str, set[tuple[str, str]]] = {}
        self._listeners: list[ReferenceListener] = []

    def add_listener(self, listener: ReferenceListener) -> None:
        self._listeners.append(listener)

    def update(self, referrer: str, references: set[tuple[str, str]]) -> None:
        """``referrer`` now uses exactly ``references`` (``(node, nad_key)`` pairs; empty:
        none, e.g. it is gone)."""
        changes: list[tuple[str, str, bool]] = []
        with self._lock:
            before = self._by_referrer.get(referrer, set())
            for pair in before - references:
                users = self._referrers[pair]
                users.discard(referrer)
                if not users:
                    del self._referrers[pair]
                    changes.append((*pair, False))
            for pair in references - before:
                users = self._referrers[pair]
                if not users:
                    changes.append((*pair, True))
                users.add(referrer)
            if references:
                self._by_referrer[referrer] = set(references)
            else:
                self._by_referrer.pop(referrer, None)
        for node, nad_key, referenced in changes:
            for listener in self._listeners:
                listener(node, nad_key, referenced)

    def referenced(self, node: str, nad_key: str) -> bool:
        with self._lock:
            return bool(self._referrers.get((node, nad_key)))

    def nodes_of(self, nad_key: str) -> set[str]:
        """The nodes where ``nad_key`` is referenced (a scan: for reports, not per event)."""
        with self._lock:
            return {node for (node, key), users in self._referrers.items()
                    if key == nad_key and users}


def pod_references(pod: JSON, primary_nads: list[str]) -> set[tuple[str, str]]:
    """``(node, nad_key)`` pairs a pod uses: nothing until it is bound to a node, nor once
    it is deleted or finished; else its namespace's primary NAD(s) and its selections' NADs
    (selections that cannot be honoured count for nothing: the pod gets no network)."""
    meta = pod.get("metadata") or {}
    node = (pod.get("spec") or {}).get("nodeName")
    if not node or meta.get("deletionTimestamp") or \
            (pod.get("status") or {}).get("phase") in FINISHED_PHASES:
        return set()
    keys = set(primary_nads)
    try:
        keys.update(selection.nad_key for selection in pod_selections(pod))
    except NetworkSelectionError:
        pass
    return {(str(node), key) for key in keys}


class PodNadReferences:
    """Feeds ``references`` from the pods informer: each bound pod's NADs on its node."""

    KIND = "pod"

    def __init__(self, pods: Informer, nads: Informer, references: NadReferences) -> None:
        self.pods = pods
        self.nads = nads
        self.references = references
        self.pods.add_indexer("namespace", index_by_namespace)
        self.nads.add_indexer("primary-namespace", primary_nad_namespace)
        self.pods.add_handler(self._on_pod)
        self.nads.add_handler(self._on_nad)

    def _primary_nads(self, namespace: str) -> list[str]:
        return [object_key(nad) for nad in self.nads.peek_by_index("primary-namespace",
                                                                   namespace)]

    def _update(self, pod: JSON) -> None:
        namespace = str((pod.get("metadata") or {}).get("namespace", ""))
        self.references.update(f"{self.KIND}:{object_key(pod)}",
                            pod_references(pod, self._primary_nads(namespace)))

    def _on_pod(self, _event: str, old: JSON | None, new: JSON | None) -> None:
        if new is not None:
            self._update(new)
        elif old is not None:
            self.references.update(f"{self.KIND}:{object_key(old)}", set())

    def _on_nad(self, _event: str, old: JSON | None, new: JSON | None) -> None:
        namespaces = {ns for nad in (old, new) if nad is not None
                      for ns in primary_nad_namespace(nad)}
        for namespace in namespaces:  # its pods' primary NAD came or went
            for pod in self.pods.peek_by_index("namespace", namespace):
                self._update(pod)

    def resync(self) -> None:
        """Recompute every pod (after the informers' first list)."""
        for key in self.pods.list_keys():
            pod = self.pods.peek(key)
            if pod is not None:
                self._update(pod)
