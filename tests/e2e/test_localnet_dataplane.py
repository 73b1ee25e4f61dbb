"""Localnet with real packets in ``ovnk local``: pods on the physical network ``physnet1``.

On the shared cluster (2 nodes, real dataplane, ``shared_cluster``, the default physical network
``physnet1``: a VLAN-aware segment with a host at 10.100.0.254 untagged, 10.100.10.254 on
VLAN 10 and 10.100.20.254 on VLAN 20).  In namespace ``phys`` (a primary Layer3 UDN of
its own) three ClusterUserDefinedNetworks put pods on it: ``vlan10`` (VLAN 10, IPAM from
10.100.10.0/24 less the host), ``vlan20`` (VLAN 20, the same subnet: another segment of
the same wire, pods ``c`` and ``e``) and ``raw`` (untagged, no IPAM: the pod sets its own address).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.testing.dataplane import kubectl, wait_pods_ready

from ovnk_core.ovn.install import command
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
HOST_VLAN10, HOST_UNTAGGED = "10.100.10.254", "10.100.0.254"
WORKSHOP = Path(__file__).resolve().parents[2] / "examples" / "workshop"


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def cudn(name: str, localnet: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "k8s.ovn.org/v1", "kind": "ClusterUserDefinedNetwork",
            "metadata": {"name": name},
            "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name":
                                                           "phys"}},
                     "network": {"topology": "Localnet", "localnet": {
                         "role": "Secondary", "physicalNetworkName": "physnet1",
                         **localnet}}}}


def pod(name: str, node: str, network: str, interface: str = "") -> dict[str, Any]:
    selection: dict[str, Any] = {"name": network, "namespace": "phys"}
    if interface:
        selection["interface"] = interface
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "phys", "annotations": {
                "k8s.v1.cni.cncf.io/networks": json.dumps([selection])}},
            "spec": {"nodeName": node, "containers": [{
                "name": "netexec", "image": AGNHOST, "args": ["netexec", "--http-port=8080"]}]}}


@pytest.fixture(scope="module")
def cluster(shared_dataplane: LocalCluster) -> LocalCluster:
    local = shared_dataplane
    apply(local, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "phys", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
          {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
           "metadata": {"name": "net", "namespace": "phys"},
           "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
               {"cidr": "107.107.0.0/16", "hostSubnet": 24}]}}},
          cudn("vlan10", {"vlan": {"mode": "Access", "access": {"id": 10}},
                          "subnets": ["10.100.10.0/24"],
                          "excludeSubnets": [f"{HOST_VLAN10}/32"]}),
          cudn("vlan20", {"vlan": {"mode": "Access", "access": {"id": 20}},
                          "subnets": ["10.100.10.0/24"],  # other addresses than vlan10's
                          "excludeSubnets": ["10.100.10.0/28", f"{HOST_VLAN10}/32"]}),
          cudn("raw", {"ipam": {"mode": "Disabled"}}))
    apply(local, pod("a", "ovn-worker", "vlan10", interface="tenant0"),
          pod("b", "ovn-worker2", "vlan10"),
          pod("c", "ovn-worker", "vlan20"),
          pod("e", "ovn-worker2", "vlan20"),
          pod("d", "ovn-worker2", "raw"))
    wait_pods_ready(local, "phys")
    return local


def pod_json(cluster: LocalCluster, name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(kubectl(cluster, "get", "pod", "-n", "phys", name,
                                                "-o", "json").stdout)
    return result


def address(cluster: LocalCluster, name: str, nad: str) -> str:
    networks = json.loads(pod_json(cluster, name)["metadata"]["annotations"][
        "k8s.ovn.org/pod-networks"])
    return str(networks[nad]["ip_addresses"][0].split("/")[0])


def in_pod(cluster: LocalCluster, name: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", cluster.pod_netns("phys", name), *command],
                          capture_output=True, text=True)


def pings(cluster: LocalCluster, name: str, target: str, count: int = 1) -> bool:
    return in_pod(cluster, name, "ping", "-c", str(count), "-W", "1", target).returncode == 0


def counter(netns: str, family: str, table: str) -> list[int]:
    listing = json.loads(subprocess.run(["ip", "netns", "exec", netns, "nft", "-j", "list",
                                         "table", family, table], capture_output=True,
                                        text=True, check=True).stdout)
    return [expr["counter"]["packets"] for item in listing["nftables"]
            for expr in (item.get("rule") or {}).get("expr", []) if "counter" in expr]


def test_pods_of_a_vlan_reach_each_other_and_the_host_with_their_own_ips_tagged(
        cluster: LocalCluster) -> None:
    [physnet] = cluster.physical_networks()
    a_ip = address(cluster, "a", "phys/vlan10")
    b_ip = address(cluster, "b", "phys/vlan10")
    subprocess.run(["ip", "netns", "exec", physnet.host_netns, "nft", "-f", "-"], check=True,
                   text=True, input=f"""table ip seen {{
  chain input {{
    type filter hook input priority 0;
    ip saddr {a_ip} icmp type echo-request counter
  }}
}}
""")
    # the interface its selection element named
    shown = in_pod(cluster, "a", "ip", "-br", "-4", "addr", "show", "tenant0")
    assert shown.returncode == 0 and f"{a_ip}/24" in shown.stdout, shown.stdout + shown.stderr
    wait_until(lambda: pings(cluster, "a", HOST_VLAN10), timeout=60,
               what="pod a reaching the physical network's host on VLAN 10")
    assert pings(cluster, "a", HOST_VLAN10, count=3)
    assert pings(cluster, "a", b_ip) and pings(cluster, "b", a_ip)  # across nodes
    assert pings(cluster, "b", HOST_VLAN10)
    # the host saw a's own address (no SNAT), and the segment learned a's MAC on VLAN 10
    # from ovn-worker's trunk port: the frames came tagged
    assert counter(physnet.host_netns, "ip", "seen")[0] >= 3
    a_mac = json.loads(pod_json(cluster, "a")["metadata"]["annotations"][
        "k8s.ovn.org/pod-networks"])["phys/vlan10"]["mac_address"]
    segment = physnet.segment_ovs(cluster.dataplane.dir)
    fdb = subprocess.run(command("ovs-appctl", "-t", str(segment.dir / "ovs-vswitchd.ctl"),
                          "fdb/show", "seg"), capture_output=True, text=True, check=True).stdout
    ports = subprocess.run(command("ovs-vsctl", f"--db=unix:{segment.ovs_db}", "--format=json",
                            "--columns=name,ofport", "list", "interface"), capture_output=True,
                           text=True, check=True).stdout
    ofport = {name: port for name, port in json.loads(ports)["data"]}["n0"]
    assert [str(ofport), "10", a_mac] in [line.split()[:3] for line in fdb.splitlines()], fdb


def test_another_vlan_of_the_same_physical_network_is_another_segment(
        cluster: LocalCluster) -> None:
    a_ip = address(cluster, "a", "phys/vlan10")
    wait_until(lambda: pings(cluster, "a", HOST_VLAN10), timeout=60)
    c_ip, e_ip = address(cluster, "c", "phys/vlan20"), address(cluster, "e", "phys/vlan20")
    wait_until(lambda: pings(cluster, "c", e_ip), timeout=60,
               what="the VLAN 20 pods reaching each other")
    assert c_ip != a_ip
    assert not pings(cluster, "c", a_ip, count=2)  # the same subnet, VLAN 20
    assert not pings(cluster, "c", HOST_VLAN10, count=2)
    assert not pings(cluster, "a", c_ip, count=2)


def test_a_pod_without_ipam_reaches_the_host_with_the_address_it_set(
        cluster: LocalCluster) -> None:
    annotation = json.loads(pod_json(cluster, "d")["metadata"]["annotations"][
        "k8s.ovn.org/pod-networks"])["phys/raw"]
    assert annotation.get("ip_addresses") in (None, [])  # MAC only
    assert in_pod(cluster, "d", "ip", "addr", "add", "10.100.0.10/24", "dev", "net1"
                  ).returncode == 0
    wait_until(lambda: pings(cluster, "d", HOST_UNTAGGED), timeout=60,
               what="the IPAM-less pod reaching the host untagged")


def test_the_primary_network_keeps_working_beside_the_localnet_interface(
        cluster: LocalCluster) -> None:
    b_primary = address(cluster, "b", "phys/net")
    assert b_primary.startswith("107.107.")
    wait_until(lambda: pings(cluster, "a", b_primary), timeout=60,
               what="pod a reaching pod b on their primary UDN")
    routes = in_pod(cluster, "a", "ip", "-4", "route", "show", "default").stdout
    assert "ovn-udn1" in routes  # the default route stays on the primary network


def test_nb_rows_are_upstreams(cluster: LocalCluster) -> None:
    def nbctl(*args: str) -> str:
        return subprocess.run(command("ovn-nbctl", f"--db=unix:{cluster.nb_socket}", *args),
                              capture_output=True, text=True, check=True).stdout.strip()
    assert nbctl("--bare", "--columns=tag_request", "find", "Logical_Switch_Port",
                 "name=cluster_udn_vlan10_ovn_localnet_port") == "10"
    assert nbctl("--bare", "--columns=options", "find", "Logical_Switch_Port",
                 "name=cluster_udn_vlan10_ovn_localnet_port") == "network_name=physnet1"
    assert nbctl("--bare", "--columns=name", "find", "Logical_Switch",
                 "name=cluster_udn_raw_ovn_localnet_switch") == \
        "cluster_udn_raw_ovn_localnet_switch"


def test_the_workshop_example_puts_a_pod_beside_the_vlan_10_host(cluster: LocalCluster) -> None:
    kubectl(cluster, "apply", "-f", str(WORKSHOP / "60-localnet.yaml"))
    wait_pods_ready(cluster, "radio")
    networks = json.loads(json.loads(kubectl(cluster, "get", "pod", "-n", "radio", "radio",
                                             "-o", "json").stdout)["metadata"]["annotations"][
        "k8s.ovn.org/pod-networks"])
    ip = networks["radio/physnet1-vlan10"]["ip_addresses"][0].split("/")[0]
    assert int(ip.split(".")[-1]) >= 128  # the example keeps its pods in the upper half
    wait_until(lambda: kubectl(cluster, "exec", "-n", "radio", "radio", "--", "ping", "-c",
                               "1", "-W", "1", HOST_VLAN10, check=False).returncode == 0,
               timeout=60, what="the example's pod reaching the VLAN 10 host")
