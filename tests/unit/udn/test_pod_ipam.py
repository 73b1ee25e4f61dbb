"""Pod IPAM by the cluster manager: k8s.ovn.org/pod-networks as upstream writes it."""

from __future__ import annotations

import ipaddress
import json
import time
from collections.abc import Callable
from typing import Any

from ovnk_local.cluster import build_node

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL


def pod(client: KubeClient, namespace: str, name: str, node: str,
        annotations: dict[str, str] | None = None) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": namespace,
                                      "annotations": annotations or {}},
                         "spec": {"nodeName": node,
                                  "containers": [{"name": "c", "image": "agnhost"}]}})


def networks(client: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    raw = (client.get(PODS, name, namespace)["metadata"].get("annotations") or {}).get(
        "k8s.ovn.org/pod-networks")
    result: dict[str, Any] = json.loads(raw) if raw else {}
    return result


def node_subnet(client: KubeClient, node: str, network: str) -> str:
    raw = client.get(NODES, node)["metadata"]["annotations"]["k8s.ovn.org/node-subnets"]
    return str(json.loads(raw)[network][0])


def test_default_network_pod(client: KubeClient, manager: ClusterManager) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "plain"}})
    pod(client, "plain", "p", "ovn-worker")
    entry = wait_until(lambda: networks(client, "plain", "p").get("default"))
    subnet = ipaddress.ip_network(node_subnet(client, "ovn-worker", "default"))
    gateway = str(subnet.network_address + 1)
    ip = ipaddress.ip_interface(entry["ip_addresses"][0])
    assert ip.network == subnet and int(ip.ip) - int(subnet.network_address) >= 3
    assert entry["mac_address"] == "0a:58:" + ":".join(f"{b:02x}" for b in ip.ip.packed)
    assert entry["role"] == "primary" and entry["gateway_ips"] == [gateway]
    assert entry["routes"] == [
        {"dest": "10.244.0.0/16", "nextHop": gateway},
        {"dest": "10.96.0.0/16", "nextHop": gateway},
        {"dest": "169.254.0.5/32", "nextHop": gateway},
        {"dest": "100.64.0.0/16", "nextHop": gateway}]
    assert entry["ip_address"] == entry["ip_addresses"][0] and entry["gateway_ip"] == gateway


def test_primary_udn_pod_gets_two_entries_like_the_seed(client: KubeClient,
                                                        manager: ClusterManager) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "green",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(UDNS, {"metadata": {"name": "green-network", "namespace": "green"},
                         "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
                             {"cidr": "203.203.0.0/16", "hostSubnet": 24}]}}})
    pod(client, "green", "green", "ovn-worker")
    annotation = wait_until(lambda: (lambda n: n if len(n) == 2 else None)(
        networks(client, "green", "green")))
    udn = annotation["green/green-network"]
    subnet = node_subnet(client, "ovn-worker", "green_green-network")
    gateway = str(ipaddress.ip_network(subnet).network_address + 1)
    assert udn["role"] == "primary" and udn["gateway_ips"] == [gateway]
    assert udn["routes"] == [{"dest": "203.203.0.0/16", "nextHop": gateway},
                             {"dest": "10.96.0.0/16", "nextHop": gateway},
                             {"dest": "100.65.0.0/16", "nextHop": gateway}]
    assert list(udn) == ["ip_addresses", "mac_address", "gateway_ips", "routes", "ip_address",
                         "gateway_ip", "role"]
    default = annotation["default"]
    assert default["role"] == "infrastructure-locked" and "gateway_ips" not in default
    default_gw = str(ipaddress.ip_interface(default["ip_addresses"][0]).network.network_address
                     + 1)
    assert default["routes"] == [{"dest": "10.244.0.0/16", "nextHop": default_gw},
                                 {"dest": "100.64.0.0/16", "nextHop": default_gw}]


def test_pod_waits_for_its_primary_network(client: KubeClient, manager: ClusterManager) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "blue",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    pod(client, "blue", "early", "ovn-worker2")
    wait_until(lambda: any(e["reason"] == "ErrorReconcilingPod" and "invalid primary network "
                           'state for namespace "blue"' in e["message"]
                           for e in client.list(EVENTS, "blue")["items"]))
    assert networks(client, "blue", "early") == {}
    client.create(UDNS, {"metadata": {"name": "blue", "namespace": "blue"},
                         "spec": {"topology": "Layer2", "layer2": {
                             "role": "Primary", "subnets": ["10.150.0.0/24"]}}})
    entry = wait_until(lambda: networks(client, "blue", "early").get("blue/blue"),
                       timeout=30)
    assert entry["ip_addresses"] == ["10.150.0.3/24"]  # .1 gateway and .2 management skipped
    # tunnel IDs 1-9 are kept for platform ports (upstream): the first pod gets 10
    assert entry["tunnel_id"] == 10 and entry["gateway_ips"] == ["10.150.0.1"]


def test_a_pod_holding_a_platform_tunnel_id_keeps_it_across_a_restart(
        client: KubeClient, start_manager: Callable[[], ClusterManager]) -> None:
    """Upstream's "upgrade: pods already hold platform IDs": IDs 1-9 are set aside at the
    network's first allocation except those live pods already hold."""
    client.create(NAMESPACES, {"metadata": {"name": "violet",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(UDNS, {"metadata": {"name": "violet", "namespace": "violet"},
                         "spec": {"topology": "Layer2", "layer2": {
                             "role": "Primary", "subnets": ["10.151.0.0/24"]}}})
    first = start_manager()
    try:
        pod(client, "violet", "old", "ovn-worker")
        entry = wait_until(lambda: networks(client, "violet", "old").get("violet/violet"),
                           timeout=30)
    finally:
        first.stop_controllers()
    # an older release gave this pod ID 3: rewrite it so (as that release would have)
    annotation = networks(client, "violet", "old")
    annotation["violet/violet"]["tunnel_id"] = 3
    client.patch(PODS, "old", {"metadata": {"annotations": {
        "k8s.ovn.org/pod-networks": json.dumps(annotation)}}}, "violet")
    second = start_manager()
    try:
        pod(client, "violet", "new", "ovn-worker2")
        new = wait_until(lambda: networks(client, "violet", "new").get("violet/violet"),
                         timeout=30)
        assert new["tunnel_id"] == 10
        assert networks(client, "violet", "old")["violet/violet"]["tunnel_id"] == 3
        assert new["ip_addresses"] != entry["ip_addresses"]
    finally:
        second.stop_controllers()


def test_ips_are_unique_released_and_survive_restart(client: KubeClient,
        start_manager: Callable[[], ClusterManager]) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "ns"}})
    first = start_manager()
    try:
        for index in range(5):
            pod(client, "ns", f"p{index}", "ovn-worker")
        wait_until(lambda: all(networks(client, "ns", f"p{i}") for i in range(5)))
        before = {f"p{i}": networks(client, "ns", f"p{i}")["default"]["ip_addresses"][0]
                  for i in range(5)}
        assert len(set(before.values())) == 5
        client.delete(PODS, "p0", "ns")
    finally:
        first.stop_controllers()
    second = start_manager()
    try:
        for index in range(5, 8):
            pod(client, "ns", f"p{index}", "ovn-worker")
        wait_until(lambda: all(networks(client, "ns", f"p{i}") for i in range(5, 8)))
        after = {f"p{i}": networks(client, "ns", f"p{i}")["default"]["ip_addresses"][0]
                 for i in range(1, 8)}
        assert len(set(after.values())) == 7  # no duplicate across the restart
        assert all(after[k] == before[k] for k in ("p1", "p2", "p3", "p4"))  # never rewritten
    finally:
        second.stop_controllers()


def test_unreadable_annotation_is_reported_not_crashed(client: KubeClient,
                                                       manager: ClusterManager) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "bad"}})
    pod(client, "bad", "broken", "ovn-worker", {"k8s.ovn.org/pod-networks": "{nope"})
    pod(client, "bad", "fine", "ovn-worker")
    wait_until(lambda: networks(client, "bad", "fine"))
    wait_until(lambda: any(e["reason"] == "ErrorReconcilingPod" and "not valid JSON" in
                           e["message"] for e in client.list(EVENTS, "bad")["items"]))


def test_secondary_network_from_the_networks_annotation(client: KubeClient,
                                                        manager: ClusterManager) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "side"}})
    client.create(NADS, {"metadata": {"name": "side-net", "namespace": "side"}, "spec": {
        "config": json.dumps({"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay",
                              "name": "side_side-net", "netAttachDefName": "side/side-net",
                              "topology": "layer2", "role": "secondary",
                              "subnets": "192.168.50.0/24"})}})
    pod(client, "side", "multi", "ovn-worker",
        {"k8s.v1.cni.cncf.io/networks": "side-net"})
    entry = wait_until(lambda: networks(client, "side", "multi").get("side/side-net"))
    assert entry["role"] == "secondary" and "gateway_ips" not in entry and "routes" not in entry
    assert entry["ip_addresses"] == ["192.168.50.1/24"]  # secondary: .1/.2 are not reserved
    assert networks(client, "side", "multi")["default"]["role"] == "primary"
    pod(client, "side", "typo", "ovn-worker", {"k8s.v1.cni.cncf.io/networks": "no-such-net"})
    pod(client, "side", "ok", "ovn-worker")
    wait_until(lambda: networks(client, "side", "ok"))  # one bad pod blocks nobody
    assert networks(client, "side", "typo") == {}


def test_completed_pods_give_their_addresses_back(client: KubeClient,
                                                  manager: ClusterManager) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "jobs"}})
    pod(client, "jobs", "job", "ovn-worker")
    wait_until(lambda: networks(client, "jobs", "job"))
    assert "jobs/job" in manager.pods.held
    client.patch_status(PODS, "job", {"status": {"phase": "Succeeded"}}, "jobs")
    wait_until(lambda: "jobs/job" not in manager.pods.held)
    assert networks(client, "jobs", "job")  # the annotation stays, the address is free


def test_a_pod_on_a_node_without_a_subnet_yet_is_annotated_once_the_node_has_one(
        client: KubeClient, manager: ClusterManager) -> None:
    """Bound to a node the cluster manager has not given a subnet yet, the pod waits; the
    node's new subnet (a node event) brings it its addresses, from that version of the
    node."""
    client.create(NAMESPACES, {"metadata": {"name": "late"}})
    pod(client, "late", "p", "ovn-late")
    time.sleep(1.0)  # the allocator has seen the pod and could not place it
    assert networks(client, "late", "p") == {}
    client.create(NODES, build_node("ovn-late", 9))
    entry = wait_until(lambda: networks(client, "late", "p").get("default"), timeout=30)
    subnet = ipaddress.ip_network(node_subnet(client, "ovn-late", "default"))
    assert ipaddress.ip_interface(entry["ip_addresses"][0]).network == subnet
