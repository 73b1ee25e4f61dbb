"""Persistent IPs: a pod's addresses held by its IPAMClaim, as upstream keeps them.

A cluster manager with ``--enable-persistent-ips`` and a primary Layer2 UDN whose
``ipam.lifecycle`` is ``Persistent`` (a /29: four addresses for pods, so reuse shows).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import CUDNS, EVENTS, IPAMCLAIMS, NAMESPACES, PODS, UDNS
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.managers import managers
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

CONFIG = udn_config(enable_persistent_ips="true")
NAD = "vm/net"
NETWORK = "vm_net"


@pytest.fixture
def start(client: KubeClient) -> Iterator[Callable[[], ClusterManager]]:
    yield from managers(client, CONFIG)


def setup(client: KubeClient, persistent: bool = True) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "vm",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    layer2: dict[str, Any] = {"role": "Primary", "subnets": ["10.160.0.0/29"]}
    if persistent:
        layer2["ipam"] = {"lifecycle": "Persistent"}
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "vm"},
                         "spec": {"topology": "Layer2", "layer2": layer2}})


def claim(client: KubeClient, name: str, network: str = NETWORK) -> None:
    client.create(IPAMCLAIMS, {"metadata": {"name": name, "namespace": "vm"},
                               "spec": {"network": network, "interface": "ovn-udn1"}}, "vm")


def pod(client: KubeClient, name: str, node: str = "ovn-worker", claim_name: str = "") -> None:
    annotations = {"v1.multus-cni.io/default-network": json.dumps(
        {"name": "default", "namespace": "ovn-kubernetes",
         "ipam-claim-reference": claim_name})} if claim_name else {}
    client.create(PODS, {"metadata": {"name": name, "namespace": "vm",
                                      "annotations": annotations},
                         "spec": {"nodeName": node,
                                  "containers": [{"name": "c", "image": "agnhost"}]}}, "vm")


def ips(client: KubeClient, name: str) -> list[str] | None:
    raw = (client.get(PODS, name, "vm")["metadata"].get("annotations") or {}).get(
        "k8s.ovn.org/pod-networks")
    entry = json.loads(raw).get(NAD) if raw else None
    return list(entry["ip_addresses"]) if entry else None


def warnings(client: KubeClient, pod_name: str) -> list[str]:
    return [e["message"] for e in client.list(EVENTS, "vm")["items"]
            if e["involvedObject"].get("name") == pod_name and e["type"] == "Warning"]


def claim_status(client: KubeClient, name: str) -> dict[str, Any]:
    status: dict[str, Any] = client.get(IPAMCLAIMS, name, "vm").get("status") or {}
    return status


def test_a_claim_keeps_its_ips_across_pods_and_frees_them_when_deleted(
        client: KubeClient, start: Callable[[], ClusterManager]) -> None:
    setup(client)
    start()
    claim(client, "vm1")
    pod(client, "virt-launcher-a", claim_name="vm1")
    first = wait_until(lambda: ips(client, "virt-launcher-a"), timeout=30)
    status = wait_until(lambda: claim_status(client, "vm1").get("ips") and
                        claim_status(client, "vm1"), timeout=10)
    assert status["ips"] == first and status["ownerPod"] == {"name": "virt-launcher-a"}
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"],
            condition["message"]) == ("IPsAllocated", "True", "SuccessfulAllocation",
                                      "IP addresses successfully allocated")

    # the pod goes (migration): its addresses stay the claim's; other pods fill the rest
    client.delete(PODS, "virt-launcher-a", "vm")
    for index in range(3):
        pod(client, f"other{index}")
    others = [wait_until(lambda i=index: ips(client, f"other{i}"), timeout=30)  # type: ignore[misc]
              for index in range(3)]
    assert first not in others
    pod(client, "late")  # the subnet is full: it waits, and is told why
    wait_until(lambda: "failed to allocate an address on network vm_net: subnet "
               "10.160.0.0/29 is full: no address left for vm/late|vm/net" in
               warnings(client, "late"), timeout=10)
    # the VM's next pod, on another node, gets the claim's addresses again
    pod(client, "virt-launcher-b", node="ovn-worker2", claim_name="vm1")
    assert wait_until(lambda: ips(client, "virt-launcher-b"), timeout=30) == first
    assert claim_status(client, "vm1")["ownerPod"] == {"name": "virt-launcher-a"}  # upstream
    assert ips(client, "late") is None

    # the claim goes with the VM: once its pod is gone too, the address is free again
    client.delete(PODS, "virt-launcher-b", "vm")
    client.delete(IPAMCLAIMS, "vm1", "vm")
    assert wait_until(lambda: ips(client, "late"), timeout=60) == first


def test_claim_ips_survive_a_cluster_manager_restart(
        client: KubeClient, start: Callable[[], ClusterManager]) -> None:
    setup(client)
    manager = start()
    claim(client, "vm1")
    pod(client, "virt-launcher-a", claim_name="vm1")
    first = wait_until(lambda: ips(client, "virt-launcher-a"), timeout=30)
    wait_until(lambda: claim_status(client, "vm1").get("ips"), timeout=10)
    manager.stop_controllers()
    client.delete(PODS, "virt-launcher-a", "vm")
    start()  # no pod names the claim now: its status alone keeps the addresses
    for index in range(4):
        pod(client, f"other{index}")
    wait_until(lambda: sum(ips(client, f"other{i}") is not None for i in range(4)) == 3,
               timeout=30)
    got = [ips(client, f"other{i}") for i in range(4)]
    assert first not in got


def test_a_missing_or_foreign_claim_is_said_and_waited_for(
        client: KubeClient, start: Callable[[], ClusterManager]) -> None:
    setup(client)
    start()
    pod(client, "a", claim_name="nope")
    wait_until(lambda: 'failed to get IPAMClaim vm/nope: ipamclaims "nope" not found' in
               warnings(client, "a"), timeout=30)
    assert ips(client, "a") is None
    claim(client, "nope")
    assert wait_until(lambda: ips(client, "a"), timeout=30)
    claim(client, "elsewhere", network="other_net")
    pod(client, "b", claim_name="elsewhere")
    wait_until(lambda: "IPAMClaim vm/elsewhere is for network 'other_net', not vm_net" in
               warnings(client, "b"), timeout=30)
    assert ips(client, "b") is None


def test_a_network_without_persistent_ips_ignores_the_reference(
        client: KubeClient, start: Callable[[], ClusterManager]) -> None:
    setup(client, persistent=False)
    start()
    pod(client, "a", claim_name="vm1")  # no such claim, and none needed
    assert wait_until(lambda: ips(client, "a"), timeout=30)
    pod(client, "b", claim_name="vm1")
    assert wait_until(lambda: ips(client, "b"), timeout=30)
    client.delete(PODS, "a", "vm")
    client.delete(PODS, "b", "vm")


def test_a_claim_with_unusable_status_ips_is_refused_not_trusted(
        client: KubeClient, start: Callable[[], ClusterManager]) -> None:
    """status.ips is written by the cluster manager; whatever else is found there (garbage,
    or another network's address) is a Warning on the pod, never an address handed out."""
    setup(client)
    start()
    for name, ips_value in (("garbage", ["not-an-ip"]), ("outside", ["10.99.0.3/24"])):
        claim(client, name)
        client.patch_status(IPAMCLAIMS, name, {"status": {"ips": ips_value}}, "vm")
        pod(client, f"p-{name}", claim_name=name)
    wait_until(lambda: "IPAMClaim vm/garbage: status.ips entry 'not-an-ip' is not an address "
               "with a prefix length" in warnings(client, "p-garbage"), timeout=30)
    wait_until(lambda: any("10.99.0.3/24 is not in the subnets of network vm_net" in m
                           for m in warnings(client, "p-outside")), timeout=30)
    assert ips(client, "p-garbage") is None and ips(client, "p-outside") is None
    assert claim_status(client, "outside")["ips"] == ["10.99.0.3/24"]  # not wiped


def test_a_localnet_network_keeps_a_claims_ips_too(client: KubeClient,
                                                   start: Callable[[], ClusterManager]) -> None:
    """The claim support is topology-neutral: a secondary Localnet CUDN with
    ``ipam.lifecycle: Persistent``, the claim named by the pod's selection element."""
    client.create(NAMESPACES, {"metadata": {"name": "vm"}})
    client.create(CUDNS, {"metadata": {"name": "phys"}, "spec": {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "vm"}},
        "network": {"topology": "Localnet", "localnet": {
            "role": "Secondary", "physicalNetworkName": "physnet1",
            "subnets": ["10.100.10.0/29"], "ipam": {"lifecycle": "Persistent"}}}}})
    start()
    claim(client, "vm1", network="cluster_udn_phys")

    def localnet_pod(name: str, node: str) -> None:
        client.create(PODS, {"metadata": {"name": name, "namespace": "vm", "annotations": {
            "k8s.v1.cni.cncf.io/networks": json.dumps([{
                "name": "phys", "namespace": "vm", "ipam-claim-reference": "vm1"}])}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}},
            "vm")

    def localnet_ips(name: str) -> list[str] | None:
        raw = (client.get(PODS, name, "vm")["metadata"].get("annotations") or {}).get(
            "k8s.ovn.org/pod-networks")
        entry = json.loads(raw).get("vm/phys") if raw else None
        return list(entry["ip_addresses"]) if entry else None

    localnet_pod("virt-launcher-a", "ovn-worker")
    first = wait_until(lambda: localnet_ips("virt-launcher-a"), timeout=30)
    assert wait_until(lambda: claim_status(client, "vm1").get("ips"), timeout=10) == first
    client.delete(PODS, "virt-launcher-a", "vm")
    localnet_pod("virt-launcher-b", "ovn-worker2")
    assert wait_until(lambda: localnet_ips("virt-launcher-b"), timeout=30) == first
