"""Layer2 and Localnet across OVN zones, with real packets: ``ovnk local up --zones per-node``.

Each node is its own zone.  A Layer2 network's switch is the zones' transit switch: a pod
on the other node is a ``remote`` port there, so a secondary Layer2 network's pods reach
each other over ``net1`` and a primary Layer2 network's pods over their primary interface,
tunnelled between the zones; a primary Layer2 pod still leaves the cluster through its own
node (its zone's subnet ``src-ip`` route to its node's gateway router).  A Localnet network
has its own switch and localnet port in each zone, with only the zone's own pods (as
upstream: a remote pod has no port on a Localnet switch), and its pods on two nodes reach
each other over the physical network.  A Layer3 UDN's pods reach their own node through
its management port, SNATed by the zone to the network's management-port masquerade IP
(upstream's row); the host answers that address through the port.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.dataplane import EXTERNAL_HOST_IP
from ovnk_local.testing.dataplane import (
    echo_requests_received,
    kubectl,
    ping,
    pod_netns,
    require_dataplane,
    wait_pods_ready,
)
from ovnk_local.zones import PER_NODE, nb_socket

from ovnk_core.ovn.nb import NbClient
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]

NODES = {"left": "ovn-worker", "right": "ovn-worker2"}
POD_NETWORKS = "k8s.ovn.org/pod-networks"
LOCALNET_HOST = "10.100.10.254"  # the physical network's host on VLAN 10


def pod_spec(name: str, ns: str, node: str, networks: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if networks:
        meta["annotations"] = {"k8s.v1.cni.cncf.io/networks": networks}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}}


def manifests() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "l2sec"}},
        {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
         "metadata": {"name": "side", "namespace": "l2sec"},
         "spec": {"topology": "Layer2", "layer2": {"role": "Secondary",
                                                   "subnets": ["10.129.0.0/24"]}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "l2pri", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
        {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
         "metadata": {"name": "net", "namespace": "l2pri"},
         "spec": {"topology": "Layer2", "layer2": {"role": "Primary",
                                                   "subnets": ["10.140.0.0/16"]}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "l3pri", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
        {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
         "metadata": {"name": "net", "namespace": "l3pri"},
         "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
             {"cidr": "103.103.0.0/16", "hostSubnet": 24}]}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "phys"}},
        {"apiVersion": "k8s.ovn.org/v1", "kind": "ClusterUserDefinedNetwork",
         "metadata": {"name": "vlan10"},
         "spec": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name":
                                                        "phys"}},
                  "network": {"topology": "Localnet", "localnet": {
                      "role": "Secondary", "physicalNetworkName": "physnet1",
                      "vlan": {"mode": "Access", "access": {"id": 10}},
                      "subnets": ["10.100.10.0/24"],
                      "excludeSubnets": [f"{LOCALNET_HOST}/32"]}}}}]
    for name, node in NODES.items():
        docs += [pod_spec(name, "l2sec", node, "side"), pod_spec(name, "l2pri", node),
                 pod_spec(name, "phys", node, "vlan10"), pod_spec(name, "l3pri", node),
                 web_pod(f"web-{name}", node)]
    docs += [web_pod("client", NODES["left"], app="client"), web_service("web", local=False),
             web_service("web-local", local=True)]
    return docs


def web_pod(name: str, node: str, app: str = "web") -> dict[str, Any]:
    """A netexec pod (HTTP 8080) on the primary Layer2 network."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "l2pri", "labels": {"app": app}},
            "spec": {"nodeName": node, "containers": [{
                "name": "netexec", "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                "args": ["netexec", "--http-port=8080"],
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                   "periodSeconds": 1}}]}}


def web_service(name: str, local: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"selector": {"app": "web"},
                            "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    if local:
        spec["internalTrafficPolicy"] = "Local"
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": "l2pri"}, "spec": spec}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("zones-l2") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=True, zone_mode=PER_NODE)
    try:
        for doc in manifests():
            kubectl(local, "apply", "-f", "-", stdin=json.dumps(doc))
        for ns in ("l2sec", "l2pri", "phys", "l3pri"):
            wait_pods_ready(local, ns)
        yield local
    finally:
        local.down()


def pods(cluster: LocalCluster, ns: str) -> dict[str, dict[str, Any]]:
    listed = json.loads(kubectl(cluster, "get", "pods", "-n", ns, "-o", "json").stdout)
    return {pod["metadata"]["name"]: pod for pod in listed["items"]}


def ip_of(pod: dict[str, Any], nad: str) -> str:
    entries = json.loads(pod["metadata"]["annotations"][POD_NETWORKS])
    return str(entries[nad]["ip_addresses"][0]).split("/")[0]


def reaches(cluster: LocalCluster, source: dict[str, Any], target: dict[str, Any], ip: str,
            interface: str | None = None) -> bool:
    """The source's pings are answered and the target's own kernel got them."""
    before = echo_requests_received(pod_netns(cluster, target))
    return ping(pod_netns(cluster, source), ip, interface) and \
        echo_requests_received(pod_netns(cluster, target)) > before


@pytest.mark.parametrize(("ns", "nad", "interface"), [
    ("l2sec", "l2sec/side", "net1"), ("l2pri", "l2pri/net", None),
    ("phys", "phys/vlan10", "net1")])
def test_pods_on_two_zones_reach_each_other(cluster: LocalCluster, ns: str, nad: str,
                                            interface: str | None) -> None:
    found = pods(cluster, ns)
    for source, target in (("left", "right"), ("right", "left")):
        src, dst = found[source], found[target]
        # the first packets may go while the zones' MAC bindings are learnt: retried
        wait_until(lambda s=src, d=dst: reaches(cluster, s, d, ip_of(d, nad), interface),  # type: ignore[misc]
                   timeout=30, what=f"{ns}/{source} reaching {ns}/{target} across zones")


def test_primary_layer2_pods_leave_through_their_own_zone(cluster: LocalCluster) -> None:
    for name, pod in pods(cluster, "l2pri").items():
        wait_until(lambda p=pod: ping(pod_netns(cluster, p), EXTERNAL_HOST_IP),  # type: ignore[misc]
                   timeout=30, what=f"l2pri/{name} reaching the external host")


def zone_rows(cluster: LocalCluster, node: str, table: str) -> dict[str, Any]:
    with NbClient([f"unix:{nb_socket(cluster.ovn_dir, node)}"]).start() as nb:
        return {row.name: row for row in nb.row_list(table)}


def test_each_zone_holds_its_pods_and_the_others_as_remote_ports(cluster: LocalCluster
                                                                  ) -> None:
    for name, node in NODES.items():
        other = next(n for n in NODES if n != name)
        switches = zone_rows(cluster, node, "Logical_Switch")
        for switch in ("l2sec_side_ovn_layer2_switch", "l2pri_net_ovn_layer2_switch"):
            assert switches[switch].other_config["interconn-ts"] == switch
        ports = zone_rows(cluster, node, "Logical_Switch_Port")
        for prefix in ("l2sec.side_l2sec_", "l2pri.net_l2pri_"):
            assert ports[prefix + name].type == ""
            far = ports[prefix + other]
            assert far.type == "remote"
            assert dict(far.options)["requested-chassis"] == NODES[other]
        # Localnet: the zone's own switch, localnet port and pod only
        assert "cluster_udn_vlan10_ovn_localnet_switch" in switches
        assert ports["cluster_udn_vlan10_ovn_localnet_port"].type == "localnet"
        assert ports["phys.vlan10_phys_" + name].type == ""
        assert "phys.vlan10_phys_" + other not in ports
        routers = zone_rows(cluster, node, "Logical_Router_Port")
        far_gr = f"trtor-GR_l2pri_net_{NODES[other]}"
        assert dict(routers[far_gr].options).get("requested-chassis"), far_gr
        assert f"rtotr-GR_l2pri_net_{NODES[other]}" not in routers


def test_a_zone_renders_nothing_of_a_remote_pod_that_is_gone(cluster: LocalCluster) -> None:
    kubectl(cluster, "delete", "pod", "-n", "l2sec", "right", "--wait=false")
    left_zone = NODES["left"]
    wait_until(lambda: "l2sec.side_l2sec_right" not in zone_rows(
        cluster, left_zone, "Logical_Switch_Port"), timeout=30,
        what="the remote port of a deleted pod leaving the other zone")


def test_a_layer3_udn_pod_reaches_its_node_as_the_networks_management_masquerade_ip(
        cluster: LocalCluster) -> None:
    """Upstream's management-port SNAT in the zone: the node sees the network's
    management-port masquerade IP, never the pod's address (which other networks may
    reuse), and answers it through the port."""
    state = cluster.state()
    for name, pod in pods(cluster, "l3pri").items():
        node = NODES[name]
        netns = cluster.dataplane.node(node, state.nodes.index(node)).netns
        node_ip = next(a["address"] for a in json.loads(kubectl(
            cluster, "get", "node", node, "-o", "json").stdout)["status"]["addresses"]
            if a["type"] == "InternalIP")
        subprocess.run(["ip", "netns", "exec", netns, "nft", "-f", "-"], check=True, text=True,
                       input="""table ip mgmt-seen {
  chain input {
    type filter hook input priority 0;
    icmp type echo-request iifname "ovn-k8s-mp*" ip saddr 169.254.0.0/17 counter
    icmp type echo-request iifname "ovn-k8s-mp*" counter
  }
}
""")
        try:
            wait_until(lambda p=pod, ip=node_ip: ping(pod_netns(cluster, p), ip),  # type: ignore[misc]
                       timeout=30, what=f"l3pri/{name} reaching its node {node_ip}")
            listed = subprocess.run(["ip", "netns", "exec", netns, "nft", "-j", "list", "table",
                                     "ip", "mgmt-seen"], capture_output=True, text=True,
                                    check=True).stdout
            masqueraded, total = [item["rule"]["expr"][-1]["counter"]["packets"]
                                  for item in json.loads(listed)["nftables"] if "rule" in item]
            assert masqueraded == total > 0, listed
        finally:
            subprocess.run(["ip", "netns", "exec", netns, "nft", "delete", "table", "ip",
                            "mgmt-seen"], check=False)
        switch = f"l3pri_net_{node}"
        [nat] = [n for n in _snats(cluster, node) if n.match]
        assert (list(nat.logical_port), nat.match.split(" == ")[0],
                nat.external_ip.startswith("169.254.0.")) == ([f"rtos-{switch}"], "eth.dst",
                                                               True)


def _snats(cluster: LocalCluster, node: str) -> list[Any]:
    with NbClient([f"unix:{nb_socket(cluster.ovn_dir, node)}"]).start() as nb:
        return [row for row in nb.row_list("NAT") if row.type == "snat"]


def answers(cluster: LocalCluster, service: str, tries: int = 12) -> set[str]:
    """The backends (hostnames) that answered the client's ``tries`` requests."""
    ip = json.loads(kubectl(cluster, "get", "service", "-n", "l2pri", service, "-o",
                            "json").stdout)["spec"]["clusterIP"]
    found = set()
    for _ in range(tries):
        result = kubectl(cluster, "exec", "-n", "l2pri", "client", "--", "curl", "-sS",
                         "--max-time", "3", f"http://{ip}:80/hostname", check=False)
        if result.returncode == 0:
            found.add(result.stdout)
    return found


def test_a_layer2_cluster_ip_spans_zones_and_internal_traffic_policy_local_holds(
        cluster: LocalCluster) -> None:
    """Each zone's Layer2 switch carries only its own node's per-node load balancers, so
    ``internalTrafficPolicy: Local`` is applied there (the single zone cannot: one switch
    spans its nodes), while a Cluster service reaches the backends of both zones."""
    wait_until(lambda: answers(cluster, "web") == {"web-left", "web-right"}, timeout=60,
               what="the Layer2 ClusterIP answered from both zones' backends")
    assert answers(cluster, "web-local", tries=20) == {"web-left"}
    events = json.loads(kubectl(cluster, "get", "events", "-n", "l2pri", "-o",
                                "json").stdout)["items"]
    assert not [e for e in events if e["reason"] == "InternalTrafficPolicyNotApplied"]
