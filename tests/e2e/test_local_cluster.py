"""``ovnk local`` end to end: processes, real kubectl, stand-ins, restart and teardown."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.supervisor import pid_running

from ovnk_core.testing.waiting import wait_until

POD_NETWORKS = "k8s.ovn.org/pod-networks"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("local") / ".ovnk")
    local.up(nodes=2, timeout=90)
    yield local
    local.down()


def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args],
                            input=stdin, capture_output=True, text=True, timeout=60)
    if check and result.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {result.stderr}")
    return result


def get_json(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(kubectl(cluster, "get", *args, "-o", "json").stdout)


def pod_manifest(name: str, labels: dict[str, str]) -> str:
    return json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "demo", "labels": labels},
        "spec": {"containers": [{"name": "web", "image": "agnhost",
                                 "ports": [{"name": "http", "containerPort": 8080}]}]}})


def test_nodes_crds_and_processes(cluster: LocalCluster) -> None:
    nodes = get_json(cluster, "nodes")["items"]
    assert [n["metadata"]["name"] for n in nodes] == ["ovn-worker", "ovn-worker2"]
    resources = kubectl(cluster, "api-resources").stdout
    for short in ("udn", "cudn", "net-attach-def"):
        assert f" {short} " in resources
    statuses = {s.name: s for s in cluster.status()}
    assert set(statuses) >= {"apiserver", "nb-ovsdb", "sb-ovsdb", "northd", "scheduler",
                             "kubelet", "endpointslice-controller", "cluster-manager"}
    assert all(s.ready for s in statuses.values()), statuses
    assert cluster.nb_socket.exists() and cluster.sb_socket.exists()


def test_pods_are_scheduled_run_and_get_endpoint_slices(cluster: LocalCluster) -> None:
    kubectl(cluster, "create", "namespace", "demo")
    for index in range(3):
        kubectl(cluster, "apply", "-f", "-",
                stdin=pod_manifest(f"web-{index}", {"app": "web"}))
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "demo"},
        "spec": {"selector": {"app": "web"},
                 "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}}))

    def all_running() -> bool:
        pods = get_json(cluster, "pods", "-n", "demo")["items"]
        return len(pods) == 3 and all(p["status"].get("phase") == "Running" for p in pods)

    wait_until(all_running)
    pods = get_json(cluster, "pods", "-n", "demo")["items"]
    assert {p["spec"]["nodeName"] for p in pods} == {"ovn-worker", "ovn-worker2"}
    ips = {p["metadata"]["name"]: p["status"]["podIP"] for p in pods}
    for p in pods:  # the address ovnk's pod IPAM gave, from its node's subnet
        entry = json.loads(p["metadata"]["annotations"][POD_NETWORKS])["default"]
        assert entry["ip_addresses"][0].split("/")[0] == p["status"]["podIP"]
    kubectl(cluster, "wait", "--for=condition=Ready", "pod/web-0", "-n", "demo",
            "--timeout=30s")

    def slice_addresses() -> list[str]:
        slices = get_json(cluster, "endpointslices", "-n", "demo",
                          "-l", "kubernetes.io/service-name=web")["items"]
        return sorted(a for s in slices for e in s.get("endpoints") or []
                      for a in e["addresses"])

    assert wait_until(lambda: slice_addresses() == sorted(ips.values()))
    [slice_] = get_json(cluster, "endpointslices", "-n", "demo")["items"]
    assert slice_["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] == \
        "endpointslice-controller.k8s.io"
    assert slice_["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]
    kubectl(cluster, "delete", "pod", "web-2", "-n", "demo", "--wait=false")
    assert wait_until(lambda: slice_addresses() == sorted(ip for name, ip in ips.items()
                                                          if name != "web-2"))


def test_pods_get_addresses_from_ovnk_or_wait_for_their_network(cluster: LocalCluster) -> None:
    kubectl(cluster, "run", "bare", "-n", "default", "--image=agnhost")
    pod = wait_until(lambda: (lambda p: p if p["status"].get("phase") == "Running" else None)(
        get_json(cluster, "pod", "bare", "-n", "default")))
    assert pod is not None
    node = get_json(cluster, "node", pod["spec"]["nodeName"])
    subnets = json.loads(node["metadata"]["annotations"]["k8s.ovn.org/node-subnets"])
    assert ipaddress.ip_address(pod["status"]["podIP"]) in ipaddress.ip_network(
        subnets["default"][0])
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "waiting", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}}))
    kubectl(cluster, "run", "early", "-n", "waiting", "--image=agnhost")
    wait_until(lambda: "ErrorReconcilingPod" in kubectl(
        cluster, "get", "events", "-n", "waiting").stdout)
    assert get_json(cluster, "pod", "early", "-n", "waiting")["status"].get("phase") != \
        "Running"


def test_restart_keeps_state_and_crash_is_visible(cluster: LocalCluster) -> None:
    before = get_json(cluster, "namespaces")["items"]
    assert cluster.restart("scheduler") == ["scheduler"]
    assert get_json(cluster, "namespaces")["items"] == before
    # started again by the supervisor, which alone can read the exit status of its children
    # (a process it adopted, e.g. after its own restart, ends "exit status unknown")
    assert cluster.restart("kubelet") == ["kubelet"]
    restarts = {s.name: s for s in cluster.status()}["kubelet"].restarts
    record = cluster.state().processes["kubelet"]
    os.kill(record.pid, signal.SIGKILL)
    wait_until(lambda: not pid_running(record.pid, record.args))
    # the supervisor brings it back (after a backoff) and status says how it ended
    back = wait_until(lambda: (lambda s: s if s.restarts == restarts + 1 and s.ready else None)(
        {s.name: s for s in cluster.status()}["kubelet"]), timeout=60)
    assert back is not None
    assert back.last_exit == "killed by signal 9 (SIGKILL)" and back.log.endswith("kubelet.log")
    restarted = cluster.restart()
    assert restarted[:5] == ["scheduler", "kubelet", "endpointslice-controller",
                             "cluster-manager", "controller"]
    assert restarted[5:] == (["ovn-worker/node-agent", "ovn-worker2/node-agent"]
                             if cluster.state().dataplane else [])
    assert all(s.ready for s in cluster.status())


def test_down_leaves_nothing_running(tmp_path: Path) -> None:
    local = LocalCluster(tmp_path / "c")
    state = local.up(nodes=1, timeout=90)
    records = list(state.processes.values())
    assert records and all(pid_running(r.pid, r.args) for r in records)
    with pytest.raises(Exception, match="already running"):
        local.up(nodes=1)
    stopped = local.down()
    assert set(stopped) == {r.name for r in records}
    assert not any(pid_running(r.pid, r.args) for r in records)
    assert local.status() == []
    assert local.dataplane.namespaces() == []


def test_up_over_kept_state_refreshes_what_the_node_side_publishes(tmp_path: Path) -> None:
    local = LocalCluster(tmp_path / "c")
    local.up(nodes=1, timeout=90, dataplane=False)
    try:
        before = get_json(local, "node", "ovn-worker")["metadata"]["annotations"]
        kubectl(local, "annotate", "node", "ovn-worker", "--overwrite",
                'k8s.ovn.org/l3-gateway-config={"default":{"mode":"stale"}}')
        # the chassis id is never changed once set, not even by the admin (upstream's rule)
        refused = subprocess.run(
            ["kubectl", "--kubeconfig", str(local.kubeconfig), "annotate", "node",
             "ovn-worker", "--overwrite", "k8s.ovn.org/node-chassis-id=stale-chassis"],
            capture_output=True, text=True, timeout=60)
        assert "k8s.ovn.org/node-chassis-id cannot be changed once set" in refused.stderr
        local.down()
        local.up(nodes=1, timeout=90, dataplane=False)
        node = get_json(local, "node", "ovn-worker")
        assert node["metadata"]["annotations"]["k8s.ovn.org/l3-gateway-config"] == \
            before["k8s.ovn.org/l3-gateway-config"]
        assert node["metadata"]["annotations"]["k8s.ovn.org/node-chassis-id"] == "ovn-worker"
    finally:
        local.down()


def test_seed_walkthrough_with_kubectl(cluster: LocalCluster) -> None:
    workshop = Path(__file__).resolve().parents[2] / "examples" / "workshop"
    for manifest in ("00-namespaces.yaml", "10-networks.yaml", "20-pods.yaml"):
        kubectl(cluster, "apply", "-f", str(workshop / manifest))
    for namespace in ("blue", "green", "teal"):
        kubectl(cluster, "wait", "--for=condition=NetworkCreated", "udn", "--all", "-n",
                namespace, "--timeout=60s")
        kubectl(cluster, "wait", "--for=condition=Ready", "pod", "--all", "-n", namespace,
                "--timeout=60s")
    nad = get_json(cluster, "net-attach-def", "blue-network", "-n", "blue")
    assert json.loads(nad["spec"]["config"])["name"] == "blue_blue-network"
    ids = {get_json(cluster, "net-attach-def", f"{ns}-network", "-n", ns)["metadata"][
        "annotations"]["k8s.ovn.org/network-id"] for ns in ("blue", "green", "teal")}
    assert len(ids) == 3 and "0" not in ids
    for node in get_json(cluster, "nodes")["items"]:
        subnets = json.loads(node["metadata"]["annotations"]["k8s.ovn.org/node-subnets"])
        assert set(subnets) >= {"default", "blue_blue-network", "green_green-network",
                                "teal_teal-network"}
    pods = get_json(cluster, "pods", "-n", "blue")["items"]
    assert {p["spec"]["nodeName"] for p in pods} == {"ovn-worker", "ovn-worker2"}
    for item in pods:
        networks = json.loads(item["metadata"]["annotations"][POD_NETWORKS])
        assert networks["default"]["role"] == "infrastructure-locked"
        assert networks["blue/blue-network"]["role"] == "primary"
        udn_ip = ipaddress.ip_interface(networks["blue/blue-network"]["ip_addresses"][0])
        assert udn_ip in ipaddress.ip_network("103.103.0.0/16")
        # kubectl shows the default-network IP, as upstream does for primary-UDN pods
        assert item["status"]["podIP"] == networks["default"]["ip_addresses"][0].split("/")[0]
    # The zone controller rendered them: ovn-trace lets only same-network pods talk, and
    # teal's pods (blue's CIDR) reuse blue's IPs without reaching blue.
    result = subprocess.run(
        [sys.executable, "-m", "ovnk_core.cli.main", "reachability", "--config",
         str(cluster.config_file), "-n", "blue", "-n", "green", "-n", "teal", "--wait", "60",
         "--format", "json", "--output", str(cluster.dir / "reachability.svg")],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert not report["skipped"] and not report["errors"]
    pods = {p["pod"]: p for p in report["pods"]}
    assert set(pods) == {"blue/blue", "blue/blue1", "green/green", "green/green1", "teal/teal",
                         "teal/teal1"}
    assert all(ipaddress.ip_address(p["ip"]) in ipaddress.ip_network("103.103.0.0/16")
               for p in pods.values() if p["pod"].startswith(("teal", "blue")))
    assert sorted(map(tuple, report["reachable"])) == [
        ("blue/blue", "blue/blue1"), ("blue/blue1", "blue/blue"), ("green/green", "green/green1"),
        ("green/green1", "green/green"), ("teal/teal", "teal/teal1"),
        ("teal/teal1", "teal/teal")]
    assert (cluster.dir / "reachability.svg").read_text().startswith("<svg")
    rejected = kubectl(cluster, "apply", "-f", str(workshop / "90-invalid.yaml"), check=False)
    assert rejected.returncode != 0
    assert "spec.layer3 is required when topology is Layer3 and forbidden otherwise" in \
        rejected.stderr


def test_service_in_a_udn_namespace_gets_a_mirrored_endpoint_slice(cluster: LocalCluster) -> None:
    workshop = Path(__file__).resolve().parents[2] / "examples" / "workshop"
    for manifest in ("00-namespaces.yaml", "10-networks.yaml", "20-pods.yaml",
                     "30-service.yaml"):
        kubectl(cluster, "apply", "-f", str(workshop / manifest))
    kubectl(cluster, "wait", "--for=condition=Ready", "pod", "--all", "-n", "blue",
            "--timeout=60s")

    def addresses_by_manager() -> dict[str, list[str]]:
        slices = get_json(cluster, "endpointslices", "-n", "blue")["items"]
        found: dict[str, list[str]] = {}
        for item in slices:
            manager = item["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
            found.setdefault(manager, []).extend(
                a for e in item.get("endpoints") or [] for a in e["addresses"])
        return {manager: sorted(addresses) for manager, addresses in found.items()}

    def expected() -> dict[str, list[str]]:
        default, udn = [], []
        for item in get_json(cluster, "pods", "-n", "blue", "-l", "app=web-backend")["items"]:
            annotation = (item["metadata"].get("annotations") or {}).get(POD_NETWORKS)
            if not annotation or not item["status"].get("podIP") or \
                    item["metadata"].get("deletionTimestamp"):
                continue  # (a pod just created has no pod-networks yet)
            networks = json.loads(annotation)
            default.append(item["status"]["podIP"])
            udn.append(networks["blue/blue-network"]["ip_addresses"][0].split("/")[0])
        return {"endpointslice-controller.k8s.io": sorted(default),
                "endpointslice-mirror-controller.k8s.ovn.org": sorted(udn)}

    def exact(count: int) -> bool:
        want = expected()
        return all(len(v) == count for v in want.values()) and addresses_by_manager() == want

    wait_until(lambda: exact(2), timeout=30, what="default and mirrored slices of blue/web")
    mirrors = get_json(cluster, "endpointslices", "-n", "blue", "-l",
                       "endpointslice.kubernetes.io/managed-by="
                       "endpointslice-mirror-controller.k8s.ovn.org")["items"]
    [mirror] = mirrors
    assert mirror["metadata"]["labels"]["k8s.ovn.org/service-name"] == "web"
    assert "kubernetes.io/service-name" not in mirror["metadata"]["labels"]
    assert mirror["metadata"]["annotations"]["k8s.ovn.org/endpointslice-network"] == \
        "blue_blue-network"
    assert mirror["metadata"]["ownerReferences"][0]["kind"] == "Service"
    assert all(ipaddress.ip_address(a) in ipaddress.ip_network("103.103.0.0/16")
               for e in mirror["endpoints"] for a in e["addresses"])
    listing = kubectl(cluster, "get", "endpointslice", "-n", "blue").stdout
    assert "IPv4" in listing and len(listing.strip().splitlines()) == 3

    # scale up and down: both slices follow, still exactly one mirror
    for name in ("extra-a", "extra-b"):
        kubectl(cluster, "run", name, "-n", "blue", "--labels=app=web-backend",
                "--image=agnhost")
    wait_until(lambda: exact(4), timeout=30, what="four endpoints in both slices")
    kubectl(cluster, "delete", "pod", "extra-a", "web-a", "-n", "blue", "--wait=false")
    wait_until(lambda: exact(2), timeout=30, what="two endpoints in both slices")
    assert len(get_json(cluster, "endpointslices", "-n", "blue", "-l",
                        "endpointslice.kubernetes.io/managed-by="
                        "endpointslice-mirror-controller.k8s.ovn.org")["items"]) == 1

    kubectl(cluster, "delete", "service", "web", "-n", "blue")
    wait_until(lambda: get_json(cluster, "endpointslices", "-n", "blue")["items"] == [],
               timeout=30, what="both slices gone with the service")
    # put blue back as the walkthrough left it
    kubectl(cluster, "delete", "pod", "extra-b", "web-b", "-n", "blue", "--wait=false")
    kubectl(cluster, "apply", "-f", str(workshop / "20-pods.yaml"))
