"""A network whose topology plugin is left out keeps its ID, says why, and loses its rows.

Layer2 networks (a UDN's, with a pod on it, and a hand-written NAD's) are rendered by a
cluster manager and a zone controller that load every topology.  Both are then restarted
with ``--topologies=layer3``, as an operator leaving the plugin out (or uninstalling it)
would:

* OVN: every row of both networks is gone (the zone removes them at start, as a disabled
  feature's), and nothing else changed;
* IDs: each network keeps its ID (its NAD still carries it, the cluster manager holds it):
  a network created now gets another one, never an ID the old rows carried;
* the NADs and the UDN carry a Warning ``NetworkNotRendered`` naming the missing topology;
  the UDN's ``NetworkCreated`` stays true (its NAD exists);
* deleting the networks releases their IDs.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.control_plane import ControlPlane

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, PODS, UDNS
from ovnk_core.ovn.nb import NbClient, committed_external_ids
from ovnk_core.ovn.ownership import ID_KEY, OWNER_CONTROLLER_KEY
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.snapshot import OWNED_TABLES, Snapshot, snapshot
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.controller import ZoneController

pytestmark = pytest.mark.e2e

UDN_NETWORK = "blue_side"   # UDN blue/side
HAND_NETWORK = "green_hand"  # NAD green/hand, written by hand
NOT_RENDERED = "NetworkNotRendered"
MESSAGE = ('network {network} is not rendered: no enabled topology plugin provides topology '
           '"layer2" (plugins that render into OVN: layer3); its pods get no network')


def layer2_netconf(network: str, nad_key: str, subnets: str) -> str:
    return json.dumps({"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": network,
                       "netAttachDefName": nad_key, "topology": "layer2",
                       "role": "secondary", "subnets": subnets})


def layer3_nad(namespace: str, name: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"config": json.dumps({
        "cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": f"{namespace}_{name}",
        "netAttachDefName": f"{namespace}/{name}", "topology": "layer3",
        "role": "secondary", "subnets": "10.70.0.0/16/24"})}}


def rows_of(nb: NbClient, network: str) -> list[str]:
    """Every row the network's controller owns, as ``table:id``."""
    controller = f"{network}-network-controller"
    found = []
    for table in OWNED_TABLES:
        for row in nb.row_list(table):
            ids = committed_external_ids(row) or {}
            if ids.get(OWNER_CONTROLLER_KEY) == controller:
                found.append(f"{table}:{ids.get(ID_KEY)}")
    return sorted(found)


def others(nb: NbClient) -> Snapshot:
    """Every owned row that belongs to neither network."""
    ours = {f"{network}-network-controller" for network in (UDN_NETWORK, HAND_NETWORK)}
    return {key: row for key, row in snapshot(nb).items()
            if not any(key[1].startswith(f"{controller}:") for controller in ours)}


def network_id(client: KubeClient, namespace: str, name: str) -> int | None:
    annotations = client.get(NADS, name, namespace)["metadata"].get("annotations") or {}
    raw = annotations.get("k8s.ovn.org/network-id")
    return int(raw) if raw else None


def warnings(client: KubeClient, namespace: str, kind: str, name: str) -> list[str]:
    return sorted({event["message"] for event in client.list(EVENTS, namespace)["items"]
                   if event["involvedObject"]["kind"] == kind
                   and event["involvedObject"]["name"] == name
                   and event["type"] == "Warning" and event["reason"] == NOT_RENDERED})


def settled(zone: ZoneController) -> bool:
    return all(controller.queue.idle() for controller in zone.controllers())


def test_a_left_out_topology_keeps_ids_warns_and_loses_its_rows(
        client: KubeClient, plane: ControlPlane, kube_apiserver: ServerHandle,
        nb_server: OvsdbServer, ovn_nb: NbClient) -> None:
    for namespace in ("blue", "green", "red"):
        client.create(NAMESPACES, {"metadata": {"name": namespace}})
    plane.start_manager()
    zone = plane.start_zone(nb_server.remote).controller
    client.create(UDNS, {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
                         "metadata": {"name": "side", "namespace": "blue"},
                         "spec": {"topology": "Layer2", "layer2": {
                             "role": "Secondary", "subnets": ["10.50.0.0/24"]}}})
    client.create(NADS, {"metadata": {"name": "hand", "namespace": "green"}, "spec": {
        "config": layer2_netconf(HAND_NETWORK, "green/hand", "10.60.0.0/24")}})
    client.create(PODS, {"metadata": {"name": "p", "namespace": "blue", "annotations": {
        "k8s.v1.cni.cncf.io/networks": "side"}}, "spec": {
        "nodeName": "ovn-worker", "containers": [{"name": "c", "image": "agnhost"}]}})
    wait_until(lambda: any(row.startswith("Logical_Switch_Port:")
                           for row in rows_of(ovn_nb, UDN_NETWORK)),
               timeout=30, what="the UDN's pod port")
    wait_until(lambda: rows_of(ovn_nb, HAND_NETWORK), timeout=30)
    ids = {UDN_NETWORK: network_id(client, "blue", "side"),
           HAND_NETWORK: network_id(client, "green", "hand")}
    assert None not in ids.values()
    wait_until(lambda: settled(zone))
    kept = others(ovn_nb)
    nad_before = client.get(NADS, "side", "blue")
    plane.stop()

    # Restarted without the layer2 plugin.
    without = ControlPlane(kube_apiserver, udn_config(topologies="layer3"))
    try:
        manager = without.start_manager()
        zone = without.start_zone(nb_server.remote).controller
        wait_until(lambda: not rows_of(ovn_nb, UDN_NETWORK) and not rows_of(
            ovn_nb, HAND_NETWORK), timeout=30, what="the left-out networks' rows removed")
        wait_until(lambda: settled(zone))
        assert others(ovn_nb) == kept

        # Each network keeps its ID: a new network gets another one.
        for network, namespace, name in ((UDN_NETWORK, "blue", "side"),
                                         (HAND_NETWORK, "green", "hand")):
            assert network_id(client, namespace, name) == ids[network]
            wait_until(lambda network=network: manager.network_ids.get(network) == ids[network],
                       timeout=10, what=f"{network}'s ID held")
        client.create(NADS, layer3_nad("red", "fresh"))
        fresh = wait_until(lambda: network_id(client, "red", "fresh"), timeout=30)
        assert fresh not in ids.values()
        wait_until(lambda: rows_of(ovn_nb, "red_fresh"), timeout=30)

        # Why they are not rendered, where users look.
        wait_until(lambda: warnings(client, "green", "NetworkAttachmentDefinition", "hand")
                   == [MESSAGE.format(network=HAND_NETWORK)], timeout=30)
        wait_until(lambda: warnings(client, "blue", "NetworkAttachmentDefinition", "side")
                   == [MESSAGE.format(network=UDN_NETWORK)], timeout=30)
        wait_until(lambda: warnings(client, "blue", "UserDefinedNetwork", "side")
                   == [MESSAGE.format(network=UDN_NETWORK)], timeout=30)
        udn = client.get(UDNS, "side", "blue")
        [created] = [c for c in udn["status"]["conditions"] if c["type"] == "NetworkCreated"]
        assert (created["status"], created["reason"]) == ("True",
                                                          "NetworkAttachmentDefinitionCreated")
        nad_after = client.get(NADS, "side", "blue")  # left as it is
        assert (nad_after["spec"], nad_after["metadata"]["resourceVersion"]) == (
            nad_before["spec"], nad_before["metadata"]["resourceVersion"])

        # Deleting the networks releases their IDs.
        client.delete(PODS, "p", "blue")
        client.delete(UDNS, "side", "blue")
        client.delete(NADS, "hand", "green")
        for network in (UDN_NETWORK, HAND_NETWORK):
            wait_until(lambda network=network: manager.network_ids.get(network) is None,
                       timeout=30, what=f"{network}'s ID released")
        assert manager.network_ids.get("red_fresh") == fresh
    finally:
        without.stop()
