"""Wiring of the cluster-manager process.

Builds, from the configuration, everything the cluster manager runs: the
plugin host, the Kubernetes client and shared informers, the event recorder,
the UDN/CUDN controllers (with network segmentation) and the metrics; then
runs them behind leader election so that only one replica acts at a time.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from prometheus_client import CollectorRegistry

from ovnk_core.allocators.ids import IdAllocator
from ovnk_core.allocators.tunnel_keys import TunnelKeyAllocator
from ovnk_core.annotations.network_id import DEFAULT_NETWORK_ID, MAX_NETWORKS
from ovnk_core.clustermanager.nad_controller import NadController
from ovnk_core.clustermanager.network_catalog import DefaultNetworkOnly, NetworkCatalog
from ovnk_core.clustermanager.node_allocator import NodeAllocator
from ovnk_core.clustermanager.pod_ipam import PodAllocator
from ovnk_core.config import Config
from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.kube.client import JSON, KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import EventRecorder, undecodable_reporter
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.leader import LeaderElector
from ovnk_core.metrics import ControllerCollector, GaugeFromCache, serve_metrics
from ovnk_core.networks.registry import NetworkRegistry
from ovnk_core.plugins import PluginHost
from ovnk_core.udn import nad as nadlib
from ovnk_core.udn.controller import UdnControllers
from ovnk_core.udn.sections import UdnSections

log = logging.getLogger(__name__)

COMPONENT = "ovnkube-cluster-manager"
LEASE_NAMESPACE = "ovn-kubernetes"


class ClusterManager:
    def __init__(self, config: Config, client: KubeClient, host: PluginHost,
                 identity: str | None = None) -> None:
        self.config = config
        self.client = client
        self.host = host
        self.identity = identity or socket.gethostname()
        self.recorder = EventRecorder(client, COMPONENT, self.identity)
        # an object no informer can decode is a Warning event on it, and skipped
        self.informers = InformerFactory(client,
                                         on_undecodable=undecodable_reporter(self.recorder))
        self.registry = CollectorRegistry()
        self.registry_networks = NetworkRegistry()
        self.network_ids = IdAllocator("NetworkIDs", MAX_NETWORKS, reserved=(DEFAULT_NETWORK_ID,))
        self.nad: NadController | None = None
        catalog: NetworkCatalog = DefaultNetworkOnly()
        if config.enable_multi_network:
            self.nad = catalog = NadController(client, self.informers, host, self.recorder,
                                               self.registry_networks, self.network_ids,
                                               TunnelKeyAllocator())
        # where each network is active (every node, unless a plugin filters nodes per
        # network: hook ovnk_network_activity): node subnets only there
        self.activity = host.network_activity(self.informers)
        # the allocators wait for the catalog: no allocation on a partial view of networks
        self.nodes = NodeAllocator(client, self.informers, config, self.registry_networks,
                                   self.recorder, catalog, self.activity)
        self.pods = PodAllocator(client, self.informers, config, self.registry_networks,
                                 self.recorder, catalog, host.topology)
        self.context = ClusterManagerContext(config, client, self.informers, self.recorder,
                                             self.registry_networks, activity=self.activity,
                                             metrics=self.registry)
        if self.nad is not None:
            self.nad.listeners.append(lambda _network: self.nodes.networks_changed())
            self.nad.listeners.append(lambda _network: self.pods.networks_changed())
            self.nad.listeners.append(self.context.networks_changed)
        self.plugin_controllers: list[Controller] = host.contributed_controllers(
            "ovnk_cluster_manager_controllers", self.context)
        self.udn: UdnControllers | None = None
        if config.enable_network_segmentation:
            udn = self.udn = UdnControllers(client, self.informers, config, host, self.recorder)
            self.registry.register(GaugeFromCache(
                "ovnkube_clustermanager_user_defined_networks",
                "The total number of UserDefinedNetworks in the cluster",
                ["role", "topology"], lambda: self._count(udn.udns.items(), udn.sections)))
            self.registry.register(GaugeFromCache(
                "ovnkube_clustermanager_cluster_user_defined_networks",
                "The total number of ClusterUserDefinedNetworks in the cluster",
                ["role", "topology"], lambda: self._count(udn.cudns.items(), udn.sections)))
        self.registry.register(ControllerCollector(self.controllers))
        self._metrics_server: object | None = None
        self._running = threading.Event()

    @staticmethod
    def _count(objects: Iterable[JSON], sections: UdnSections,
               ) -> list[tuple[tuple[str, ...], float]]:
        """Networks by role and topology; the role read by the sections this cluster
        manager loaded (a topology none of them owns counts with an empty role)."""
        counts: Counter[tuple[str, str]] = Counter()
        for obj in objects:
            if obj["metadata"].get("deletionTimestamp"):
                continue
            spec = nadlib.network_spec_of(obj)
            topology = str(spec.get("topology", ""))
            role = str(nadlib.topology_config(spec, sections).get("role", ""))
            counts[(role, topology)] += 1
        return [((role, topology), float(n)) for (role, topology), n in sorted(counts.items())]

    def controllers(self) -> list[Controller]:
        result = [self.nodes.controller, self.pods.controller]
        if self.nad is not None:
            result.append(self.nad.controller)
        if self.udn is not None:
            result += [self.udn.udn_controller, self.udn.cudn_controller]
        return result + self.plugin_controllers

    def start_controllers(self) -> None:
        """Start the informers and, once they synced, every controller.

        :raises InformersNotSynced: not within ``--informer-sync-timeout``; the message
            says which resources and why (the caller exits, its supervisor restarts it).
        """
        self.informers.start()
        self.informers.wait_for_sync(self.config.informer_sync_timeout)
        if self.nad is not None:
            self.nad.start()
        self.activity.start()
        self.nodes.start()
        self.pods.start()
        if self.udn is not None:
            self.udn.start()
        for controller in self.plugin_controllers:
            controller.start()
        self._running.set()
        log.info("cluster manager %s: controllers running", self.identity)

    def stop_controllers(self) -> None:
        self.activity.stop()
        for controller in self.plugin_controllers:
            controller.stop()
        if self.udn is not None:
            self.udn.stop()
        self.pods.stop()
        self.nodes.stop()
        if self.nad is not None:
            self.nad.stop()
        self.informers.stop()
        self._running.clear()

    def run(self, stop: threading.Event, ready_file: Path | None = None) -> None:
        """Serve metrics, campaign for the lease, run controllers while leading."""
        if self.config.metrics_bind_address:
            self._metrics_server = serve_metrics(self.registry, self.config.metrics_bind_address)
        lost = threading.Event()
        failed = threading.Event()
        failures: list[Exception] = []

        def start_leading() -> None:
            try:
                self.start_controllers()
            except Exception as exc:
                log.exception("cluster manager %s: controllers could not start", self.identity)
                failures.append(exc)
                failed.set()

        elector = LeaderElector(self.client, COMPONENT, LEASE_NAMESPACE, self.identity,
                                on_started=start_leading, on_stopped=lost.set)
        elector.start()
        while not stop.is_set():
            if self._running.is_set() and ready_file is not None and not ready_file.exists():
                ready_file.parent.mkdir(parents=True, exist_ok=True)
                ready_file.write_text("leader\n")
            if lost.is_set() or failed.is_set():
                log.error("cluster manager %s %s; exiting so a fresh process can campaign "
                          "again", self.identity,
                          "lost its lease" if lost.is_set() else "could not start")
                break
            stop.wait(0.2)
        elector.stop()
        self.stop_controllers()
        if ready_file is not None:
            ready_file.unlink(missing_ok=True)
        if failures:
            raise failures[0]  # the process exits non-zero with the reason


def build_cluster_manager(config: Config) -> ClusterManager:
    host = PluginHost.load(config)
    client = KubeClient(api_client_from_kubeconfig(config.kubeconfig))
    return ClusterManager(config, client, host)
