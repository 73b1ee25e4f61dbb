"""Services with real packets in ``ovnk local``: a ClusterIP answers inside its network only,
and the nodes themselves (their host namespace, hostNetwork pods) reach every default one.

On the shared cluster (``shared_cluster``: 2 nodes, real dataplane): ``blue`` and
``green`` are primary Layer3 UDNs with the same pod CIDR, ``teal`` a primary Layer2 UDN,
each with a ``web`` service (HTTP 80 and UDP 81) of two netexec backends (one per node) and
a client; ``plain`` is on the default network with its own service, a hostNetwork client
and a service whose endpoint is a hostNetwork pod.  ``kube-system/kube-dns`` is a
default-network service that ``--udn-allowed-default-services`` (upstream's default value)
lets UDN pods use.
Health-check node ports: LoadBalancer services with ``externalTrafficPolicy: Local`` on
the default network and in ``blue``.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.dataplane import EXTERNAL_HOST_IP
from ovnk_local.testing.dataplane import kubectl, wait_pods_ready

from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
NAMESPACES = ("blue", "green", "teal", "plain")


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def netexec(namespace: str, name: str, node: str, app: str = "web",
            host_port: int = 0) -> dict[str, Any]:
    """A netexec pod (HTTP 8080, UDP 8081); ``host_port``: a hostNetwork one, HTTP there."""
    http = host_port or 8080
    pod: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
        "spec": {"nodeName": node, "containers": [{
            "name": "netexec", "image": AGNHOST,
            "args": ["netexec", f"--http-port={http}",
                     *(["--udp-port=-1"] if host_port else [])],
            "ports": [{"name": "http", "containerPort": http}],
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"},
                               "periodSeconds": 1}}]}}
    if host_port:
        pod["spec"]["hostNetwork"] = True
    return pod


def web_service(namespace: str, node_port: int = 0, local: bool = False, name: str = "web",
                app: str = "web", external_ips: tuple[str, ...] = (), kind: str = "NodePort",
                target: int = 8080) -> dict[str, Any]:
    port: dict[str, Any] = {"name": "http", "port": 80, "targetPort": target}
    udp: dict[str, Any] = {"name": "udp", "port": 81, "targetPort": 8081, "protocol": "UDP"}
    spec: dict[str, Any] = {"selector": {"app": app}, "ports": [port, udp]}
    if external_ips:
        spec["externalIPs"] = list(external_ips)
    if node_port:
        spec["type"] = kind
        port["nodePort"] = node_port
    if local:
        spec["externalTrafficPolicy"] = "Local"
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


# NodePorts: blue's web (ETP=Cluster), teal's web (ETP=Local, a backend on each node), and
# plain's "solo" (ETP=Local, its one backend on ovn-worker)
NODE_PORTS = {"blue": 30080, "teal": 30081, "plain": 30083}
SOLO_PORT = 30082
# externalIPs: blue's web (ETP=Cluster) and plain's solo (ETP=Local)
EXTERNAL_IPS = {"blue": "192.0.2.80", "solo": "192.0.2.82"}
HOST_WEB_PORT = 9090  # the hostNetwork backend's port on its node


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
    # a hostNetwork client, and a service whose one endpoint is a hostNetwork pod
    apply(local, {"apiVersion": "v1", "kind": "Pod",
                  "metadata": {"name": "hostclient", "namespace": "plain"},
                  "spec": {"nodeName": "ovn-worker2", "hostNetwork": True,
                           "containers": [{"name": "pause", "image": AGNHOST,
                                           "args": ["pause"]}]}},
          netexec("plain", "hostweb", "ovn-worker", app="hostweb", host_port=HOST_WEB_PORT),
          web_service("plain", name="hostweb", app="hostweb", target=HOST_WEB_PORT))
    # health-check node ports: solo's one backend is on ovn-worker, blue's lone on ovn-worker2
    apply(local, web_service("plain", 30084, local=True, name="solo-lb", app="solo",
                             kind="LoadBalancer"),
          netexec("blue", "lone", "ovn-worker2", app="lone"),
          web_service("blue", 30085, local=True, name="lone", app="lone", kind="LoadBalancer"))


@pytest.fixture(scope="module")
def cluster(shared_dataplane: LocalCluster) -> LocalCluster:
    populate(shared_dataplane)
    for ns in (*NAMESPACES, "kube-system"):
        wait_pods_ready(shared_dataplane, ns)
    return shared_dataplane


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


# -- the nodes themselves: host namespace and hostNetwork pods ---------------------------------
UDP_ASK = ("import socket, sys; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
           "s.settimeout(2); s.sendto(b'hostname', (sys.argv[1], int(sys.argv[2]))); "
           "print(s.recvfrom(100)[0].decode())")


def on_node(cluster: LocalCluster, node: str, *command: str) -> str:
    """What ``command`` prints in ``node``'s host namespace ("" when it fails)."""
    result = subprocess.run(["ip", "netns", "exec", cluster.dataplane.node_netns(node),
                             *command], capture_output=True, text=True, timeout=20)
    return result.stdout.strip() if result.returncode == 0 else ""


def in_host_pod(cluster: LocalCluster, *command: str) -> str:
    """What ``command`` prints in the hostNetwork pod plain/hostclient ("" on failure)."""
    result = kubectl(cluster, "exec", "-n", "plain", "hostclient", "--", *command, check=False)
    return result.stdout.strip() if result.returncode == 0 else ""


def service_spec(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    return dict(json.loads(kubectl(cluster, "get", "service", "-n", namespace, name, "-o",
                                   "json").stdout)["spec"])


def udp_node_port(cluster: LocalCluster, namespace: str, name: str = "web") -> int:
    return next(int(p["nodePort"]) for p in service_spec(cluster, namespace, name)["ports"]
                if p["protocol"] == "UDP")


def host_answers(ask: Callable[..., str], ip: str, port: int, tries: int = 8) -> set[str]:
    """The backends that answered ``tries`` TCP (HTTP) and UDP requests."""
    found = set()
    for _ in range(tries):
        found.add(ask("curl", "-sS", "--max-time", "3", f"http://{ip}:{port}/hostname"))
    return found - {""}


def test_the_nodes_reach_every_default_cluster_ip_and_node_port(cluster: LocalCluster) -> None:
    ips = node_ips(cluster)
    plain, dns = cluster_ip(cluster, "plain"), cluster_ip(cluster, "kube-system", "kube-dns")
    solo = cluster_ip(cluster, "plain", "solo")  # ETP=Local, its one backend on ovn-worker
    udp_port = udp_node_port(cluster, "plain")
    asks: dict[str, tuple[str, Callable[..., str]]] = {  # who: (on which node, how)
        node: (node, lambda *command, node=node: on_node(cluster, node, *command))
        for node in ips}
    asks["hostNetwork pod"] = ("ovn-worker2", lambda *command: in_host_pod(cluster, *command))
    for who, (own, ask) in asks.items():
        wait_until(lambda ask=ask: host_answers(ask, plain, 80, 1), timeout=60,  # type: ignore[misc]
                   what=f"plain's ClusterIP answering {who}")
        # ClusterIPs not in --udn-allowed-default-services, and one that is, TCP and UDP
        assert host_answers(ask, plain, 80) == {"plain-1", "plain-2"}, who
        assert host_answers(ask, solo, 80, 3) == {"solo"}, who
        assert host_answers(ask, dns, 80) == {"dns-1", "dns-2"}, who
        assert {ask("python3", "-c", UDP_ASK, plain, "81") for _ in range(8)} == \
            {"plain-1", "plain-2"}, who
        # NodePorts: every node's, its own included, TCP and UDP; an ETP=Local one on its own
        # node's IP goes to the ClusterIP (upstream's shared gateway does the same)
        for node, ip in ips.items():
            assert host_answers(ask, ip, NODE_PORTS["plain"]) == {"plain-1", "plain-2"}, \
                (who, node)
            assert ask("python3", "-c", UDP_ASK, ip, str(udp_port)) in {"plain-1", "plain-2"}
        assert host_answers(ask, ips[own], SOLO_PORT, 3) == {"solo"}, who
    # a socket bound to the node IP reaches them too
    assert on_node(cluster, "ovn-worker", "curl", "-sS", "--max-time", "3", "--interface",
                   ips["ovn-worker"], f"http://{plain}/hostname") in {"plain-1", "plain-2"}


def test_udn_services_from_the_nodes_node_ports_only_as_upstream(cluster: LocalCluster) -> None:
    blue = cluster_ip(cluster, "blue")
    for node, ip in node_ips(cluster).items():
        # a UDN's NodePort on the node's own IP answers (upstream: the network's mark)...
        wait_until(lambda node=node, ip=ip: host_answers(  # type: ignore[misc]
            lambda *c: on_node(cluster, node, *c), ip, NODE_PORTS["blue"], 1),
            timeout=60, what=f"blue's NodePort from {node}'s host")
        assert host_answers(lambda *c, node=node: on_node(cluster, node, *c), ip,
                            NODE_PORTS["blue"]) == {"blue-1", "blue-2"}, node
        # ...its ClusterIP does not: the host's service traffic is the default network's
        assert not host_answers(lambda *c, node=node: on_node(cluster, node, *c), blue, 80, 2)
    assert not host_answers(lambda *c: in_host_pod(cluster, *c), blue, 80, 2)


def test_a_host_network_endpoint_answers_the_nodes_and_pods(cluster: LocalCluster) -> None:
    """hostweb's endpoint is ovn-worker's own address: the default router reaches it through
    the bridge's hairpin (OVN's masquerade IP), from either node and from a pod."""
    ip = cluster_ip(cluster, "plain", "hostweb")
    for node in node_ips(cluster):
        wait_until(lambda node=node: host_answers(  # type: ignore[misc]
            lambda *c: on_node(cluster, node, *c), ip, 80, 1), timeout=60,
            what=f"hostweb answering {node}'s host")
        assert host_answers(lambda *c, node=node: on_node(cluster, node, *c), ip, 80, 3) == \
            {"ovn-worker"}, node
    assert answers(cluster, "plain", ip, tries=3) == {"ovn-worker"}


# -- health-check node ports --------------------------------------------------------------------
def health_check(cluster: LocalCluster, ip: str, port: int) -> tuple[int, dict[str, Any]]:
    """The status and JSON body the external host gets from ``ip:port``."""
    result = subprocess.run(["ip", "netns", "exec", cluster.dataplane.external_netns, "curl",
                             "-sS", "--max-time", "3", "-w", "\n%{http_code}",
                             f"http://{ip}:{port}/healthz"], capture_output=True, text=True)
    body, _, code = result.stdout.rpartition("\n")
    return int(code or 0), json.loads(body) if body else {}


def health_port(cluster: LocalCluster, namespace: str, name: str) -> int:
    return int(service_spec(cluster, namespace, name)["healthCheckNodePort"])


def expect_health(cluster: LocalCluster, namespace: str, name: str,
                  counts: dict[str, int]) -> None:
    """Every node answers 200 with its count of local endpoints, or 503 with 0."""
    port = health_port(cluster, namespace, name)
    ips = node_ips(cluster)
    for node, count in counts.items():
        wanted = (200 if count else 503, {"service": {"namespace": namespace, "name": name},
                                          "localEndpoints": count})
        wait_until(lambda ip=ips[node], wanted=wanted: health_check(  # type: ignore[misc]
            cluster, ip, port) == wanted, timeout=30,
            what=f"{namespace}/{name}'s health check on {node}: {wanted}")


def test_health_check_node_ports_answer_the_local_endpoints_from_outside(
        cluster: LocalCluster) -> None:
    expect_health(cluster, "plain", "solo-lb", {"ovn-worker": 1, "ovn-worker2": 0})
    expect_health(cluster, "blue", "lone", {"ovn-worker": 0, "ovn-worker2": 1})  # a UDN's
    # scaled up: a backend on the other node too
    apply(cluster, netexec("plain", "solo-2", "ovn-worker2", app="solo"))
    expect_health(cluster, "plain", "solo-lb", {"ovn-worker": 1, "ovn-worker2": 1})
    kubectl(cluster, "delete", "pod", "-n", "plain", "solo-2", "--wait=true")
    expect_health(cluster, "plain", "solo-lb", {"ovn-worker": 1, "ovn-worker2": 0})
    kubectl(cluster, "delete", "pod", "-n", "blue", "lone", "--wait=true")
    expect_health(cluster, "blue", "lone", {"ovn-worker": 0, "ovn-worker2": 0})
