"""Hook ``ovnk_zone_controllers``: when the zone-controller process calls it, with what, and
what a ``ConfigError`` from it does (the process never starts: one line, exit code 2)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from ovnk_local.apiserver.security import SecurityOptions, admin_kubeconfig
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import component_client
from ovnk_local.testing.control_plane import cluster_with_nodes

from ovnk_core import ConfigError, hookimpl
from ovnk_core.contexts import ZoneContext
from ovnk_core.identities import CONTROLLER_USER
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.resources import NODES
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.app import ZoneApp

REFUSAL = "podset needs a Northbound with the Address_Set table"


def zone_running(app: ZoneApp | None) -> bool:
    """Whether the zone's own controllers have their workers running."""
    if app is None:
        return False
    workers = [thread for controller in app.zone.controllers()
               for thread in controller._threads]
    return bool(workers) and all(thread.is_alive() for thread in workers)


class Recording(Controller):
    """A contributed controller that notes whether the zone ran when it started and stopped."""

    def __init__(self, log: list[tuple[str, bool]], zone: Callable[[], ZoneApp | None]
                 ) -> None:
        super().__init__("contributed", lambda key: log.append((f"reconcile {key}", True)),
                         initial_sync=lambda: log.append(("started", zone_running(zone()))))
        self.log = log
        self.zone = zone

    def stop(self) -> None:
        self.log.append(("stopped", zone_running(self.zone())))
        super().stop()


class Refuser:
    @hookimpl
    def ovnk_zone_controllers(self) -> list[Controller]:  # a subset of the arguments
        raise ConfigError(REFUSAL)


def test_hook_ovnk_zone_controllers(kube_apiserver: ServerHandle, nb_server: OvsdbServer,
                                    ovn_nb: NbClient, tmp_path: Path) -> None:
    cluster_with_nodes(kube_apiserver)
    calls: list[ZoneContext] = []
    log: list[tuple[str, bool]] = []
    networks: list[str] = []
    apps: list[ZoneApp] = []

    class Contributor:
        @hookimpl
        def ovnk_zone_controllers(self, context: ZoneContext) -> list[Controller]:
            calls.append(context)
            controller = Recording(log, lambda: apps[0] if apps else None)
            controller.watch(context.informers.get(NODES))  # shared with the zone's
            context.on_networks_changed(networks.append)
            return [controller]

    config = udn_config()
    host = PluginHost.load(config)
    host.manager.register(Contributor())
    nb = NbWriter([nb_server.remote]).start()
    app = ZoneApp(config, component_client(kube_apiserver, CONTROLLER_USER), host, nb,
                  identity="t")
    apps.append(app)
    # Called once, while the process is built, with the zone's own parts; nothing runs.
    [context] = calls
    assert isinstance(context, ZoneContext)
    assert (context.config, context.nb, context.informers, context.recorder) == (
        config, nb, app.informers, app.recorder)
    assert context.rendered_network("default") is None
    # the contributor's one controller, beside those of the enabled bundled features
    assert len([c for c in app.plugin_controllers if isinstance(c, Recording)]) == 1
    assert log == []

    stop = threading.Event()
    ready = tmp_path / "ready"
    runner = threading.Thread(target=app.run, args=(stop, ready), daemon=True)
    runner.start()
    try:
        wait_until(ready.exists, timeout=30)
        # Started after the zone's own controllers (informers synced: it saw the nodes).
        assert log[0] == ("started", True)
        wait_until(lambda: {("reconcile ovn-worker", True), ("reconcile ovn-worker2", True)}
                   <= set(log))
        # Hears about the networks the zone renders, and reads them as rendered.
        wait_until(lambda: "default" in networks, timeout=30)
        rendered = context.rendered_network("default")
        assert rendered is not None and rendered.netinfo.name == "default"
    finally:
        stop.set()
        runner.join(timeout=30)
    assert not runner.is_alive()
    assert log[-1] == ("stopped", True)  # stopped before the zone's own controllers
    assert not zone_running(app)
    assert len(calls) == 1

    # A ConfigError from the hook: the process is not built, with the plugin's message.
    refusing = PluginHost.load(config)
    refusing.manager.register(Refuser())
    writer = NbWriter([nb_server.remote]).start()
    try:
        with pytest.raises(ConfigError, match=f"^plugin Refuser: {REFUSAL}$"):
            ZoneApp(config, component_client(kube_apiserver, CONTROLLER_USER), refusing,
                    writer, identity="t")
    finally:
        writer.stop()


# ``ovnk`` in a fresh interpreter, with a plugin whose hook refuses registered by every
# PluginHost.load of the process.
REFUSING_OVNK = """
import sys
from ovnk_core import ConfigError, hookimpl
from ovnk_core.cli.main import main
from ovnk_core.plugins import PluginHost

class Refuser:
    @hookimpl
    def ovnk_zone_controllers(self):
        raise ConfigError(sys.argv[1])

load = PluginHost.load.__func__

def load_with_refuser(cls, config):
    host = load(cls, config)
    host.manager.register(Refuser())
    return host

PluginHost.load = classmethod(load_with_refuser)
sys.exit(main(sys.argv[2:]))
"""


def test_a_config_error_from_the_hook_aborts_ovnk_controller_at_startup(
        kube_apiserver: ServerHandle, cluster_pki: SecurityOptions, nb_server: OvsdbServer,
        ovn_nb: NbClient, tmp_path: Path) -> None:
    kubeconfig = admin_kubeconfig(cluster_pki.client_ca_file.parent, kube_apiserver.url,
                                  tmp_path / "kubeconfig")
    ready = tmp_path / "ready"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVNK_")}
    result = subprocess.run(
        [sys.executable, "-c", REFUSING_OVNK, REFUSAL, "controller", "--nb-address",
         nb_server.remote, "--k8s-kubeconfig", str(kubeconfig), "--ready-file", str(ready)],
        capture_output=True, text=True, timeout=60, env=env, check=False)
    assert result.returncode == 2, result.stderr
    # the operator sees which plugin refused
    assert result.stderr.splitlines()[-1] == f"ovnk controller: plugin Refuser: {REFUSAL}"
    assert "Traceback" not in result.stderr
    assert not ready.exists()
