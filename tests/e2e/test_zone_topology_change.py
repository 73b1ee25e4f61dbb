"""A network whose NAD changes topology loses every row of the old topology in NB.

The cluster manager keeps the network (same name, same ID); the zone controller
must not leave the Layer3 router, node switches and pod ports behind when the
network's definition becomes one that renders differently (here Layer2: one switch,
and the pod's Layer3-era entry, which has no tunnel ID, is refused there) — and renders
them again, and nothing of Layer2, when it changes back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ovnk_local.testing.control_plane import ControlPlane

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NADS, NAMESPACES, PODS
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.snapshot import committed_names
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.controller import ZoneController

pytestmark = pytest.mark.e2e

PREFIX = "blue_side_"  # the network blue_side's OVN names
PORT = "blue.side_blue_p"  # its pod port (NAD key blue/side)


@pytest.fixture
def running(client: KubeClient, plane: ControlPlane, nb_server: OvsdbServer,
            ovn_nb: NbClient) -> ZoneController:
    client.create(NAMESPACES, {"metadata": {"name": "blue"}})
    plane.start_manager()
    return plane.start_zone(nb_server.remote).controller


def netconf(topology: str, subnets: str) -> str:
    return json.dumps({"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay",
                       "name": "blue_side", "netAttachDefName": "blue/side",
                       "topology": topology, "role": "secondary", "subnets": subnets})


def network_rows(nb: NbClient) -> set[str]:
    names = committed_names(nb, "Logical_Switch") | committed_names(nb, "Logical_Router")
    ports = committed_names(nb, "Logical_Switch_Port") | committed_names(
        nb, "Logical_Router_Port")
    return {n for n in names if n.startswith(PREFIX)} | \
        {n for n in ports if PREFIX in n or n == PORT}


def set_topology(client: KubeClient, topology: str, subnets: str) -> None:
    current: dict[str, Any] = client.get(NADS, "side", "blue")
    current["spec"]["config"] = netconf(topology, subnets)
    client.update(NADS, current)


def test_layer3_rows_go_when_the_nad_becomes_layer2(client: KubeClient,
                                                    running: ZoneController,
                                                    ovn_nb: NbClient) -> None:
    client.create(NADS, {"metadata": {"name": "side", "namespace": "blue"},
                         "spec": {"config": netconf("layer3", "10.50.0.0/16/24")}})
    client.create(PODS, {"metadata": {"name": "p", "namespace": "blue", "annotations": {
        "k8s.v1.cni.cncf.io/networks": "side"}}, "spec": {
        "nodeName": "ovn-worker", "containers": [{"name": "c", "image": "agnhost"}]}})
    layer3 = {f"{PREFIX}ovn_cluster_router", f"{PREFIX}ovn-worker", f"{PREFIX}ovn-worker2",
              f"rtos-{PREFIX}ovn-worker", f"stor-{PREFIX}ovn-worker", PORT}
    wait_until(lambda: layer3 <= network_rows(ovn_nb), timeout=30)

    set_topology(client, "layer2", "10.50.0.0/24")
    layer2 = {f"{PREFIX}ovn_layer2_switch"}
    wait_until(lambda: network_rows(ovn_nb) == layer2, timeout=30)
    assert "ovn_cluster_router" in committed_names(ovn_nb, "Logical_Router")  # default stays

    set_topology(client, "layer3", "10.50.0.0/16/24")  # back: rendered again, pod port too
    wait_until(lambda: layer3 <= network_rows(ovn_nb), timeout=30)
    wait_until(lambda: not layer2 & network_rows(ovn_nb), timeout=30)
