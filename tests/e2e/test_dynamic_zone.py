"""Dynamic UDN node allocation in the cluster manager and the zone: a UDN's node subnet
and node rows exist only where its pods are, appear with a node's first pod, and go a grace
period after its last.

Both run with ``--enable-dynamic-udn-allocation --udn-deletion-grace-period=1s`` (the
dynamic plugin's ``ovnk_network_activity``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.control_plane import ControlPlane, settled

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.snapshot import committed_names
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import OvnStack
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

pytestmark = pytest.mark.e2e
DYNAMIC = udn_config(enable_dynamic_udn_allocation="true", udn_deletion_grace_period="1s")
WORKER, WORKER2 = "blue_net_ovn-worker", "blue_net_ovn-worker2"


@pytest.fixture
def dynamic(client: KubeClient, kube_apiserver: ServerHandle) -> Iterator[ControlPlane]:
    running = ControlPlane(kube_apiserver, DYNAMIC)
    yield running
    running.stop()


def subnet_nodes(client: KubeClient) -> set[str]:
    """The nodes with a subnet of blue's network."""
    return {node["metadata"]["name"] for node in client.list(NODES)["items"]
            if "blue_net" in json.loads((node["metadata"].get("annotations") or {}).get(
                "k8s.ovn.org/node-subnets", "{}"))}


def nodes_selected(client: KubeClient) -> tuple[str, str, str] | None:
    udn = client.get(UDNS, "net", "blue")
    for condition in (udn.get("status") or {}).get("conditions") or []:
        if condition["type"] == "NodesSelected":
            return condition["status"], condition["reason"], condition["message"]
    return None


def events(client: KubeClient, reason: str) -> list[str]:
    return [e["message"] for e in client.list(EVENTS, "blue")["items"]
            if e["reason"] == reason and e["involvedObject"]["kind"] == "UserDefinedNetwork"]


def switches(nb: NbClient) -> set[str]:
    return committed_names(nb, "Logical_Switch")


def blue_udn(client: KubeClient) -> None:
    """Namespace ``blue`` with its primary Layer3 UDN ``net`` (network ``blue_net``)."""
    client.create(NAMESPACES, {"metadata": {"name": "blue",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "blue"},
                         "spec": {"topology": "Layer3", "layer3": {
                             "role": "Primary", "subnets": [{"cidr": "10.150.0.0/16",
                                                             "hostSubnet": 24}]}}})


def pod(client: KubeClient, name: str, node: str) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": "blue"},
                         "spec": {"nodeName": node,
                                  "containers": [{"name": "c", "image": "agnhost"}]}})


def test_a_udns_node_rows_follow_its_pods_with_a_grace_period(
        client: KubeClient, dynamic: ControlPlane, ovn_stack: OvnStack) -> None:
    plane = dynamic
    manager = plane.start_manager()
    blue_udn(client)
    pod(client, "a", "ovn-worker")
    zone = plane.start_zone(ovn_stack.nb.remote, DYNAMIC)

    def rendered_nodes() -> float | None:
        value: float | None = manager.registry.get_sample_value(
            "ovnkube_clustermanager_udn_nodes_rendered", {"network_name": "blue_net"})
        return value
    wait_until(lambda: WORKER in switches(zone.nb), timeout=30)
    settled(zone)
    assert WORKER2 not in switches(zone.nb)
    assert subnet_nodes(client) == {"ovn-worker"}
    wait_until(lambda: nodes_selected(client) == (
        "True", "DynamicAllocation", "1 node(s) rendered with network"), timeout=30)
    assert not [n for n in committed_names(zone.nb, "Logical_Router") if "ovn-worker2" in n
                and n.startswith(("GR_blue", "blue"))]
    # the default network is everywhere
    assert {"ovn-worker", "ovn-worker2"} <= switches(zone.nb)

    # a first pod on ovn-worker2: its node rows appear, and its port on them
    pod(client, "b", "ovn-worker2")
    wait_until(lambda: WORKER2 in switches(zone.nb), timeout=30)
    wait_until(lambda: "blue.net_blue_b" in committed_names(zone.nb, "Logical_Switch_Port"),
               timeout=30)
    assert subnet_nodes(client) == {"ovn-worker", "ovn-worker2"}
    wait_until(lambda: nodes_selected(client) == (
        "True", "DynamicAllocation", "2 node(s) rendered with network"), timeout=30)
    assert "network blue_net rendered on node ovn-worker2" in events(
        client, "NetworkActivatedOnNode")
    assert rendered_nodes() == 2.0

    # a restart with nothing changed writes nothing
    before = settled(zone)
    zone.stop()
    plane.zones.remove(zone)
    zone = plane.start_zone(ovn_stack.nb.remote, DYNAMIC)
    assert settled(zone) == before
    assert zone.writer.transactions == 0

    # its last pod goes: the rows stay for the grace period, then go
    client.delete(PODS, "b", "blue")
    wait_until(lambda: "blue.net_blue_b" not in committed_names(zone.nb, "Logical_Switch_Port"),
               timeout=30)
    assert WORKER2 in switches(zone.nb)
    time.sleep(0.2)
    wait_until(lambda: WORKER2 not in switches(zone.nb), timeout=30)
    assert WORKER in switches(zone.nb)
    wait_until(lambda: subnet_nodes(client) == {"ovn-worker"}, timeout=30)
    wait_until(lambda: nodes_selected(client) == (
        "True", "DynamicAllocation", "1 node(s) rendered with network"), timeout=30)
    assert events(client, "NetworkDeactivatedOnNode") == [
        "network blue_net no longer rendered on node ovn-worker2: unused there for the grace "
        "period"]


def test_a_restart_in_the_grace_period_neither_loses_nor_leaks_the_node(
        client: KubeClient, kube_apiserver: ServerHandle, ovn_stack: OvnStack) -> None:
    # the cluster manager has the same grace period: once it frees the node's subnet the
    # zone removes the switch whatever its own clock says
    slow = udn_config(enable_dynamic_udn_allocation="true", udn_deletion_grace_period="4s")
    plane = ControlPlane(kube_apiserver, slow)
    try:
        plane.start_manager()
        blue_udn(client)
        pod(client, "a", "ovn-worker")
        pod(client, "b", "ovn-worker2")
        zone = plane.start_zone(ovn_stack.nb.remote)
        wait_until(lambda: {WORKER, WORKER2} <= switches(zone.nb), timeout=30)
        settled(zone)
        zone.stop()
        plane.zones.remove(zone)
        started = time.monotonic()  # the grace period cannot start before the pod is gone
        client.delete(PODS, "b", "blue")  # while the zone is down
        zone = plane.start_zone(ovn_stack.nb.remote)
        settled(zone)
        kept = WORKER2 in switches(zone.nb)  # read first: the clock is checked after it
        if time.monotonic() - started < 3:
            assert kept  # it may still be in its grace period
        wait_until(lambda: WORKER2 not in switches(zone.nb), timeout=30)  # then not leaked
        assert WORKER in switches(zone.nb)
    finally:
        plane.stop()


def test_a_cluster_manager_restart_in_the_grace_period_keeps_then_frees_the_subnet(
        client: KubeClient, kube_apiserver: ServerHandle) -> None:
    slow = ControlPlane(kube_apiserver, udn_config(enable_dynamic_udn_allocation="true",
                                                   udn_deletion_grace_period="4s"))
    try:
        manager = slow.start_manager()
        blue_udn(client)
        pod(client, "a", "ovn-worker")
        pod(client, "b", "ovn-worker2")
        wait_until(lambda: subnet_nodes(client) == {"ovn-worker", "ovn-worker2"}, timeout=30)
        manager.stop_controllers()
        slow.managers.remove(manager)
        client.delete(PODS, "b", "blue")  # while no cluster manager runs
        slow.start_manager()
        started = time.monotonic()
        time.sleep(1.0)
        if time.monotonic() - started < 3:  # within the grace period: kept
            assert subnet_nodes(client) == {"ovn-worker", "ovn-worker2"}
        wait_until(lambda: subnet_nodes(client) == {"ovn-worker"}, timeout=30)  # not leaked
    finally:
        slow.stop()
