"""Dual-stack and IPv6-only clusters with real packets: ``ovnk local up --ip-family``.

Two clusters, one after the other (class-scoped, never both up), each populated once:

* ``dual`` (kind's ``dual``: IPv4 first), 2 nodes: ``plain`` on the default network,
  ``blue`` a primary Layer3 UDN and ``teal`` a primary Layer2 UDN, both of both families;
  each namespace a netexec pod per node (HTTP readiness probes) and a dual-stack NodePort
  service (HTTP 80, UDP 81).  Nodes, pods and services carry both families; pods reach each
  other, the external host (as their node) and services over both; NodePorts answer from
  outside on each node's IPv4 and IPv6 address; a primary-UDN pod's default-network IPv6
  address is closed to other pods and to the host.
* ``ipv6``, 1 node: the same for one family, where the kubelet probes (through the UDN
  isolation's kubelet exception) go over IPv6 and geneve between chassis too would.
"""

from __future__ import annotations

import ipaddress
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.dataplane import EXTERNAL_HOST_IPS
from ovnk_local.settings import ComponentSettings
from ovnk_local.testing.dataplane import (
    kubectl,
    ping,
    pod_netns,
    require_dataplane,
    wait_pods_ready,
)

from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
DUAL_NETWORKS = {"blue": ("Layer3", [{"cidr": "107.107.0.0/16", "hostSubnet": 24},
                                     {"cidr": "2001:db8:107::/48", "hostSubnet": 64}]),
                 "teal": ("Layer2", ["108.108.0.0/16", "2001:db8:108::/64"])}
IPV6_NETWORKS = {"blue": ("Layer3", [{"cidr": "2001:db8:107::/48", "hostSubnet": 64}])}
NODE_PORTS = {"plain": 30180, "blue": 30190, "teal": 30170}  # HTTP; UDP is the next port
NODES = ("ovn-worker", "ovn-worker2")


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def netexec(namespace: str, name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [{
                "name": "netexec", "image": AGNHOST, "args": ["netexec", "--http-port=8080"],
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                   "periodSeconds": 1}}]}}


def service(namespace: str) -> dict[str, Any]:
    port = NODE_PORTS[namespace]
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": namespace},
            "spec": {"type": "NodePort", "ipFamilyPolicy": "PreferDualStack",
                     "selector": {"app": "web"},
                     "ports": [{"name": "http", "port": 80, "targetPort": 8080,
                                "nodePort": port},
                               {"name": "udp", "port": 81, "targetPort": 8081,
                                "protocol": "UDP", "nodePort": port + 1}]}}


def started(directory: Path, ip_family: str, networks: dict[str, Any],
            nodes: tuple[str, ...]) -> LocalCluster:
    """A cluster of ``ip_family`` with ``plain`` and the primary UDNs ``networks``, a
    netexec pod per node and a NodePort service in each namespace, every pod Ready."""
    require_dataplane()
    local = LocalCluster(directory / ".ovnk")
    local.up(nodes=len(nodes), timeout=90, dataplane=True, physical_networks=[],
             settings=ComponentSettings(ip_family=ip_family))
    try:
        apply(local, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}})
        for namespace, (topology, subnets) in networks.items():
            apply(local,
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                      "name": namespace,
                      "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
                  {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
                   "metadata": {"name": "net", "namespace": namespace},
                   "spec": {"topology": topology,
                            topology.lower(): {"role": "Primary", "subnets": subnets}}})
        for namespace in ("plain", *networks):
            apply(local, *(netexec(namespace, f"{namespace}-{index + 1}", node)
                           for index, node in enumerate(nodes)), service(namespace))
        for namespace in ("plain", *networks):
            wait_pods_ready(local, namespace)
    except BaseException:
        local.down()
        raise
    return local


@pytest.fixture(scope="class")
def dual(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = started(tmp_path_factory.mktemp("dual-stack"), "dual", DUAL_NETWORKS, NODES)
    yield local
    local.down()


@pytest.fixture(scope="class")
def ipv6(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = started(tmp_path_factory.mktemp("ipv6"), "ipv6", IPV6_NETWORKS, NODES[:1])
    yield local
    local.down()


def get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(kubectl(cluster, "get", *args, "-o", "json").stdout)


def pod(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    result: dict[str, Any] = get(cluster, "pod", "-n", namespace, name)
    return result


def network_ips(pod_: dict[str, Any], network: str) -> list[str]:
    """The pod's addresses on ``network`` (``default``, or its primary UDN)."""
    networks = json.loads(pod_["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])
    key = network if network == "default" else next(
        k for k, entry in networks.items() if entry["role"] == "primary")
    return [address.split("/")[0] for address in networks[key]["ip_addresses"]]


def of_version(ips: list[str], version: int) -> str:
    return next(ip for ip in ips if ipaddress.ip_address(ip).version == version)


def node_ips(cluster: LocalCluster) -> dict[str, list[str]]:
    return {node["metadata"]["name"]: [a["address"] for a in node["status"]["addresses"]
                                       if a["type"] == "InternalIP"]
            for node in get(cluster, "nodes")["items"]}


def in_netns(netns: str, script: str, *args: str) -> str:
    """A Python snippet run in ``netns``; its output, or ``failed: ...``."""
    result = subprocess.run(["ip", "netns", "exec", netns, "python3", "-c", script, *args],
                            capture_output=True, text=True, timeout=30)
    return result.stdout.strip() if result.returncode == 0 else \
        f"failed: {result.stderr.strip()[-200:]}"


UDP_ASK = """
import socket, sys
ip, port, message = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.socket(socket.AF_INET6 if ":" in ip else socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
s.sendto(message.encode(), (ip, port))
print(s.recvfrom(200)[0].decode())
"""
UDP_ECHO_SOURCE = """
import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
s.bind(("::", 9000))
print("listening", flush=True)
while True:
    data, peer = s.recvfrom(100)
    s.sendto(peer[0].removeprefix("::ffff:").encode(), peer)
"""


def url(ip: str, port: int, path: str = "hostname") -> str:
    host = f"[{ip}]" if ":" in ip else ip
    return f"http://{host}:{port}/{path}"


def curl(netns: str, address: str) -> str:
    result = subprocess.run(["ip", "netns", "exec", netns, "curl", "-sS", "--max-time", "3",
                             address], capture_output=True, text=True)
    return result.stdout if result.returncode == 0 else f"failed: {result.stderr.strip()}"


def answers(netns: str, address: str, tries: int = 10) -> set[str]:
    return {answer for answer in (curl(netns, address) for _ in range(tries))
            if not answer.startswith("failed")}


def seen_by_external(netns: str, external: str) -> str | None:
    """The address the external host's echo saw a datagram from ``netns`` come from."""
    seen = in_netns(netns, UDP_ASK, external, "9000", "who")
    return None if seen.startswith("failed") else seen


def check_pods_reach_each_other_and_the_external_host(
        cluster: LocalCluster, networks: dict[str, str], versions: tuple[int, ...]) -> None:
    """``<ns>-1`` pings ``<ns>-2`` (when there is one) on each of its addresses, and reaches
    the external host over each family, which sees ``<ns>-1``'s node's address."""
    echo = subprocess.Popen(["ip", "netns", "exec", cluster.dataplane.external_netns,
                             "python3", "-c", UDP_ECHO_SOURCE], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert echo.stdout is not None and echo.stdout.readline() == "listening\n"
        ips = node_ips(cluster)
        for namespace, network in networks.items():
            source = pod(cluster, namespace, f"{namespace}-1")
            netns = pod_netns(cluster, source)
            if len(ips) > 1:
                target = pod(cluster, namespace, f"{namespace}-2")
                for ip in network_ips(target, network):  # across nodes, each family
                    assert wait_until(lambda n=netns, ip=ip: ping(n, ip),  # type: ignore[misc]
                                      timeout=30, what=f"{namespace}-1 pinging {ip}")
            for version in versions:
                external = EXTERNAL_HOST_IPS[version]
                seen = wait_until(lambda n=netns, e=external: seen_by_external(n, e),  # type: ignore[misc]
                                  timeout=30, what=f"{namespace}-1 reaching {external}")
                assert seen == of_version(ips[source["spec"]["nodeName"]], version)
    finally:
        echo.kill()
        echo.wait()


def check_services_answer(cluster: LocalCluster, namespaces: tuple[str, ...]) -> None:
    """Every ClusterIP (each family) answers ``<ns>-1`` over TCP and UDP from every backend,
    every NodePort the external host on each node's addresses."""
    external = cluster.dataplane.external_netns
    nodes = node_ips(cluster)
    for namespace in namespaces:
        client = pod_netns(cluster, pod(cluster, namespace, f"{namespace}-1"))
        backends = {f"{namespace}-{index + 1}" for index in range(len(nodes))}
        for cluster_ip in get(cluster, "service", "-n", namespace, "web")["spec"]["clusterIPs"]:
            wait_until(lambda n=client, c=cluster_ip: answers(n, url(c, 80), 1),  # type: ignore[misc]
                       timeout=60, what=f"{namespace}'s ClusterIP {cluster_ip}")
            assert answers(client, url(cluster_ip, 80)) == backends, cluster_ip
            assert in_netns(client, UDP_ASK, cluster_ip, "81", "hostname") in backends
        port = NODE_PORTS[namespace]
        for node, addresses in nodes.items():
            for address in addresses:  # every backend, from each node's addresses
                wait_until(lambda a=address, p=port: answers(external, url(a, p), 1),  # type: ignore[misc]
                           timeout=60, what=f"{namespace}'s NodePort on {node} {address}")
                assert answers(external, url(address, port)) == backends, (node, address)
                assert in_netns(external, UDP_ASK, address, str(port + 1), "hostname") \
                    in backends, (node, address)


def check_default_address_closed(cluster: LocalCluster, version: int) -> None:
    """``blue-1`` is Ready (its kubelet's probes got through); its default-network address
    of IP ``version`` answers neither ``plain-1`` (on the same node, answered by the last
    ``plain`` pod) nor the host; the last ``blue`` pod reaches it on their network."""
    last = len(node_ips(cluster))
    blue = pod(cluster, "blue", "blue-1")
    ready = next(c for c in blue["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    default = of_version(network_ips(blue, "default"), version)
    plain = pod_netns(cluster, pod(cluster, "plain", "plain-1"))
    reachable = of_version(network_ips(pod(cluster, "plain", f"plain-{last}"), "default"),
                           version)
    assert curl(plain, url(reachable, 8080)) == f"plain-{last}"
    for netns in (plain, cluster.dataplane.node_netns(blue["spec"]["nodeName"])):
        assert curl(netns, url(default, 8080)).startswith("failed"), netns
        assert not ping(netns, default), netns
    own = of_version(network_ips(blue, "blue"), version)
    assert curl(pod_netns(cluster, pod(cluster, "blue", f"blue-{last}")),
                url(own, 8080)) == "blue-1"


class TestDualStack:
    """``ovnk local up --ip-family dual``."""

    def test_nodes_pods_and_services_carry_both_families(self, dual: LocalCluster) -> None:
        ips = node_ips(dual)
        assert ips == {"ovn-worker": ["172.18.0.2", "fd80:172:18::2"],
                       "ovn-worker2": ["172.18.0.3", "fd80:172:18::3"]}
        annotations = get(dual, "node", "ovn-worker")["metadata"]["annotations"]
        gateway = json.loads(annotations["k8s.ovn.org/l3-gateway-config"])["default"]
        assert gateway["ip-addresses"] == ["172.18.0.2/16", "fd80:172:18::2/64"]
        assert gateway["next-hops"] == ["172.18.0.1", "fd80:172:18::1"]
        subnets = json.loads(annotations["k8s.ovn.org/node-subnets"])
        for network in ("default", "blue_net", "teal_net"):
            if network in subnets:  # (Layer2 has no node subnets)
                assert [ipaddress.ip_network(s).version for s in subnets[network]] == [4, 6]
        plain = pod(dual, "plain", "plain-1")
        assert [ipaddress.ip_address(entry["ip"]).version
                for entry in plain["status"]["podIPs"]] == [4, 6]
        assert [entry["ip"] for entry in plain["status"]["hostIPs"]] == ips["ovn-worker"]
        for namespace in DUAL_NETWORKS:  # a primary UDN's pods: both families there too
            assert [ipaddress.ip_address(ip).version for ip in network_ips(
                pod(dual, namespace, f"{namespace}-1"), namespace)] == [4, 6]
        web = get(dual, "service", "-n", "blue", "web")["spec"]
        assert web["ipFamilies"] == ["IPv4", "IPv6"] and len(web["clusterIPs"]) == 2

    def test_pods_reach_each_other_and_the_external_host_over_both_families(
            self, dual: LocalCluster) -> None:
        check_pods_reach_each_other_and_the_external_host(
            dual, {"plain": "default", "blue": "blue", "teal": "teal"}, (4, 6))

    def test_cluster_ips_and_node_ports_answer_on_both_families(
            self, dual: LocalCluster) -> None:
        check_services_answer(dual, ("plain", "blue"))  # teal (Layer2): its own test below
        # the node's own processes reach a default-network ClusterIP over IPv6, and NodePorts
        # on its IPv6 address (a UDN's too: through that network's gateway router)
        host = dual.dataplane.node_netns("ovn-worker")
        plain = get(dual, "service", "-n", "plain", "web")["spec"]["clusterIPs"]
        assert answers(host, url(plain[1], 80)) == {"plain-1", "plain-2"}
        node6 = of_version(node_ips(dual)["ovn-worker"], 6)
        for namespace in ("plain", "blue"):
            assert answers(host, url(node6, NODE_PORTS[namespace])) == {
                f"{namespace}-1", f"{namespace}-2"}, namespace

    def test_a_layer2_node_port_reaches_backends_on_every_node(
            self, dual: LocalCluster) -> None:
        # the backend on the other node answers the entry node's gateway router: on an OVN
        # where the transit router peers it (26.03), through trtor-'s chassis-redirect port
        check_services_answer(dual, ("teal",))

    def test_a_udn_pods_default_ipv6_address_is_closed_but_to_its_kubelet(
            self, dual: LocalCluster) -> None:
        check_default_address_closed(dual, 6)


class TestIPv6Only:
    """``ovnk local up --ip-family ipv6``: geneve, the gateway and the kubelet's probes
    over IPv6."""

    def test_nodes_and_pods_are_ipv6_only(self, ipv6: LocalCluster) -> None:
        assert node_ips(ipv6) == {"ovn-worker": ["fd80:172:18::2"]}
        for namespace in ("plain", "blue"):
            status = pod(ipv6, namespace, f"{namespace}-1")["status"]
            assert ipaddress.ip_address(status["podIP"]).version == 6
            assert len(status["podIPs"]) == 1
        assert get(ipv6, "service", "-n", "plain", "web")["spec"]["ipFamilies"] == ["IPv6"]

    def test_pods_services_and_isolation_work_over_ipv6(self, ipv6: LocalCluster) -> None:
        check_pods_reach_each_other_and_the_external_host(
            ipv6, {"plain": "default", "blue": "blue"}, (6,))
        check_services_answer(ipv6, ("plain", "blue"))
        # blue-1 is Ready: the kubelet's probes reached its IPv6 default address
        check_default_address_closed(ipv6, 6)
