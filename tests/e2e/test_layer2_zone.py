"""The zone controller rendering Layer2 networks: convergence, restarts and deletion.

A primary and a secondary Layer2 UDN with pods on two nodes: a restarted zone controller
writes nothing; a third node gets its gateway router and leaves exactly its rows; a
fresh NB rendered from the same cluster equals the churned one; deleting the networks
leaves none of their rows, and rows ovnk does not own are never touched.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from ovnk_local.cluster import build_node
from ovnk_local.testing.control_plane import ControlPlane, Zone, settled

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NADS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.ovn.install import command, schema
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.snapshot import committed_names, difference, snapshot
from ovnk_core.testing.ovsdb_fixtures import OvnStack
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

pytestmark = pytest.mark.e2e

PRIMARY_PORTS = {"l2p.net_l2p_a", "l2p.net_l2p_b"}
SECONDARY_PORTS = {"l2s.side_l2s_c"}


def names(nb: NbClient) -> set[str]:
    return (committed_names(nb, "Logical_Switch") | committed_names(nb, "Logical_Router")
            | committed_names(nb, "Logical_Switch_Port")
            | committed_names(nb, "Logical_Router_Port"))


def create_networks(client: KubeClient) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "l2p",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(NAMESPACES, {"metadata": {"name": "l2s"}})
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "l2p"},
                         "spec": {"topology": "Layer2", "layer2": {
                             "role": "Primary", "subnets": ["10.150.0.0/16"]}}})
    client.create(UDNS, {"metadata": {"name": "side", "namespace": "l2s"},
                         "spec": {"topology": "Layer2", "layer2": {
                             "role": "Secondary", "subnets": ["10.151.0.0/24"]}}})
    for namespace, name, node, selections in (
            ("l2p", "a", "ovn-worker", {}), ("l2p", "b", "ovn-worker2", {}),
            ("l2s", "c", "ovn-worker", {"k8s.v1.cni.cncf.io/networks": "side"})):
        client.create(PODS, {"metadata": {"name": name, "namespace": namespace,
                                          "annotations": selections},
                             "spec": {"nodeName": node,
                                      "containers": [{"name": "c", "image": "agnhost"}]}})


def test_layer2_networks_converge_restart_quietly_and_leave_nothing(
        client: KubeClient, plane: ControlPlane, ovn_stack: OvnStack, tmp_path: Path) -> None:
    manager: ClusterManager = plane.start_manager()
    assert manager is not None
    start_zone: Callable[..., Zone] = plane.start_zone
    subprocess.run(command("ovn-nbctl", f"--db={ovn_stack.nb.remote}", "ls-add", "foreign", "--",
                    "lsp-add", "foreign", "foreign-port"), check=True)
    create_networks(client)
    zone = start_zone(ovn_stack.nb.remote)
    wait_until(lambda: PRIMARY_PORTS | SECONDARY_PORTS | {
        "GR_l2p_net_ovn-worker", "GR_l2p_net_ovn-worker2", "l2p_net_transit_router",
        "l2s_side_ovn_layer2_switch"} <= names(zone.nb), timeout=30)
    before = settled(zone)

    # a restart with nothing changed writes nothing
    zone.stop()
    zone = start_zone(ovn_stack.nb.remote)
    assert difference(settled(zone), before) == []
    assert zone.writer.transactions == 0

    # a third node gets its gateway router in the primary network, and leaves exactly it
    client.create(NODES, build_node("ovn-worker3", 2))
    wait_until(lambda: {"GR_l2p_net_ovn-worker3", "trtor-GR_l2p_net_ovn-worker3"}
               <= names(zone.nb), timeout=30)
    client.delete(NODES, "ovn-worker3")
    wait_until(lambda: not any("ovn-worker3" in name for name in names(zone.nb)), timeout=30)
    assert difference(settled(zone), before) == []

    # a fresh NB rendered by a fresh controller from the same cluster is identical
    clean_nb = OvsdbServer("clean-nb", tmp_path / "clean", schema("ovn-nb")).start()
    try:
        clean = start_zone(clean_nb.remote)
        wait_until(lambda: len(snapshot(clean.nb)) == len(before), timeout=30)
        assert difference(settled(clean), before) == []
        clean.stop()
    finally:
        clean_nb.stop()

    # deleting the networks (their pods first: a network in use stays) leaves no row of them
    for namespace, pod in (("l2p", "a"), ("l2p", "b"), ("l2s", "c")):
        client.delete(PODS, pod, namespace)
    client.delete(UDNS, "net", "l2p")
    client.delete(UDNS, "side", "l2s")
    wait_until(lambda: not client.list(NADS, "l2p")["items"] and
               not client.list(NADS, "l2s")["items"], timeout=30)
    wait_until(lambda: not any("l2p" in name or "l2s" in name for name in names(zone.nb)),
               timeout=30)
    assert not [key for key in snapshot(zone.nb) if "l2p" in key[1] or "l2s" in key[1]]
    assert {"foreign", "foreign-port"} <= names(zone.nb)
