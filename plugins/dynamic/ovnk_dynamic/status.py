"""What dynamic allocation reports in the cluster manager: condition, metric and events.

For every network whose nodes are filtered (a UDN/CUDN's), upstream's condition
``NodesSelected`` (reason ``DynamicAllocation``: ``<N> node(s) rendered with network``, or
False ``no nodes currently rendered with network``) on its UserDefinedNetwork or
ClusterUserDefinedNetwork, and the gauge ``ovnkube_clustermanager_udn_nodes_rendered``
per network.  Beyond upstream (the audit trail OKEP-5552 proposed): a Normal event on the
UDN/CUDN each time the network is rendered on a node (``NetworkActivatedOnNode``) or
stops being (``NetworkDeactivatedOnNode``).

Level-driven: the activity's listener enqueues the network; a reconcile compares the
nodes now active with the ones it last reported.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from ovnk_core.clustermanager.node_allocator import owner_of_network
from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.kube.client import JSON
from ovnk_core.kube.conditions import Condition, set_conditions
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.events import NORMAL
from ovnk_core.metrics import GaugeFromCache

log = logging.getLogger(__name__)

CONDITION = "NodesSelected"
REASON = "DynamicAllocation"
ACTIVATED, DEACTIVATED = "NetworkActivatedOnNode", "NetworkDeactivatedOnNode"
GAUGE = "ovnkube_clustermanager_udn_nodes_rendered"


def nodes_selected(count: int) -> Condition:
    """Upstream's condition for ``count`` rendered nodes."""
    if count:
        return Condition(CONDITION, "True", REASON, f"{count} node(s) rendered with network")
    return Condition(CONDITION, "False", REASON, "no nodes currently rendered with network")


class DynamicStatus:
    """The cluster manager's reports of where each filtered network is rendered."""

    def __init__(self, context: ClusterManagerContext) -> None:
        self.context = context
        self.activity = context.activity
        self._lock = threading.Lock()
        self._reported: dict[str, frozenset[str]] = {}
        self.controller = Controller("dynamic-udn-status", self.reconcile)
        self.activity.add_listener(lambda network, _node: self.controller.queue.add(network))
        context.on_networks_changed(self.controller.queue.add)
        if context.metrics is not None:
            context.metrics.register(GaugeFromCache(
                GAUGE, "The number of nodes a user-defined network is rendered on",
                ["network_name"], self._samples))

    def _samples(self) -> list[tuple[tuple[str, ...], float]]:
        with self._lock:
            return [((network,), float(len(nodes)))
                    for network, nodes in sorted(self._reported.items())]

    def reconcile(self, network: str) -> None:
        nodes = self.activity.active_nodes(network)
        target = self._owner(network) if nodes is not None else None
        if nodes is None or target is None:
            with self._lock:  # not filtered (any more), or gone
                self._reported.pop(network, None)
            return
        resource, obj = target
        with self._lock:
            before = self._reported.get(network, frozenset())
            self._reported[network] = nodes
        try:
            set_conditions(self.context.client, resource, obj, [nodes_selected(len(nodes))])
        except (NotFound, Conflict) as exc:
            with self._lock:
                self._reported[network] = before
            raise exc
        for node in sorted(nodes - before):
            self.context.recorder.event(obj, NORMAL, ACTIVATED,
                                        f"network {network} rendered on node {node}")
        for node in sorted(before - nodes):
            self.context.recorder.event(obj, NORMAL, DEACTIVATED,
                                        f"network {network} no longer rendered on node "
                                        f"{node}: unused there for the grace period")

    def _owner(self, network: str) -> tuple[Any, JSON] | None:
        owner = owner_of_network(network)
        if owner is None:
            return None
        resource, namespace, name = owner
        try:
            return resource, self.context.client.get(resource, name, namespace)
        except NotFound:
            return None
