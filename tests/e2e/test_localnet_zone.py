"""The zone controller rendering Localnet networks: convergence, restart and deletion.

Two Localnet CUDNs (VLAN 10 with IPAM, untagged without) with pods on two nodes: the NB
rows are upstream's, a restarted zone controller writes nothing, and deleting the CUDNs
leaves none of their rows (rows ovnk does not own are never touched).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from ovnk_local.testing.control_plane import ControlPlane, settled

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import CUDNS, NADS, NAMESPACES, PODS
from ovnk_core.ovn.install import command
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.snapshot import committed_names, difference, snapshot
from ovnk_core.testing.ovsdb_fixtures import OvnStack
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.e2e

ROWS = {"cluster_udn_tagged_ovn_localnet_switch", "cluster_udn_tagged_ovn_localnet_port",
        "cluster_udn_plain_ovn_localnet_switch", "cluster_udn_plain_ovn_localnet_port",
        "phys.tagged_phys_a", "phys.tagged_phys_b", "phys.plain_phys_c"}


def names(nb: NbClient) -> set[str]:
    return committed_names(nb, "Logical_Switch") | committed_names(nb, "Logical_Switch_Port")


def cudn(name: str, localnet: dict[str, object]) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "phys"}},
        "network": {"topology": "Localnet", "localnet": {
            "role": "Secondary", "physicalNetworkName": "physnet1", **localnet}}}}


def test_localnet_networks_converge_restart_quietly_and_leave_nothing(
        client: KubeClient, plane: ControlPlane, ovn_stack: OvnStack) -> None:
    plane.start_manager()
    subprocess.run(command("ovn-nbctl", f"--db={ovn_stack.nb.remote}", "ls-add", "foreign", "--",
                    "lsp-add", "foreign", "foreign-port"), check=True)
    client.create(NAMESPACES, {"metadata": {"name": "phys"}})
    client.create(CUDNS, cudn("tagged", {"vlan": {"mode": "Access", "access": {"id": 10}},
                                         "subnets": ["10.100.10.0/24"],
                                         "excludeSubnets": ["10.100.10.254/32"]}))
    client.create(CUDNS, cudn("plain", {"ipam": {"mode": "Disabled"}}))
    for name, node, network in (("a", "ovn-worker", "tagged"), ("b", "ovn-worker2", "tagged"),
                                ("c", "ovn-worker", "plain")):
        client.create(PODS, {"metadata": {"name": name, "namespace": "phys", "annotations": {
            "k8s.v1.cni.cncf.io/networks": json.dumps([{"name": network}])}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}})
    zone = plane.start_zone(ovn_stack.nb.remote)
    wait_until(lambda: names(zone.nb) >= ROWS, timeout=30)
    before = settled(zone)
    ports = {p.name: p for p in zone.nb.row_list("Logical_Switch_Port")}
    tagged = ports["cluster_udn_tagged_ovn_localnet_port"]
    assert (tagged.type, tagged.tag_request, tagged.options) == (
        "localnet", [10], {"network_name": "physnet1"})
    assert ports["cluster_udn_plain_ovn_localnet_port"].tag_request == []
    [c_address] = ports["phys.plain_phys_c"].addresses
    assert len(c_address.split()) == 1  # MAC only: no IPAM
    assert ports["phys.tagged_phys_a"].addresses[0].split()[1].startswith("10.100.10.")

    # a restart with nothing changed writes nothing
    zone.stop()
    plane.zones.remove(zone)
    zone = plane.start_zone(ovn_stack.nb.remote)
    assert difference(settled(zone), before) == []
    assert zone.writer.transactions == 0

    # deleting the networks (their pods first: a network in use stays) leaves no row of them
    for name in ("a", "b", "c"):
        client.delete(PODS, name, "phys")
    client.delete(CUDNS, "tagged")
    client.delete(CUDNS, "plain")
    wait_until(lambda: not client.list(NADS, "phys")["items"], timeout=30)
    wait_until(lambda: not (ROWS & names(zone.nb)), timeout=30)
    assert not [key for key in snapshot(zone.nb) if "cluster_udn" in key[1]]
    assert {"foreign", "foreign-port"} <= names(zone.nb)
