"""The control plane inside one test process: cluster managers and zone controllers on a local
API server, each running as its own identity under the RBAC that ships for it, the zone
writing a real Northbound database.

One place for what the e2e tests start and stop (zone controller, fuzzing, isolation of bad
objects, chaos), so that they all run the components the same way a deployment does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ovnk_core.allocators.ids import IdAllocator
from ovnk_core.allocators.tunnel_keys import TunnelKeyAllocator
from ovnk_core.annotations.network_id import DEFAULT_NETWORK_ID, MAX_NETWORKS
from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.clustermanager.nad_controller import NadController
from ovnk_core.config import Config
from ovnk_core.contexts import ZoneContext
from ovnk_core.identities import CLUSTER_MANAGER_USER, CONTROLLER_USER
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import NODES
from ovnk_core.kube.workqueue import WorkQueue
from ovnk_core.networks.registry import NetworkRegistry
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.snapshot import Snapshot, snapshot
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.controller import ZoneController
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.cluster import build_node
from ovnk_local.testing.apiserver_fixtures import component_client, with_crds


@dataclass
class Zone:
    """A running zone controller and a separate reader of the NB it writes."""

    writer: NbWriter  # the controller's
    nb: NbClient  # the test's reader (an IDL copy that follows NB)
    informers: InformerFactory
    controller: ZoneController
    # the enabled plugins' zone controllers (``ovnk_zone_controllers``), as the zone process
    # runs them: started after the zone's own, stopped before
    plugin_controllers: list[Controller] = field(default_factory=list)

    def stop(self) -> None:
        for plugin_controller in reversed(self.plugin_controllers):
            plugin_controller.stop()
        self.controller.stop()
        self.informers.stop()
        self.writer.stop()
        self.nb.stop()


def settled(zone: Zone, interval: float = 0.3) -> Snapshot:
    """The zone's owned NB rows once they stop changing and its queues are idle."""
    last: list[Snapshot] = [{}]

    def stable() -> Snapshot:  # empty (falsy) until settled
        current = snapshot(zone.nb)
        done = current == last[0] \
            and all(c.queue.idle() for c in zone.controller.controllers()) \
            and all(c.queue.idle() for c in zone.plugin_controllers)
        last[0] = current
        return current if done else {}

    result: Snapshot = wait_until(stable, timeout=30, interval=interval)
    return result


class RunningNadController:
    """The cluster manager's NAD controller alone (network IDs, tunnel keys, the registry)
    on its own informers, for tests of network acceptance; ``stop()`` ends it."""

    def __init__(self, client: KubeClient, config: Config) -> None:
        self.informers = InformerFactory(client, resync_period=0)
        self.ids = IdAllocator("NetworkIDs", MAX_NETWORKS, reserved=(DEFAULT_NETWORK_ID,))
        self.registry = NetworkRegistry()
        self.controller = NadController(client, self.informers, PluginHost.load(config),
                                        EventRecorder(client, "ovnkube-cluster-manager"),
                                        self.registry, self.ids, TunnelKeyAllocator())
        self.informers.start()
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        self.informers.stop()


def cluster_with_nodes(handle: ServerHandle, nodes: int = 2) -> KubeClient:
    """The admin's client of ``handle`` once the CRDs are served and ``nodes`` Nodes exist
    (``ovn-worker``, ``ovn-worker2``, ... with the gateway facts ``ovnk local`` publishes)."""
    admin = with_crds(handle)
    for index in range(nodes):
        name = "ovn-worker" if index == 0 else f"ovn-worker{index + 1}"
        admin.create(NODES, build_node(name, index))
    return admin


def _queue_all(queue: WorkQueue, keys: Iterable[str]) -> None:
    for key in keys:
        queue.add(key)


@dataclass
class ControlPlane:
    """Starts components on ``handle`` and stops every one it started (``stop``)."""

    handle: ServerHandle
    config: Config
    managers: list[ClusterManager] = field(default_factory=list)
    zones: list[Zone] = field(default_factory=list)

    def start_manager(self, identity: str = "t") -> ClusterManager:
        """A cluster manager's controllers, as its service account."""
        client = component_client(self.handle, CLUSTER_MANAGER_USER)
        manager = ClusterManager(self.config, client, PluginHost.load(self.config),
                                 identity=identity)
        manager.start_controllers()
        self.managers.append(manager)
        return manager

    def start_zone(self, nb_remote: str, config: Config | None = None,
                   identity: str = "t") -> Zone:
        """A zone controller writing ``nb_remote``, as its service account."""
        config = config or self.config
        client = component_client(self.handle, CONTROLLER_USER)
        writer = NbWriter([nb_remote]).start()
        informers = InformerFactory(client)
        host = PluginHost.load(config)
        recorder = EventRecorder(client, "ovnkube-controller", identity)
        controller = ZoneController(informers, config, host, writer, recorder)
        context = ZoneContext(config, client, informers, recorder, writer,
                              controller.rendered_network, writer.owners_with_key_prefix,
                              row_exists=lambda table, primary_id: writer.find(
                                  table, primary_id) is not None,
                              primary_network_of_namespace=(
                                  controller.primary_network_of_namespace),
                              reconcile_pods=lambda keys: _queue_all(
                                  controller.pod_controller.queue, keys))
        controller.network_listeners.append(context.networks_changed)
        controller.capability_listeners.append(context.nb_capabilities_changed)
        plugin_controllers = host.contributed_controllers("ovnk_zone_controllers", context)
        informers.start()
        controller.start()
        for plugin_controller in plugin_controllers:
            plugin_controller.start()
        zone = Zone(writer, NbClient([nb_remote]).start(), informers, controller,
                    plugin_controllers)
        self.zones.append(zone)
        return zone

    def stop(self) -> None:
        for zone in self.zones:
            zone.stop()
        for manager in self.managers:
            manager.stop_controllers()
        self.zones.clear()
        self.managers.clear()


__all__ = ["ControlPlane", "RunningNadController", "Zone", "cluster_with_nodes", "settled"]
