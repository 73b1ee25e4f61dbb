"""A minimal scheduler: binds each pending pod to the Ready node with the fewest pods.

Enough for a local cluster: it honours ``spec.nodeName`` already set,
``spec.nodeSelector`` (exact label match) and skips unschedulable or
not-Ready nodes; a pod no node fits stays pending and is retried when nodes
change.  Binding writes ``spec.nodeName`` (the ``binding`` subresource's
effect).  Like kube-scheduler it *assumes* each binding it made until its own
pod informer shows it, so pods created back to back are spread over nodes
instead of all landing on the node that looked emptiest a moment ago.
"""

from __future__ import annotations

import logging
import threading

from ovnk_core.errors import NotReady
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.informer import Informer, index_by_node
from ovnk_core.kube.resources import NODES, PODS, split_key

log = logging.getLogger(__name__)


def node_is_schedulable(node: JSON) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


PENDING = "pending"


def index_pending(pod: JSON) -> list[str]:
    """Pods not bound to a node yet (what a node event makes worth another try)."""
    return [] if (pod.get("spec") or {}).get("nodeName") else [PENDING]


def choose_node(pod: JSON, nodes: list[JSON], pods_per_node: dict[str, int]) -> str | None:
    """The schedulable node matching the pod's nodeSelector with the fewest pods."""
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    fits = []
    for node in nodes:
        labels = node.get("metadata", {}).get("labels") or {}
        if node_is_schedulable(node) and all(labels.get(k) == v for k, v in selector.items()):
            name = node["metadata"]["name"]
            fits.append((pods_per_node.get(name, 0), name))
    return min(fits)[1] if fits else None


class Scheduler:
    def __init__(self, client: KubeClient, resync_period: float = 30.0) -> None:
        self.client = client
        self.pods = Informer(client, PODS, resync_period=resync_period,
                             indexers={"node": index_by_node, "pending": index_pending})
        self.nodes = Informer(client, NODES, resync_period=resync_period)
        self.controller = Controller("scheduler", self.reconcile)
        self.controller.watch(self.pods, primary=True)
        self.controller.watch(self.nodes, key_func=lambda _node: self._pending_keys())
        self._assumed: dict[str, str] = {}
        self._assumed_lock = threading.Lock()

    def _pending_keys(self) -> list[str]:
        return self.pods.keys_by_index("pending", PENDING)

    def reconcile(self, key: str) -> None:
        pod = self.pods.get(key)
        if pod is None or (pod.get("spec") or {}).get("nodeName"):
            return
        if pod["metadata"].get("deletionTimestamp"):
            return
        node = choose_node(pod, self.nodes.peek_all(), self.pods_per_node())
        if node is None:
            raise NotReady(f"pod {key}: no schedulable node fits", delay=5.0)
        namespace, name = split_key(key)
        try:
            self.client.bind(PODS, name, namespace or "", node)
        except (Conflict, NotFound):
            return  # changed or gone meanwhile; the informer brings the new state
        with self._assumed_lock:
            self._assumed[key] = node
        log.info("scheduler: bound pod %s to node %s", key, node)

    def pods_per_node(self) -> dict[str, int]:
        """Pods per node as the informer shows them plus bindings not yet seen there."""
        # counts from the index (no copy of any pod: this runs for every pod scheduled)
        counts = {name: len(self.pods.keys_by_index("node", name))
                  for name in self.nodes.list_keys()}
        with self._assumed_lock:
            for key, node in list(self._assumed.items()):
                seen = self.pods.peek(key)
                if seen is None or (seen.get("spec") or {}).get("nodeName"):
                    del self._assumed[key]  # the informer caught up (or the pod is gone)
                else:
                    counts[node] = counts.get(node, 0) + 1
        return counts

    def start(self) -> None:
        self.pods.start()
        self.nodes.start()
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        self.pods.stop()
        self.nodes.stop()
