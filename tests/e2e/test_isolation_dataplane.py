"""UDN isolation with real packets in ``ovnk local``: a primary-UDN pod's default-network
interface answers its kubelet's probes and its open ports, nothing else.

On the shared cluster (``shared_cluster``: 2 nodes, real dataplane): a UDN pod serving
HTTP on 8080 with an HTTP readiness probe, and a default-network client pod on the same node.
"""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.testing.dataplane import kubectl

from ovnk_core.node.netns import NETNS_DIR
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
OPEN_PORTS = "k8s.ovn.org/open-default-ports"
# curl's exit codes: 7 = connection refused (something answered), 28 = timed out (dropped)
REFUSED, TIMED_OUT = 7, 28


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def netexec_pod(namespace: str, name: str, probe: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "netexec", "image": AGNHOST,
                                 "args": ["netexec", "--http-port=8080"],
                                 "ports": [{"name": "http", "containerPort": 8080}]}
    if probe:
        container["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": "http"},
                                       "periodSeconds": 1}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": "ovn-worker", "containers": [container]}}


@pytest.fixture(scope="module")
def cluster(shared_dataplane: LocalCluster) -> LocalCluster:
    populate(shared_dataplane)
    return shared_dataplane


def populate(local: LocalCluster) -> None:
    apply(local,
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "iso", "labels": {
              "k8s.ovn.org/primary-user-defined-network": ""}}},
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}})
    apply(local, {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
                  "metadata": {"name": "net", "namespace": "iso"},
                  "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
                      {"cidr": "106.106.0.0/16", "hostSubnet": 24}]}}})
    apply(local, netexec_pod("iso", "server", probe=True), netexec_pod("plain", "client"))


def pod(cluster: LocalCluster, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(cluster, "get", "pod", "-n", namespace, name,
                                               "-o", "json").stdout)
    return found


def ready(cluster: LocalCluster, namespace: str, name: str) -> bool:
    conditions = (pod(cluster, namespace, name).get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def curl(cluster: LocalCluster, namespace: str, name: str, url: str,
         *options: str) -> subprocess.CompletedProcess[str]:
    return kubectl(cluster, "exec", "-n", namespace, name, "--", "curl", "-sS",
                   "--max-time", "3", *options, url, check=False)


def test_the_kubelet_probes_an_isolated_pod_and_nothing_else_reaches_it(
        cluster: LocalCluster) -> None:
    # the HTTP readiness probe, from the node's kubelet cgroup through its management port
    wait_until(lambda: ready(cluster, "iso", "server"), timeout=90,
               what="the isolated pod Ready by its HTTP probe")
    wait_until(lambda: ready(cluster, "plain", "client"), timeout=90)
    server_ip = pod(cluster, "iso", "server")["status"]["podIP"]  # its default-network IP
    client_ip = pod(cluster, "plain", "client")["status"]["podIP"]
    # a default-network pod: dropped (no answer at all, not even a refusal)
    assert curl(cluster, "plain", "client", f"http://{server_ip}:8080/hostname").returncode \
        == TIMED_OUT
    # a host process outside the kubelet cgroup: dropped
    node_netns = NETNS_DIR / f"{cluster.dataplane.prefix}-ovn-worker"
    host = subprocess.run(["ip", "netns", "exec", node_netns.name, "curl", "-sS",
                           "--max-time", "3", f"http://{server_ip}:8080/hostname"],
                          capture_output=True, text=True)
    assert host.returncode == TIMED_OUT, host.stderr
    # the isolated pod reaches no default-network pod over eth0
    assert curl(cluster, "iso", "server", f"http://{client_ip}:8080/hostname",
                "--interface", "eth0").returncode == TIMED_OUT
    # ...while the default network still works between default-network pods' hosts
    assert curl(cluster, "plain", "client", f"http://{client_ip}:8080/hostname").stdout == \
        "client"


def test_open_default_ports_open_exactly_those_ports(cluster: LocalCluster) -> None:
    wait_until(lambda: ready(cluster, "iso", "server"), timeout=90)
    server_ip = pod(cluster, "iso", "server")["status"]["podIP"]
    kubectl(cluster, "annotate", "--overwrite", "pod", "-n", "iso", "server",
            f"{OPEN_PORTS}=- protocol: tcp\n  port: 8080\n")

    def opened() -> bool:
        result = curl(cluster, "plain", "client", f"http://{server_ip}:8080/hostname")
        return result.returncode == 0 and result.stdout == "server"

    wait_until(opened, timeout=60, what="tcp/8080 open to the default network")
    # another port: still dropped (a closed but reachable port would be refused)
    assert curl(cluster, "plain", "client", f"http://{server_ip}:9090/").returncode == \
        TIMED_OUT
    kubectl(cluster, "annotate", "pod", "-n", "iso", "server", f"{OPEN_PORTS}-")
    wait_until(lambda: curl(cluster, "plain", "client",
                            f"http://{server_ip}:8080/hostname").returncode == TIMED_OUT,
               timeout=60, what="tcp/8080 closed again")
