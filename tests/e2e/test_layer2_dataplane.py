"""Layer2 networks on a real dataplane: what users of `ovnk local` get from a Layer2 UDN.

A secondary Layer2 UDN gives the pods that select it (``k8s.v1.cni.cncf.io/networks``) a
second interface, ``net1``, on the network's one switch: pods on different nodes reach
each other there, while their primary network keeps working.  NB holds upstream's names
(``<ns>_<udn>_ovn_layer2_switch``, ``<ns>.<udn>_<ns>_<pod>``), ovn-trace agrees with the
pings, a restarted zone controller writes nothing, and deleting the network leaves none
of its rows.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.dataplane import EXTERNAL_HOST_IP
from ovnk_local.testing.dataplane import (
    echo_requests_received,
    kubectl,
    ping,
    pod_netns,
    real_reachability,
    wait_pods_ready,
)

from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import OWNER_CONTROLLER_KEY, TOPOLOGY_KEY
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]

POD_NETWORKS = "k8s.ovn.org/pod-networks"
SECONDARY_NS = "l2sec"
SECONDARY_NAD = f"{SECONDARY_NS}/side"
SECONDARY_NETWORK = f"{SECONDARY_NS}_side"
SECONDARY_SWITCH = f"{SECONDARY_NETWORK}_ovn_layer2_switch"
SECONDARY_SUBNET = ipaddress.ip_network("10.129.0.0/24")
NODES = {"left": "ovn-worker", "right": "ovn-worker2"}


@pytest.fixture(scope="module")
def cluster(shared_dataplane: LocalCluster) -> LocalCluster:
    """The shared 2-node cluster (it runs with ``enable_persistent_ips``, which the VM test
    needs); this module's namespaces and networks are deleted after it."""
    return shared_dataplane


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(kubectl(cluster, "get", *args, "-o", "json").stdout)


def diagnostics(cluster: LocalCluster) -> str:
    parts = []
    for log in sorted(cluster.log_dir.glob("*.log")):
        if log.name.startswith(("controller", "cluster-manager", "kubelet")) or \
                log.name.endswith("node-agent.log"):
            lines = log.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {log.name}\n" + "\n".join(lines))
    return "\n".join(parts)


def entry(pod: dict[str, Any], nad_key: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(pod["metadata"]["annotations"][POD_NETWORKS])[nad_key]
    return value


def ip_of(pod: dict[str, Any], nad_key: str) -> str:
    return str(entry(pod, nad_key)["ip_addresses"][0]).split("/")[0]


@pytest.fixture(scope="module")
def secondary_pods(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    """Two pods on two nodes with a secondary Layer2 UDN as ``net1``, Ready."""
    apply(cluster,
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SECONDARY_NS}},
          {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
           "metadata": {"name": "side", "namespace": SECONDARY_NS},
           "spec": {"topology": "Layer2", "layer2": {"role": "Secondary",
                                                     "subnets": [str(SECONDARY_SUBNET)]}}},
          *({"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": name, "namespace": SECONDARY_NS,
                          "annotations": {"k8s.v1.cni.cncf.io/networks": "side"}},
             "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}}
            for name, node in NODES.items()))
    wait_pods_ready(cluster, SECONDARY_NS, diagnostics(cluster))
    return {pod["metadata"]["name"]: pod
            for pod in get(cluster, "pods", "-n", SECONDARY_NS)["items"]}


def test_secondary_layer2_pods_get_addresses_and_tunnel_ids(
        secondary_pods: dict[str, dict[str, Any]]) -> None:
    entries = {name: entry(pod, SECONDARY_NAD) for name, pod in secondary_pods.items()}
    for value in entries.values():
        interface = ipaddress.ip_interface(value["ip_addresses"][0])
        assert interface.network == SECONDARY_SUBNET and value["role"] == "secondary"
        assert not value.get("gateway_ips") and not value.get("routes")
        assert value["tunnel_id"] >= 10  # 1-9 are kept for platform ports
    assert len({v["ip_addresses"][0] for v in entries.values()}) == 2
    assert len({v["tunnel_id"] for v in entries.values()}) == 2


def test_secondary_layer2_nb_rows_are_upstreams_and_trace_delivers(
        cluster: LocalCluster, secondary_pods: dict[str, dict[str, Any]]) -> None:
    with NbClient([f"unix:{cluster.nb_socket}"]).start() as nb:
        [switch] = [row for row in nb.row_list("Logical_Switch")
                    if row.name == SECONDARY_SWITCH]
        ids = dict(switch.external_ids)
        assert (ids[OWNER_CONTROLLER_KEY], ids[TOPOLOGY_KEY], ids["k8s.ovn.org/role"]) == (
            f"{SECONDARY_NETWORK}-network-controller", "layer2", "secondary")
        assert switch.other_config["subnet"] == str(SECONDARY_SUBNET)
        ports = {port.name: port for port in switch.ports}
        assert set(ports) == {f"l2sec.side_l2sec_{name}" for name in NODES}
        for name, pod in secondary_pods.items():
            port = ports[f"l2sec.side_l2sec_{name}"]
            value = entry(pod, SECONDARY_NAD)
            assert dict(port.options)["requested-tnl-key"] == str(value["tunnel_id"])
            assert list(port.addresses) == [
                f"{value['mac_address']} {ip_of(pod, SECONDARY_NAD)}"]
        wait_until(lambda: all(port.up == [True] for port in switch.ports), timeout=30)
    wait_for_sb(f"unix:{cluster.nb_socket}")
    left, right = secondary_pods["left"], secondary_pods["right"]
    result = trace(f"unix:{cluster.sb_socket}", SECONDARY_SWITCH, packet_flow(
        "l2sec.side_l2sec_left", entry(left, SECONDARY_NAD)["mac_address"],
        entry(right, SECONDARY_NAD)["mac_address"], ip_of(left, SECONDARY_NAD),
        ip_of(right, SECONDARY_NAD)))
    assert result.outputs == ("l2sec.side_l2sec_right",), result.text


def test_secondary_layer2_pods_ping_over_net1_and_keep_their_primary_network(
        cluster: LocalCluster, secondary_pods: dict[str, dict[str, Any]]) -> None:
    for pod in secondary_pods.values():
        links = json.loads(subprocess.run(
            ["ip", "-n", pod_netns(cluster, pod), "-j", "addr", "show", "net1"],
            capture_output=True, text=True, check=True).stdout)
        [link] = links
        assert link["address"] == entry(pod, SECONDARY_NAD)["mac_address"]
        assert [a["local"] for a in link["addr_info"] if a["family"] == "inet"] == [
            ip_of(pod, SECONDARY_NAD)]
    for source, target in (("left", "right"), ("right", "left")):
        target_netns = pod_netns(cluster, secondary_pods[target])
        before = echo_requests_received(target_netns)
        assert ping(pod_netns(cluster, secondary_pods[source]),
                    ip_of(secondary_pods[target], SECONDARY_NAD), "net1"), (source, target)
        assert echo_requests_received(target_netns) > before
        # the primary (default) network still works beside it
        assert ping(pod_netns(cluster, secondary_pods[source]),
                    ip_of(secondary_pods[target], "default")), (source, target)


# -- primary Layer2 ------------------------------------------------------------------------------
PRIMARY_CIDR = "10.140.0.0/16"
PRIMARY_PODS = {  # namespace -> pod -> node
    "l2a": {"a1": "ovn-worker", "a2": "ovn-worker2"},
    "l2b": {"b1": "ovn-worker"},
    "l3c": {"c1": "ovn-worker2"},
}


def primary_namespace(name: str, topology: str) -> list[dict[str, Any]]:
    section = {"role": "Primary", "subnets": [PRIMARY_CIDR]} if topology == "Layer2" else {
        "role": "Primary", "subnets": [{"cidr": PRIMARY_CIDR, "hostSubnet": 24}]}
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": name, "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
            {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
             "metadata": {"name": "net", "namespace": name},
             "spec": {"topology": topology, topology.lower(): section}}]


@pytest.fixture(scope="module")
def primary_pods(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    """Two Layer2 primary networks with the same CIDR, and a Layer3 one with it too; their
    pods Ready.  Keyed by pod name."""
    for namespace in PRIMARY_PODS:
        apply(cluster, *primary_namespace(namespace, "Layer3" if namespace == "l3c"
                                          else "Layer2"))
    for namespace, pods in PRIMARY_PODS.items():
        apply(cluster, *({"apiVersion": "v1", "kind": "Pod",
                          "metadata": {"name": name, "namespace": namespace},
                          "spec": {"nodeName": node,
                                   "containers": [{"name": "c", "image": "agnhost"}]}}
                         for name, node in pods.items()))
    found = {}
    for namespace in PRIMARY_PODS:
        wait_pods_ready(cluster, namespace, diagnostics(cluster))
        found.update({pod["metadata"]["name"]: pod
                      for pod in get(cluster, "pods", "-n", namespace)["items"]})
    return found


def primary_ip(pod: dict[str, Any]) -> str:
    namespace = pod["metadata"]["namespace"]
    return ip_of(pod, f"{namespace}/net")


def test_primary_layer2_pods_get_one_subnet_across_nodes(
        primary_pods: dict[str, dict[str, Any]]) -> None:
    a1, a2 = entry(primary_pods["a1"], "l2a/net"), entry(primary_pods["a2"], "l2a/net")
    for value in (a1, a2):
        assert ipaddress.ip_interface(value["ip_addresses"][0]).network == \
            ipaddress.ip_network(PRIMARY_CIDR)
        assert value["gateway_ips"] == ["10.140.0.1"] and value["tunnel_id"] >= 10
    # .1 (gateway) and .2 (management) are never given to pods
    assert {primary_ip(primary_pods["a1"]), primary_ip(primary_pods["a2"])} <= {
        str(ip) for ip in list(ipaddress.ip_network(PRIMARY_CIDR).hosts())[2:]}


def test_primary_layer2_pods_ping_across_nodes_and_overlaps_stay_apart(
        cluster: LocalCluster, primary_pods: dict[str, dict[str, Any]]) -> None:
    netns = {name: pod_netns(cluster, pod) for name, pod in primary_pods.items()}
    a1_ip, a2_ip = primary_ip(primary_pods["a1"]), primary_ip(primary_pods["a2"])
    for source, target, ip in (("a1", "a2", a2_ip), ("a2", "a1", a1_ip)):
        before = echo_requests_received(netns[target])
        assert wait_until(lambda s=source, i=ip: ping(netns[s], i), timeout=30,  # type: ignore[misc]
                          what=f"{source} -> {target} on their Layer2 network")
        assert echo_requests_received(netns[target]) > before
    # every other pod holds one of these addresses in its own network: none gets a packet
    # from l2a's pods, whatever the address
    others = ("b1", "c1")
    before = {name: echo_requests_received(netns[name]) for name in others}
    for source in ("a1", "a2"):
        for name in others:
            ping(netns[source], primary_ip(primary_pods[name]))
    assert {name: echo_requests_received(netns[name]) for name in others} == before
    # and b1 (l2b) cannot reach l2a's pods at their addresses
    before_a = {name: echo_requests_received(netns[name]) for name in ("a1", "a2")}
    assert not ping(netns["b1"], a2_ip) or primary_ip(primary_pods["b1"]) == a2_ip
    assert {name: echo_requests_received(netns[name]) for name in ("a1", "a2")} == before_a


def test_primary_layer2_pods_leave_through_their_own_node(
        cluster: LocalCluster, primary_pods: dict[str, dict[str, Any]]) -> None:
    """Each pod's packets reach the external host with its own node's IP as source."""
    nodes = {node["metadata"]["name"]: next(
        a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        for node in get(cluster, "nodes")["items"]}
    external = cluster.dataplane.external_netns
    rules = "\n".join(f"    icmp type echo-request ip saddr {ip} counter" for ip in
                      nodes.values())
    subprocess.run(["ip", "netns", "exec", external, "nft", "-f", "-"], check=True, text=True,
                   input=f"table ip l2seen {{\n  chain input {{\n    type filter hook input "
                         f"priority 0;\n{rules}\n  }}\n}}\n")

    def counters() -> dict[str, int]:
        listed = json.loads(subprocess.run(
            ["ip", "netns", "exec", external, "nft", "-j", "list", "table", "ip", "l2seen"],
            capture_output=True, text=True, check=True).stdout)["nftables"]
        packets = [item["rule"]["expr"][-1]["counter"]["packets"] for item in listed
                   if "rule" in item]
        return dict(zip(nodes, packets, strict=True))

    try:
        for name in ("a1", "a2", "b1"):
            pod = primary_pods[name]
            node = pod["spec"]["nodeName"]
            before = counters()
            assert wait_until(lambda p=pod: ping(pod_netns(cluster, p), EXTERNAL_HOST_IP),  # type: ignore[misc]
                              timeout=30, what=f"{name} reaching the external host")
            after = counters()
            assert after[node] >= before[node] + 3, (name, before, after)
            assert all(after[other] == before[other] for other in nodes if other != node), (
                name, before, after)
    finally:
        subprocess.run(["ip", "netns", "exec", external, "nft", "delete", "table", "ip",
                        "l2seen"], check=False)


def test_primary_layer2_nb_rows_carry_upstream_names(
        cluster: LocalCluster, primary_pods: dict[str, dict[str, Any]]) -> None:
    with NbClient([f"unix:{cluster.nb_socket}"]).start() as nb:
        routers = {row.name for row in nb.row_list("Logical_Router")}
        switches = {row.name for row in nb.row_list("Logical_Switch")}
        ports = {row.name for row in nb.row_list("Logical_Switch_Port")}
    assert {"l2a_net_transit_router", "GR_l2a_net_ovn-worker", "GR_l2a_net_ovn-worker2"} <= \
        routers
    assert {"l2a_net_ovn_layer2_switch", "ext_l2a_net_ovn-worker"} <= switches
    assert {"l2a.net_l2a_a1", "l2a.net_l2a_a2", "stotr-l2a_net_ovn_layer2_switch",
            "breth0_l2a_net_ovn-worker"} <= ports


def ovnk(cluster: LocalCluster, *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "ovnk_core.cli.main", *args, "--config",
                             str(cluster.config_file)], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_ovnk_reachability_agrees_with_real_pings_on_layer2(
        cluster: LocalCluster, primary_pods: dict[str, dict[str, Any]]) -> None:
    selected = list(primary_pods.values())
    real = real_reachability(cluster, selected)
    assert real == {("l2a/a1", "l2a/a2"), ("l2a/a2", "l2a/a1")}
    traced = json.loads(ovnk(cluster, "reachability", "-n", "l2a", "-n", "l2b", "-n", "l3c",
                             "--wait", "60", "--format", "json"))
    assert {tuple(pair) for pair in traced["reachable"]} == real


def test_ovnk_show_network_shows_the_layer2_topology(
        cluster: LocalCluster, primary_pods: dict[str, dict[str, Any]]) -> None:
    shown = ovnk(cluster, "show", "network", "l2a_net")
    for expected in ("l2a_net_transit_router", "GR_l2a_net_ovn-worker", "layer2",
                     "l2a_net_ovn_layer2_switch", "pod l2a/a1"):
        assert expected in shown, shown


# -- persistent IPs: a VM migrates ----------------------------------------------------------
def vm_pod(name: str, node: str, claim: str = "") -> dict[str, Any]:
    annotations = {"v1.multus-cni.io/default-network": json.dumps(
        {"name": "default", "namespace": "ovn-kubernetes", "ipam-claim-reference": claim})} \
        if claim else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "vms", "annotations": annotations},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}}


def test_a_vm_keeps_its_ip_when_its_pod_moves_to_another_node(cluster: LocalCluster) -> None:
    apply(cluster,
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {
              "name": "vms", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
          {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
           "metadata": {"name": "net", "namespace": "vms"},
           "spec": {"topology": "Layer2", "layer2": {
               "role": "Primary", "subnets": ["10.170.0.0/29"],
               "ipam": {"lifecycle": "Persistent"}}}},
          {"apiVersion": "k8s.cni.cncf.io/v1alpha1", "kind": "IPAMClaim",
           "metadata": {"name": "vm1", "namespace": "vms"},
           "spec": {"network": "vms_net", "interface": "ovn-udn1"}},
          vm_pod("peer", "ovn-worker"), vm_pod("virt-launcher-1", "ovn-worker2", "vm1"))
    wait_pods_ready(cluster, "vms", diagnostics(cluster))

    def pod(name: str) -> dict[str, Any]:
        found: dict[str, Any] = get(cluster, "pod", name, "-n", "vms")
        return found

    peer, first = pod("peer"), pod("virt-launcher-1")
    vm_ip = ip_of(first, "vms/net")
    claim = get(cluster, "ipamclaim", "vm1", "-n", "vms")
    assert claim["status"]["ips"] == entry(first, "vms/net")["ip_addresses"]
    assert wait_until(lambda: ping(pod_netns(cluster, peer), vm_ip), timeout=30,
                      what="the peer reaching the VM on ovn-worker2")

    # migration: the pod goes, the VM's next pod comes up on the other node with the claim
    kubectl(cluster, "delete", "pod", "virt-launcher-1", "-n", "vms", "--wait=true")
    apply(cluster, vm_pod("virt-launcher-2", "ovn-worker", "vm1"))
    wait_pods_ready(cluster, "vms", diagnostics(cluster))
    second = pod("virt-launcher-2")
    assert ip_of(second, "vms/net") == vm_ip
    target = pod_netns(cluster, second)
    before = echo_requests_received(target)
    assert wait_until(lambda: ping(pod_netns(cluster, peer), vm_ip), timeout=30,
                      what="the peer reaching the migrated VM on ovn-worker")
    assert echo_requests_received(target) > before

    # the VM is deleted: its claim goes, and the address is free for other pods
    kubectl(cluster, "delete", "pod", "virt-launcher-2", "-n", "vms", "--wait=true")
    kubectl(cluster, "delete", "ipamclaim", "vm1", "-n", "vms")
    apply(cluster, *(vm_pod(f"next{index}", "ovn-worker2") for index in range(3)))
    wait_pods_ready(cluster, "vms", diagnostics(cluster))
    taken = {ip_of(pod(f"next{index}"), "vms/net") for index in range(3)}
    assert vm_ip in taken  # a /29 has four pod addresses: the peer's and these three


def test_primary_layer2_pods_reach_node_ips(cluster: LocalCluster,
                                            primary_pods: dict[str, dict[str, Any]]) -> None:
    """Through their gateway router (no management port on the shared switch): their own
    node's IP and the other node's."""
    nodes = {node["metadata"]["name"]: next(
        a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        for node in get(cluster, "nodes")["items"]}
    for name in ("a1", "a2"):
        netns = pod_netns(cluster, primary_pods[name])
        for node, ip in nodes.items():
            assert wait_until(lambda n=netns, i=ip: ping(n, i), timeout=30,  # type: ignore[misc]
                              what=f"{name} reaching node {node} at {ip}")
