"""Dynamic UDN node allocation with real packets in ``ovnk local``.

A cluster started with ``--enable-dynamic-udn-allocation --udn-deletion-grace-period=3s``:
a primary Layer3 UDN whose only pod is on ovn-worker has no subnet, no NB rows and no
management port on ovn-worker2; a first pod there becomes Ready and pings its peer; after its
deletion and the grace period, ovn-worker2's subnet, rows and management port are gone and
the UDN's condition says one node again.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.settings import ComponentSettings
from ovnk_local.testing.dataplane import kubectl, require_dataplane, wait_pods_ready

from ovnk_core.ovn.install import command
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
SWITCH2 = "blue_net_ovn-worker2"


def pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "blue"},
            "spec": {"nodeName": node, "containers": [{
                "name": "netexec", "image": AGNHOST, "args": ["netexec", "--http-port=8080"]}]}}


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("dynamic") / ".ovnk")
    settings = ComponentSettings(given={"enable_dynamic_udn_allocation": "true",
                                        "udn_deletion_grace_period": "3s"})
    local.up(nodes=2, timeout=90, dataplane=True, settings=settings, physical_networks=[])
    try:
        apply(local, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "blue", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
              {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
               "metadata": {"name": "net", "namespace": "blue"},
               "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
                   {"cidr": "107.107.0.0/16", "hostSubnet": 24}]}}},
              pod("a", "ovn-worker"))
        wait_pods_ready(local, "blue")
        yield local
    finally:
        local.down()


def nbctl(cluster: LocalCluster, *args: str) -> str:
    return subprocess.run(command("ovn-nbctl", f"--db=unix:{cluster.nb_socket}", *args),
                          capture_output=True, text=True, check=True).stdout


def has_switch(cluster: LocalCluster, name: str) -> bool:
    return bool(nbctl(cluster, "--bare", "--columns=name", "find", "Logical_Switch",
                      f"name={name}").strip())


def subnet_nodes(cluster: LocalCluster) -> set[str]:
    nodes = json.loads(kubectl(cluster, "get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"] for n in nodes if "blue_net" in json.loads(
        n["metadata"]["annotations"].get("k8s.ovn.org/node-subnets", "{}"))}


def management_ports(cluster: LocalCluster, node: str) -> set[str]:
    netns = cluster.dataplane.node(node, 0).netns
    links = json.loads(subprocess.run(["ip", "-n", netns, "-j", "link"], capture_output=True,
                                      text=True, check=True).stdout)
    return {link["ifname"] for link in links if link["ifname"].startswith("ovn-k8s-mp")
            and link["ifname"] != "ovn-k8s-mp0"}


def condition(cluster: LocalCluster) -> str:
    udn = json.loads(kubectl(cluster, "get", "udn", "-n", "blue", "net", "-o", "json").stdout)
    return next((c["message"] for c in udn.get("status", {}).get("conditions", [])
                 if c["type"] == "NodesSelected"), "")


def udn_ip(cluster: LocalCluster, name: str) -> str:
    annotation = json.loads(kubectl(cluster, "get", "pod", "-n", "blue", name, "-o", "json")
                            .stdout)["metadata"]["annotations"]["k8s.ovn.org/pod-networks"]
    return str(json.loads(annotation)["blue/net"]["ip_addresses"][0].split("/")[0])


def test_a_node_gets_a_udn_with_its_first_pod_and_loses_it_after_the_grace_period(
        cluster: LocalCluster) -> None:
    wait_until(lambda: condition(cluster) == "1 node(s) rendered with network", timeout=60)
    assert subnet_nodes(cluster) == {"ovn-worker"}
    assert not has_switch(cluster, SWITCH2)
    assert management_ports(cluster, "ovn-worker2") == set()
    assert management_ports(cluster, "ovn-worker") != set()

    apply(cluster, pod("b", "ovn-worker2"))
    wait_pods_ready(cluster, "blue")
    assert has_switch(cluster, SWITCH2) and subnet_nodes(cluster) == {"ovn-worker",
                                                                       "ovn-worker2"}
    a_ip = udn_ip(cluster, "a")
    wait_until(lambda: kubectl(cluster, "exec", "-n", "blue", "b", "--", "ping", "-c", "1",
                               "-W", "1", a_ip, check=False).returncode == 0, timeout=60,
               what="the new pod on ovn-worker2 reaching its peer on ovn-worker")
    wait_until(lambda: condition(cluster) == "2 node(s) rendered with network", timeout=30)
    wait_until(lambda: management_ports(cluster, "ovn-worker2") != set(), timeout=30)

    kubectl(cluster, "delete", "pod", "-n", "blue", "b", "--wait=true")
    wait_until(lambda: not has_switch(cluster, SWITCH2), timeout=60,
               what="ovn-worker2's rows gone after the grace period")
    wait_until(lambda: subnet_nodes(cluster) == {"ovn-worker"}, timeout=30)
    wait_until(lambda: management_ports(cluster, "ovn-worker2") == set(), timeout=30,
               what="ovn-worker2's management port gone")
    wait_until(lambda: condition(cluster) == "1 node(s) rendered with network", timeout=30)
    # the pod that stayed still works
    assert kubectl(cluster, "exec", "-n", "blue", "a", "--", "ping", "-c", "1", "-W", "1",
                   a_ip, check=False).returncode == 0
