"""The zone controller while OVN Northbound is down: not ready (saying why), a pod it cannot
wire (or unwire) gets one Warning event saying why, and once NB is back it is ready again
and writes that pod's ports at once.

The zone process (``ZoneApp``, its own identity) writes an NB server of its own that the
test stops and starts again on the same database file, as ``ovnk local``'s supervisor
restarts a dead one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import component_client
from ovnk_local.testing.control_plane import ControlPlane

from ovnk_core.identities import CONTROLLER_USER
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.resources import EVENTS, NAMESPACES, PODS
from ovnk_core.ovn.install import schema
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.readiness import not_ready_file, not_ready_reason
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import nbctl
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.app import ZoneApp

pytestmark = pytest.mark.e2e


@dataclass
class RunningZone:
    app: ZoneApp
    server: OvsdbServer
    ready_file: Path


@pytest.fixture
def zone(plane: ControlPlane, kube_apiserver: ServerHandle, tmp_path: Path
         ) -> Iterator[RunningZone]:
    plane.start_manager()
    server = OvsdbServer("nb", tmp_path, schema("ovn-nb")).start()
    config = udn_config()
    app = ZoneApp(config, component_client(kube_apiserver, CONTROLLER_USER),
                  PluginHost.load(config), NbWriter([server.remote], timeout=10).start(),
                  identity="t")
    ready_file = tmp_path / "run" / "controller.ready"
    stop = threading.Event()
    runner = threading.Thread(target=app.run, args=(stop, ready_file), daemon=True)
    runner.start()
    try:
        yield RunningZone(app, server, ready_file)
    finally:
        stop.set()
        runner.join(timeout=30)
        server.stop()


def pod(client: KubeClient, name: str) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": "outage"},
                         "spec": {"nodeName": "ovn-worker",
                                  "containers": [{"name": "c", "image": "agnhost"}]}}, "outage")


def ports(server: OvsdbServer) -> set[str]:
    return set(nbctl(server.remote, "--bare", "--columns=name", "list",
                     "Logical_Switch_Port").split())


def warnings_on(client: KubeClient, name: str) -> list[JSON]:
    return [event for event in client.list(EVENTS, namespace="outage")["items"]
            if event["involvedObject"]["name"] == name and event["type"] == "Warning"]


def test_nb_down_means_not_ready_and_a_pod_event_and_nb_back_wires_the_pod(
        client: KubeClient, zone: RunningZone) -> None:
    wait_until(zone.ready_file.exists, timeout=60, what="zone controller ready")
    client.create(NAMESPACES, {"metadata": {"name": "outage"}})
    pod(client, "before")
    wait_until(lambda: "outage_before" in ports(zone.server), timeout=30)

    zone.server.stop()
    reason = wait_until(lambda: not zone.ready_file.exists()
                        and not_ready_reason(zone.ready_file), timeout=15,
                        what="not ready with a reason")
    assert reason.startswith(f"cannot reach OVN Northbound at {zone.server.remote}: "), reason

    pod(client, "during")
    pods = zone.app.zone.pod_controller
    events = wait_until(lambda: warnings_on(client, "during"), timeout=30,
                        what="a Warning event on the pod")
    assert [(e["reason"], e["message"].split(": ", 1)[0]) for e in events] == [
        ("ErrorAddingResource", "failed to add the logical ports of pod outage/during")]
    assert "cannot reach OVN Northbound" in events[0]["message"]
    # it waits for NB, retried, without spending its failure budget or repeating the event
    waited = pods.stats.not_ready
    wait_until(lambda: pods.stats.not_ready >= waited + 3, timeout=30,
               what="three more retries")
    assert pods.failures("outage/during") == 0 and not pods.stats.slow_lane
    assert [e.get("count") for e in warnings_on(client, "during")] == [1]
    assert not zone.ready_file.exists()
    # a pod whose ports must go (it completed) says that they cannot
    client.patch_status(PODS, "before", {"status": {"phase": "Succeeded"}}, "outage")
    events = wait_until(lambda: warnings_on(client, "before"), timeout=30,
                        what="a Warning event on the completed pod")
    assert [(e["reason"], e["message"].split(": ", 1)[0]) for e in events] == [
        ("ErrorDeletingResource", "failed to delete the logical ports of pod outage/before")]

    zone.server.start()  # the same database file, as the supervisor restarts it
    wait_until(zone.ready_file.exists, timeout=15, what="ready again")
    assert not not_ready_file(zone.ready_file).exists()
    # retried at once, not after the backoff they had grown meanwhile
    wait_until(lambda: (lambda names: "outage_during" in names
                        and "outage_before" not in names)(ports(zone.server)), timeout=5,
               what="the new pod wired, the completed one's ports gone")
    assert len(warnings_on(client, "during")) == 1
