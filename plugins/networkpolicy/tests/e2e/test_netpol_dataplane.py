"""NetworkPolicy with real packets in ``ovnk local`` on the default network: a deny-all
policy drops what reached a server, then a policy allowing one client lets exactly that
client back in, and deleting the policies restores everything."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.settings import ComponentSettings
from ovnk_local.testing.dataplane import kubectl, require_dataplane

from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
TIMED_OUT = 28  # curl: no answer at all (dropped)


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def netexec_pod(name: str, node: str, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "np", "labels": labels},
            "spec": {"nodeName": node, "containers": [{
                "name": "netexec", "image": AGNHOST, "args": ["netexec", "--http-port=8080"],
                "ports": [{"name": "http", "containerPort": 8080}]}]}}


def policy(name: str, ingress: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": "np"},
            "spec": {"podSelector": {"matchLabels": {"app": "server"}},
                     "policyTypes": ["Ingress"], "ingress": ingress}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("netpol") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=True, settings=ComponentSettings(
        given={"extra_features": "networkpolicy"}))
    try:
        apply(local, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "np"}})
        apply(local, netexec_pod("server", "ovn-worker", app="server"),
              netexec_pod("allowed", "ovn-worker2", role="client"),
              netexec_pod("other", "ovn-worker"))
        yield local
    finally:
        local.down()


def pod_ip(cluster: LocalCluster, name: str) -> str:
    found = json.loads(kubectl(cluster, "get", "pod", "-n", "np", name, "-o", "json").stdout)
    return str((found.get("status") or {}).get("podIP") or "")


def curl(cluster: LocalCluster, name: str, url: str) -> subprocess.CompletedProcess[str]:
    return kubectl(cluster, "exec", "-n", "np", name, "--", "curl", "-sS", "--max-time", "3",
                   url, check=False)


def answers(cluster: LocalCluster, client: str, url: str) -> bool:
    result = curl(cluster, client, url)
    return result.returncode == 0 and result.stdout == "server"


def test_deny_all_then_allow_one_client(cluster: LocalCluster) -> None:
    wait_until(lambda: all(pod_ip(cluster, p) for p in ("server", "allowed", "other")),
               timeout=90, what="pods with addresses")
    url = f"http://{pod_ip(cluster, 'server')}:8080/hostname"
    wait_until(lambda: answers(cluster, "allowed", url) and answers(cluster, "other", url),
               timeout=60, what="the server reachable without policies")

    apply(cluster, policy("deny-all", []))
    wait_until(lambda: curl(cluster, "allowed", url).returncode == TIMED_OUT and
               curl(cluster, "other", url).returncode == TIMED_OUT,
               timeout=60, what="everything dropped by deny-all")

    apply(cluster, policy("allow-client", [{"from": [
        {"podSelector": {"matchLabels": {"role": "client"}}}],
        "ports": [{"port": 8080, "protocol": "TCP"}]}]))
    wait_until(lambda: answers(cluster, "allowed", url), timeout=60,
               what="the selected client let in")
    assert curl(cluster, "other", url).returncode == TIMED_OUT

    kubectl(cluster, "delete", "networkpolicy", "-n", "np", "deny-all", "allow-client")
    wait_until(lambda: answers(cluster, "other", url), timeout=60,
               what="everything back once the policies are gone")
