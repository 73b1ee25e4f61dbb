"""Services with real packets in ``ovnk local``: a ClusterIP answers inside its network only.

One cluster for the module (2 nodes, real dataplane): ``blue`` and ``green`` are primary
Layer3 UDNs with the same pod CIDR, ``teal`` a primary Layer2 UDN, each with a ``web``
service of two netexec backends (one per node) and a client; ``plain`` is on the default
network with its own service.  ``kube-system/kube-dns`` is a default-network service that
``--udn-allowed-default-services`` (upstream's default value) lets UDN pods use.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.dataplane import EXTERNAL_HOST_IP
from ovnk_local.testing.dataplane import kubectl, require_dataplane, wait_pods_ready

from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
NAMESPACES = ("blue", "green", "teal", "plain")


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def netexec(namespace: str, name: str, node: str, app: str = "web") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
            "spec": {"nodeName": node, "containers": [{
                "name": "netexec", "image": AGNHOST, "args": ["netexec", "--http-port=8080"],
                "ports": [{"name": "http", "containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                                   "periodSeconds": 1}}]}}


def web_service(namespace: str, node_port: int = 0, local: bool = False, name: str = "web",
                app: str = "web", external_ips: tuple[str, ...] = ()) -> dict[str, Any]:
    port: dict[str, Any] = {"name": "http", "port": 80, "targetPort": 8080}
    spec: dict[str, Any] = {"selector": {"app": app}, "ports": [port]}
    if external_ips:
        spec["externalIPs"] = list(external_ips)
    if node_port:
        spec["type"] = "NodePort"
        port["nodePort"] = node_port
    if local:
        spec["externalTrafficPolicy"] = "Local"
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


# NodePorts: blue's web (ETP=Cluster), teal's web (ETP=Local, a backend on each node), and
# plain's "solo" (ETP=Local, its one backend on ovn-worker)
NODE_PORTS = {"blue": 30080, "teal": 30081}
SOLO_PORT = 30082
# externalIPs: blue's web (ETP=Cluster) and plain's solo (ETP=Local)
EXTERNAL_IPS = {"blue": "192.0.2.80", "solo": "192.0.2.82"}


def populate(local: LocalCluster) -> None:
    for ns in ("blue", "green"):
        apply(local, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": ns, "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}})
        apply(local, {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
                      "metadata": {"name": "net", "namespace": ns},
                      "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
                          {"cidr": "107.107.0.0/16", "hostSubnet": 24}]}}})
    apply(local, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": "teal", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}})
    apply(local, {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
                  "metadata": {"name": "net", "namespace": "teal"},
                  "spec": {"topology": "Layer2", "layer2": {"role": "Primary",
                                                            "subnets": ["108.108.0.0/16"]}}})
    apply(local, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}})
    for ns in NAMESPACES:
        apply(local, netexec(ns, f"{ns}-1", "ovn-worker"), netexec(ns, f"{ns}-2", "ovn-worker2"),
              netexec(ns, "client", "ovn-worker", app="client"),
              web_service(ns, NODE_PORTS.get(ns, 0), local=ns == "teal",
                          external_ips=(EXTERNAL_IPS["blue"],) if ns == "blue" else ()))
    apply(local, netexec("plain", "solo", "ovn-worker", app="solo"),
          web_service("plain", SOLO_PORT, local=True, name="solo", app="solo",
                      external_ips=(EXTERNAL_IPS["solo"],)))
    # an allowed default service (in upstream's default --udn-allowed-default-services)
    apply(local, netexec("kube-system", "dns-1", "ovn-worker", app="dns"),
          netexec("kube-system", "dns-2", "ovn-worker2", app="dns"),
          web_service("kube-system", name="kube-dns", app="dns"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("services") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=True)
    try:
        populate(local)
        for ns in (*NAMESPACES, "kube-system"):
            wait_pods_ready(local, ns)
        yield local
    finally:
        local.down()


def cluster_ip(cluster: LocalCluster, namespace: str, name: str = "web") -> str:
    service = json.loads(kubectl(cluster, "get", "service", "-n", namespace, name,
                                 "-o", "json").stdout)
    return str(service["spec"]["clusterIP"])


def curl(cluster: LocalCluster, namespace: str, url: str) -> subprocess.CompletedProcess[str]:
    return kubectl(cluster, "exec", "-n", namespace, "client", "--", "curl", "-sS",
                   "--max-time", "3", url, check=False)


def answers(cluster: LocalCluster, namespace: str, ip: str, tries: int = 12) -> set[str]:
    """The backends (hostnames) that answered ``tries`` requests to ``ip:80``."""
    found = set()
    for _ in range(tries):
        result = curl(cluster, namespace, f"http://{ip}:80/hostname")
        if result.returncode == 0:
            found.add(result.stdout)
    return found


def test_a_cluster_ip_answers_in_its_network_from_every_backend(cluster: LocalCluster) -> None:
    blue = cluster_ip(cluster, "blue")
    wait_until(lambda: answers(cluster, "blue", blue, tries=1), timeout=60,
               what="the blue ClusterIP answering a blue pod")
    assert answers(cluster, "blue", blue) == {"blue-1", "blue-2"}
    green = cluster_ip(cluster, "green")
    assert answers(cluster, "green", green) == {"green-1", "green-2"}
    teal = cluster_ip(cluster, "teal")  # a Layer2 network
    assert answers(cluster, "teal", teal) == {"teal-1", "teal-2"}
    plain = cluster_ip(cluster, "plain")
    assert answers(cluster, "plain", plain) == {"plain-1", "plain-2"}


def test_a_cluster_ip_does_not_answer_other_networks(cluster: LocalCluster) -> None:
    blue = cluster_ip(cluster, "blue")
    wait_until(lambda: answers(cluster, "blue", blue, tries=1), timeout=60)
    for namespace in ("green", "teal", "plain"):
        result = curl(cluster, namespace, f"http://{blue}:80/hostname")
        assert result.returncode != 0, (namespace, result.stdout)
        assert not result.stdout.startswith("blue")


def test_an_allowed_default_service_answers_udn_pods_and_no_other_default_service_does(
        cluster: LocalCluster) -> None:
    dns = cluster_ip(cluster, "kube-system", "kube-dns")
    for namespace in ("blue", "teal", "plain"):  # Layer3 UDN, Layer2 UDN, default network
        wait_until(lambda ns=namespace: answers(cluster, ns, dns, tries=1),  # type: ignore[misc]
                   timeout=60, what=f"kube-system/kube-dns answering a {namespace} pod")
        assert answers(cluster, namespace, dns) == {"dns-1", "dns-2"}, namespace
    # a default service not in the list, and another UDN's service: no answer
    for target in (cluster_ip(cluster, "plain"), cluster_ip(cluster, "green")):
        for namespace in ("blue", "teal"):
            result = curl(cluster, namespace, f"http://{target}:80/hostname")
            assert result.returncode != 0, (namespace, target, result.stdout)


def node_ips(cluster: LocalCluster) -> dict[str, str]:
    nodes = json.loads(kubectl(cluster, "get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"]: next(a["address"] for a in n["status"]["addresses"]
                                        if a["type"] == "InternalIP") for n in nodes}


def from_outside(cluster: LocalCluster, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", cluster.dataplane.external_netns, "curl",
                           "-sS", "--max-time", "3", url], capture_output=True, text=True)


def outside_answers(cluster: LocalCluster, ip: str, port: int, tries: int = 10) -> set[str]:
    found = set()
    for _ in range(tries):
        result = from_outside(cluster, f"http://{ip}:{port}/hostname")
        if result.returncode == 0:
            found.add(result.stdout)
    return found


def test_a_node_port_answers_from_outside_on_every_node(cluster: LocalCluster) -> None:
    for node, ip in node_ips(cluster).items():
        wait_until(lambda ip=ip: outside_answers(cluster, ip, NODE_PORTS["blue"], 1),  # type: ignore[misc]
                   timeout=60, what=f"blue's NodePort on {node}")
        assert outside_answers(cluster, ip, NODE_PORTS["blue"]) == {"blue-1", "blue-2"}, node


def test_an_etp_local_node_port_keeps_the_client_ip_and_answers_where_a_backend_is(
        cluster: LocalCluster) -> None:
    ips = node_ips(cluster)
    for node, ip in ips.items():  # teal (Layer2) has a backend on each node
        url = f"http://{ip}:{NODE_PORTS['teal']}/clientip"
        wait_until(lambda url=url: from_outside(cluster, url).returncode == 0,  # type: ignore[misc]
                   timeout=60, what=f"teal's NodePort on {node}")
        assert from_outside(cluster, url).stdout.split(":")[0] == EXTERNAL_HOST_IP
        assert outside_answers(cluster, ip, NODE_PORTS["teal"]) == \
            {"teal-1" if node == "ovn-worker" else "teal-2"}
    # plain/solo (default network): its one backend is on ovn-worker
    url = f"http://{ips['ovn-worker']}:{SOLO_PORT}/clientip"
    wait_until(lambda: from_outside(cluster, url).returncode == 0, timeout=60,
               what="solo's NodePort on ovn-worker")
    assert from_outside(cluster, url).stdout.split(":")[0] == EXTERNAL_HOST_IP
    assert from_outside(cluster, f"http://{ips['ovn-worker2']}:{SOLO_PORT}/").returncode != 0


def test_a_deleted_backend_stops_getting_traffic(cluster: LocalCluster) -> None:
    green = cluster_ip(cluster, "green")
    wait_until(lambda: answers(cluster, "green", green, tries=1), timeout=60)
    kubectl(cluster, "delete", "pod", "-n", "green", "green-2", "--wait=true")
    wait_until(lambda: answers(cluster, "green", green, tries=4) == {"green-1"}, timeout=90,
               what="traffic only to the remaining backend")
    # after the slice update: no failed request
    results = [curl(cluster, "green", f"http://{green}:80/hostname") for _ in range(10)]
    assert [r.stdout for r in results] == ["green-1"] * 10


def route_from_outside(cluster: LocalCluster, ip: str, via: str) -> None:
    """The external host's route to an externalIP, through one node (as an administrator
    or a LoadBalancer provider would announce it)."""
    subprocess.run(["ip", "-n", cluster.dataplane.external_netns, "route", "replace",
                    f"{ip}/32", "via", via], check=True)


def test_an_external_ip_answers_from_outside_through_every_node(cluster: LocalCluster) -> None:
    ip = EXTERNAL_IPS["blue"]
    for node, node_ip in node_ips(cluster).items():
        route_from_outside(cluster, ip, node_ip)
        wait_until(lambda: outside_answers(cluster, ip, 80, 1), timeout=60,
                   what=f"blue's externalIP through {node}")
        assert outside_answers(cluster, ip, 80) == {"blue-1", "blue-2"}, node


def test_an_etp_local_external_ip_keeps_the_client_ip_where_a_backend_is(
        cluster: LocalCluster) -> None:
    ip, ips = EXTERNAL_IPS["solo"], node_ips(cluster)
    route_from_outside(cluster, ip, ips["ovn-worker"])  # solo's one backend is there
    url = f"http://{ip}:80/clientip"
    wait_until(lambda: from_outside(cluster, url).returncode == 0, timeout=60,
               what="solo's externalIP through ovn-worker")
    assert from_outside(cluster, url).stdout.split(":")[0] == EXTERNAL_HOST_IP
    route_from_outside(cluster, ip, ips["ovn-worker2"])
    assert from_outside(cluster, url).returncode != 0
