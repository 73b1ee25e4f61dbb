"""Wiring of the zone-controller process (upstream: ovnkube-controller).

Connects to the zone's Northbound database and the Kubernetes API, builds
the zone controller on shared informers, serves metrics, and runs until
asked to stop.  One zone controller runs per zone; in single-zone mode (as
``ovnk local`` runs it) that is one for the cluster.
"""

from __future__ import annotations

import logging
import socket
import threading
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
from ovnk_core.zone.controller import ZoneController

log = logging.getLogger(__name__)

COMPONENT = "ovnkube-controller"


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
                                       table, primary_id) is not None)
        self.zone.network_listeners.append(self.context.networks_changed)
        self.plugin_controllers: list[Controller] = host.contributed_controllers(
            "ovnk_zone_controllers", self.context)
        self.registry = CollectorRegistry()
        self.registry.register(ControllerCollector(
            lambda: [*self.zone.controllers(), *self.plugin_controllers]))

    def run(self, stop: threading.Event, ready_file: Path | None = None) -> None:
        """Run until ``stop`` is set.

        :raises InformersNotSynced: the informers did not sync within
            ``--informer-sync-timeout`` (the process exits non-zero with the reason).
        """
        server = None
        if self.config.metrics_bind_address:
            server = serve_metrics(self.registry, self.config.metrics_bind_address)
        try:
            self.informers.start()
            self.informers.wait_for_sync(self.config.informer_sync_timeout)
            self.zone.start()
            for controller in self.plugin_controllers:
                controller.start()
            log.info("zone controller %s: running against %s", self.identity, self.nb.remote)
            if ready_file is not None:
                ready_file.parent.mkdir(parents=True, exist_ok=True)
                ready_file.write_text("running\n")
            stop.wait()
        finally:
            for controller in self.plugin_controllers:
                controller.stop()
            self.zone.stop()
            self.informers.stop()
            self.nb.stop()
            if server is not None:
                server.shutdown()
            if ready_file is not None:
                ready_file.unlink(missing_ok=True)


def build_zone_app(config: Config) -> ZoneApp:
    if not config.nb_address:
        raise ConfigError("the zone controller needs --nb-address (the zone's OVN Northbound)")
    host = PluginHost.load(config)
    client = KubeClient(api_client_from_kubeconfig(config.kubeconfig))
    nb = NbWriter(list(config.nb_address)).start()
    return ZoneApp(config, client, host, nb)
