"""Node IDs and per-network host subnets written on nodes by the whole cluster manager."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ovnk_core.allocators.ids import IdAllocationError
from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.conditions import get_condition
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, NODES, UDNS
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL


def node_subnets(client: KubeClient, name: str) -> dict[str, list[str]]:
    raw = (client.get(NODES, name)["metadata"].get("annotations") or {}).get(
        "k8s.ovn.org/node-subnets")
    result: dict[str, list[str]] = json.loads(raw) if raw else {}
    return result


def node_id(client: KubeClient, name: str) -> str | None:
    value = (client.get(NODES, name)["metadata"].get("annotations") or {}).get(
        "k8s.ovn.org/node-id")
    return str(value) if value is not None else None


def udn(client: KubeClient, namespace: str, cidr: str, host_subnet: int) -> None:
    client.create(NAMESPACES, {"metadata": {"name": namespace,
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(UDNS, {"metadata": {"name": namespace, "namespace": namespace},
                         "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
                             {"cidr": cidr, "hostSubnet": host_subnet}]}}})


def test_nodes_get_ids_and_subnets_per_network(client: KubeClient,
                                               manager: ClusterManager) -> None:
    wait_until(lambda: node_subnets(client, "ovn-worker2").get("default"))
    default = {node_subnets(client, n)["default"][0] for n in ("ovn-worker", "ovn-worker2")}
    assert default == {"10.244.0.0/24", "10.244.1.0/24"}
    assert {node_id(client, "ovn-worker"), node_id(client, "ovn-worker2")} == {"2", "3"}
    udn(client, "blue", "10.100.0.0/16", 24)
    wait_until(lambda: all("blue_blue" in node_subnets(client, n)
                           for n in ("ovn-worker", "ovn-worker2")))
    assert sorted(node_subnets(client, n)["blue_blue"][0]
                  for n in ("ovn-worker", "ovn-worker2")) == ["10.100.0.0/24", "10.100.1.0/24"]
    nad = client.get(NADS, "blue", "blue")
    assert nad["metadata"]["annotations"]["k8s.ovn.org/network-id"] == "1"
    client.create(NODES, {"metadata": {"name": "ovn-worker3"}})
    wait_until(lambda: node_subnets(client, "ovn-worker3").get("blue_blue") == [
        "10.100.2.0/24"])


def test_exhaustion_fails_one_network_on_one_node_only(client: KubeClient,
                                                       manager: ClusterManager) -> None:
    udn(client, "tiny", "10.123.0.0/24", 25)  # two /25 slices for three nodes
    client.create(NODES, {"metadata": {"name": "ovn-worker3"}})
    wait_until(lambda: sum("tiny_tiny" in node_subnets(client, n)
                           for n in ("ovn-worker", "ovn-worker2", "ovn-worker3")) == 2)

    def allocation_condition() -> dict[str, Any] | None:
        return get_condition(client.get(UDNS, "tiny", "tiny"), "NetworkAllocationSucceeded")

    condition = wait_until(allocation_condition)
    assert condition["status"] == "False" and condition["reason"] == "InternalError"
    assert condition["message"].startswith("Network allocation failed for at least one node: "
                                           "ovn-worker")
    starved = next(n for n in ("ovn-worker", "ovn-worker2", "ovn-worker3")
                   if "tiny_tiny" not in node_subnets(client, n))
    assert node_subnets(client, starved)["default"]  # the node itself is served
    events = [e for e in client.list(EVENTS, "tiny")["items"]
              if e["reason"] == "NetworkAllocationFailed"]
    assert events and events[0]["message"].startswith(f"Error occurred for node {starved}: "
                                                      "error allocating network tiny_tiny")
    client.delete(NODES, next(n for n in ("ovn-worker", "ovn-worker2", "ovn-worker3")
                              if n != starved))
    wait_until(lambda: "tiny_tiny" in node_subnets(client, starved))
    wait_until(lambda: (allocation_condition() or {}).get("status") == "True")


def test_restart_keeps_every_allocation(client: KubeClient,
        start_manager: Callable[[], ClusterManager]) -> None:
    first = start_manager()
    try:
        udn(client, "blue", "10.100.0.0/16", 24)
        wait_until(lambda: all("blue_blue" in node_subnets(client, n)
                               for n in ("ovn-worker", "ovn-worker2")))
        before = {n: (node_id(client, n), node_subnets(client, n))
                  for n in ("ovn-worker", "ovn-worker2")}
        rv = {n: client.get(NODES, n)["metadata"]["resourceVersion"] for n in before}
    finally:
        first.stop_controllers()
    client.delete(NODES, "ovn-worker")  # gone while nobody watched
    client.create(NODES, {"metadata": {"name": "ovn-worker4"}})
    second = start_manager()
    try:
        wait_until(lambda: node_subnets(client, "ovn-worker4").get("blue_blue"))
        assert (node_id(client, "ovn-worker2"), node_subnets(client, "ovn-worker2")) == \
            before["ovn-worker2"]
        assert client.get(NODES, "ovn-worker2")["metadata"]["resourceVersion"] == \
            rv["ovn-worker2"]  # nothing rewritten
        fresh = node_subnets(client, "ovn-worker4")
        assert fresh["blue_blue"][0] not in before["ovn-worker2"][1]["blue_blue"]
    finally:
        second.stop_controllers()


def test_node_ids_that_cannot_be_kept_are_renumbered_at_start_before_new_nodes(
        client: KubeClient, start_manager: Callable[[], ClusterManager]) -> None:
    """Upstream's ``syncNodeIDs``: at start every node keeps the ID it carries (one beyond
    today's allocation range too); a node whose ID is another node's or reserved (0, 1)
    gets a new one right away, before nodes without an ID get theirs; an annotation that
    is no number counts as none."""
    for name, annotated in (("a-new", None), ("b-keeps", "3"), ("c-duplicate", "3"),
                            ("d-reserved", "1"), ("e-older-release", "60000"),
                            ("f-junk", "x")):
        annotations = {"k8s.ovn.org/node-id": annotated} if annotated else {}
        client.create(NODES, {"metadata": {"name": name, "annotations": annotations}})
    start_manager()
    names = ("a-new", "b-keeps", "c-duplicate", "d-reserved", "e-older-release", "f-junk",
             "ovn-worker", "ovn-worker2")
    wait_until(lambda: all((node_id(client, n) or "x").isdigit() for n in names))
    ids = {n: int(str(node_id(client, n))) for n in names}
    assert (ids["b-keeps"], ids["c-duplicate"], ids["d-reserved"],
            ids["e-older-release"]) == (3, 2, 4, 60000)
    assert {ids[n] for n in ("a-new", "f-junk", "ovn-worker", "ovn-worker2")} == {5, 6, 7, 8}


def test_new_node_ids_stay_in_upstreams_range(client: KubeClient,
                                             manager: ClusterManager) -> None:
    """Upstream's allocator hands out node IDs 2..5000 (``maxNodeIDs``), round robin."""
    wait_until(lambda: node_id(client, "ovn-worker") and node_id(client, "ovn-worker2"))
    taken = {int(str(node_id(client, n))) for n in ("ovn-worker", "ovn-worker2")}
    allocator = manager.nodes.node_ids
    handed = [allocator.allocate(f"node-{index}") for index in range(4997)]
    assert sorted(handed) == [i for i in range(2, 5001) if i not in taken]
    with pytest.raises(IdAllocationError, match="NodeIDs: no ID left for one-too-many"):
        allocator.allocate("one-too-many")


def transit_addresses(client: KubeClient, name: str) -> str | None:
    value = (client.get(NODES, name)["metadata"].get("annotations") or {}).get(
        "k8s.ovn.org/node-transit-switch-port-ifaddr")
    return str(value) if value is not None else None


def test_nodes_get_their_transit_switch_addresses_from_their_ids(
        client: KubeClient, manager: ClusterManager) -> None:
    """Upstream's node allocation controller: the transit subnet's base + the node ID, in
    upstream's JSON, for each IP family of the cluster (IPv4 here)."""
    wait_until(lambda: transit_addresses(client, "ovn-worker") and
               transit_addresses(client, "ovn-worker2"))
    for name in ("ovn-worker", "ovn-worker2"):
        assert transit_addresses(client, name) == \
            f'{{"ipv4":"100.88.0.{node_id(client, name)}/16"}}'
