"""Wiring of the zone-controller process (upstream: ovnkube-controller).

Connects to the zone's Northbound database and the Kubernetes API, builds
the zone controller on shared informers, serves metrics, and runs until
asked to stop.  One zone controller runs per zone; in single-zone mode (as
``ovnk local`` runs it) that is one for the cluster.

It is ready (``--ready-file``, ``ovnk_core.readiness``) while it can write
NB: checked every ``HEALTH_INTERVAL`` seconds (a round trip when no write is
in flight).  While NB cannot be reached it says so as its reason for not
being ready, and its controllers' keys wait (``NotReady``) instead of failing;
once NB answers again every waiting or failing key is reconciled at once.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterable
from pathlib import Path

from prometheus_client import CollectorRegistry

from ovnk_core.config import Config
from ovnk_core.contexts import ZoneContext
from ovnk_core.errors import ConfigError
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import EventRecorder, undecodable_reporter
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.metrics import ControllerCollector, serve_metrics
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.readiness import ReadyFile
from ovnk_core.zone.controller import ZoneController

log = logging.getLogger(__name__)

COMPONENT = "ovnkube-controller"
HEALTH_INTERVAL = 1.0  # seconds between checks that NB can be written
HEALTH_TIMEOUT = 5.0  # seconds NB may take to answer a check


class ZoneApp:
    def __init__(self, config: Config, client: KubeClient, host: PluginHost, nb: NbWriter,
                 identity: str | None = None) -> None:
        self.config = config
        self.nb = nb
        self.identity = identity or socket.gethostname()
        self.recorder = EventRecorder(client, COMPONENT, self.identity)
        # an object no informer can decode is a Warning event on it, and skipped
        self.informers = InformerFactory(client,
                                         on_undecodable=undecodable_reporter(self.recorder))
        self.zone = ZoneController(self.informers, config, host, nb, self.recorder)
        self.context = ZoneContext(config, client, self.informers, self.recorder, nb,
                                   self.zone.rendered_network,
                                   nb.owners_with_key_prefix,
                                   row_exists=lambda table, primary_id: nb.find(
                                       table, primary_id) is not None,
                                   primary_network_of_namespace=(
                                       self.zone.primary_network_of_namespace),
                                   reconcile_pods=self._reconcile_pods,
                                   node_switches=self.zone.node_switches)
        self.zone.network_listeners.append(self.context.networks_changed)
        self.zone.capability_listeners.append(self.context.nb_capabilities_changed)
        self.plugin_controllers: list[Controller] = host.contributed_controllers(
            "ovnk_zone_controllers", self.context)
        self.registry = CollectorRegistry()
        self.registry.register(ControllerCollector(self.controllers))

    def _reconcile_pods(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.zone.pod_controller.queue.add(key)

    def run(self, stop: threading.Event, ready_file: Path | None = None) -> None:
        """Run until ``stop`` is set.

        :raises InformersNotSynced: the informers did not sync within
            ``--informer-sync-timeout`` (the process exits non-zero with the reason).
        """
        server = None
        readiness = ReadyFile(ready_file, f"zone controller {self.identity}")
        if self.config.metrics_bind_address:
            server = serve_metrics(self.registry, self.config.metrics_bind_address)
        try:
            self.informers.start()
            self.informers.wait_for_sync(self.config.informer_sync_timeout)
            self.zone.start()
            for controller in self.plugin_controllers:
                controller.start()
            log.info("zone controller %s: running against %s", self.identity, self.nb.remote)
            self.serve_readiness(stop, readiness)
        finally:
            for controller in self.plugin_controllers:
                controller.stop()
            self.zone.stop()
            self.informers.stop()
            self.nb.stop()
            if server is not None:
                server.shutdown()
            readiness.clear()

    def controllers(self) -> list[Controller]:
        return [*self.zone.controllers(), *self.plugin_controllers]

    def serve_readiness(self, stop: threading.Event, readiness: ReadyFile,
                        interval: float = HEALTH_INTERVAL) -> None:
        """Until ``stop``: ready while NB can be written; when it can again after it could
        not, every waiting or failing key is reconciled at once."""
        reachable = True
        while True:
            problem = self.nb.check(HEALTH_TIMEOUT)
            if problem is None:
                if not reachable:
                    queued = sum(c.retry_waiting() for c in self.controllers())
                    log.info("OVN Northbound is reachable again; reconciling %d waiting "
                             "key(s)", queued)
                readiness.ready("running")
            else:
                readiness.not_ready(problem)
            reachable = problem is None
            if stop.wait(interval):
                return


def build_zone_app(config: Config) -> ZoneApp:
    if not config.nb_address:
        raise ConfigError("the zone controller needs --nb-address (the zone's OVN Northbound)")
    host = PluginHost.load(config)
    client = KubeClient(api_client_from_kubeconfig(config.kubeconfig))
    nb = NbWriter(list(config.nb_address)).start()
    return ZoneApp(config, client, host, nb)
