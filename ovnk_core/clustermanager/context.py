"""What the cluster manager lends to the controllers plugins run inside it.

Feature plugins (the EndpointSlice mirror, for one) add controllers to the
cluster-manager process through the ``ovnk_cluster_manager_controllers``
hook.  They get this context instead of the ``ClusterManager`` itself, so the
surface they may rely on is small and written down: the shared informers (one
watch per resource for the whole process), the API client, the event
recorder, the read-only network registry, and a way to hear that the set of
networks changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ovnk_core.config import Config
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.registry import NetworkRegistry

NetworkListener = Callable[[str], None]


@dataclass
class ClusterManagerContext:
    """The cluster manager's shared parts, as plugins see them.

    :ivar config: the process configuration.
    :ivar client: the Kubernetes client (official client underneath).
    :ivar informers: the process-wide informer factory; ask it for informers in the
        hook (before the controllers start), never create informers of your own.
    :ivar recorder: emits Events as ``ovnkube-cluster-manager``.
    :ivar networks: the network registry filled by the NAD controller; read it only.
    """

    config: Config
    client: KubeClient
    informers: InformerFactory
    recorder: EventRecorder
    networks: NetworkRegistry
    _listeners: list[NetworkListener] = field(default_factory=list)

    def on_networks_changed(self, listener: NetworkListener) -> None:
        """Call ``listener(network_name)`` whenever a network appears, changes, gains or
        loses a NAD, or goes away.  It runs on a controller thread and must only enqueue."""
        self._listeners.append(listener)

    def networks_changed(self, network: str) -> None:
        """Tell every listener that ``network`` changed (called by the NAD controller)."""
        for listener in list(self._listeners):
            listener(network)

    def primary_network_of_namespace(self, namespace: str) -> tuple[str, NetInfo] | None:
        """``(nad_key, netinfo)`` of the namespace's primary user-defined network, or None
        when the namespace has none (yet) and its pods use the default network."""
        nad_key = self.networks.primary_nad_for_namespace(namespace)
        if nad_key is None:
            return None
        name = self.networks.network_of_nad(nad_key)
        entry = self.networks.get(name) if name is not None else None
        if entry is None or not entry.netinfo.is_primary:
            return None
        return nad_key, entry.netinfo
