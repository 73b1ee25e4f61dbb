"""Containers that listen and a kubelet that probes, in ``ovnk local`` with a real dataplane.

On the shared cluster (``shared_cluster``, whose teardown checks that ``down`` leaves no
process and no cgroup behind): agnhost netexec answers other pods, HTTP readiness
probes make pods Ready (dialled from the node's namespace and its kubelet cgroup),
a failing liveness probe restarts the container, unsupported images say so, deleting
a pod kills its process, a restarted kubelet adopts running containers.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest
from ovnk_local.cgroups import KUBELET_CGROUP_FILE, KubeletCgroup
from ovnk_local.cluster import LocalCluster
from ovnk_local.supervisor import process_alive as alive
from ovnk_local.testing.dataplane import kubectl

from ovnk_core.node.netns import NETNS_DIR
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
NAMESPACE = "work"
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
NETEXEC = {"name": "netexec", "image": AGNHOST, "args": ["netexec", "--http-port=8080"],
           "ports": [{"name": "http", "containerPort": 8080}]}


@pytest.fixture(scope="module")
def cluster(shared_dataplane: LocalCluster) -> LocalCluster:
    kubectl(shared_dataplane, "create", "namespace", NAMESPACE)
    return shared_dataplane


def apply_pod(cluster: LocalCluster, name: str, *containers: dict[str, Any],
              **spec: Any) -> None:
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"containers": list(containers), **spec}}))


def get_pod(cluster: LocalCluster, name: str) -> dict[str, Any]:
    return dict(json.loads(kubectl(cluster, "get", "pod", name, "-n", NAMESPACE, "-o",
                                   "json").stdout))


def condition(pod: dict[str, Any], kind: str) -> str | None:
    return next((c["status"] for c in (pod.get("status") or {}).get("conditions") or []
                 if c["type"] == kind), None)


def wait_ready(cluster: LocalCluster, *names: str) -> None:
    result = kubectl(cluster, "wait", "--for=condition=Ready", "-n", NAMESPACE, "--timeout=90s",
                     *(f"pod/{name}" for name in names), check=False)
    logs = sorted(cluster.log_dir.glob("kubelet.log"))
    tail = "\n".join(logs[0].read_text().splitlines()[-30:]) if logs else ""
    assert result.returncode == 0, f"{result.stderr}\n{tail}"


def events(cluster: LocalCluster, pod: str, reason: str) -> list[dict[str, Any]]:
    items = json.loads(kubectl(cluster, "get", "events", "-n", NAMESPACE, "-o",
                               "json").stdout)["items"]
    return [e for e in items if e["involvedObject"]["name"] == pod and e["reason"] == reason]


def exec_in(cluster: LocalCluster, pod: str, *command: str) -> str:
    return kubectl(cluster, "exec", "-n", NAMESPACE, pod, "--", *command).stdout


def test_netexec_answers_other_pods(cluster: LocalCluster) -> None:
    apply_pod(cluster, "server", NETEXEC, nodeName="ovn-worker")
    apply_pod(cluster, "client", {"name": "pause", "image": "registry.k8s.io/pause:3.9"},
              nodeName="ovn-worker2")
    wait_ready(cluster, "server", "client")
    server, client = get_pod(cluster, "server"), get_pod(cluster, "client")
    url = f"http://{server['status']['podIP']}:8080"
    assert exec_in(cluster, "client", "curl", "-sS", "--max-time", "5",
                   f"{url}/hostname") == "server"
    clientip = exec_in(cluster, "client", "curl", "-sS", "--max-time", "5", f"{url}/clientip")
    assert clientip.rsplit(":", 1)[0] == client["status"]["podIP"]
    assert exec_in(cluster, "client", "curl", "-sS", "--max-time", "5",
                   f"{url}/echo?msg=hello") == "hello"
    udp = exec_in(cluster, "client", "python3", "-c",
                  "import socket,sys; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                  "s.settimeout(5); s.sendto(b'echo over-udp', (sys.argv[1], 8081)); "
                  "print(s.recv(100).decode())", server["status"]["podIP"])
    assert udp.strip() == "over-udp"
    [status] = server["status"]["containerStatuses"]
    assert status["ready"] and status["restartCount"] == 0 and "running" in status["state"]
    # the process runs as nobody, in the pod's network namespace, with the pod's hostname
    pid = int(status["containerID"].rsplit("/", 1)[1])
    assert os.stat(f"/proc/{pid}").st_uid == 65534
    netns = cluster.dataplane.pod_netns_prefix("ovn-worker") + f"{NAMESPACE}.server"
    assert os.stat(f"/proc/{pid}/ns/net").st_ino == os.stat(NETNS_DIR / netns).st_ino


def test_http_readiness_probe_makes_the_pod_ready_from_the_kubelet_cgroup(
        cluster: LocalCluster) -> None:
    probe = {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1}
    apply_pod(cluster, "ready", {**NETEXEC, "readinessProbe": probe}, nodeName="ovn-worker")
    apply_pod(cluster, "never-ready", {**NETEXEC, "readinessProbe": {
        "tcpSocket": {"port": 9999}, "periodSeconds": 1, "failureThreshold": 1}},
        nodeName="ovn-worker")
    wait_ready(cluster, "ready")
    pod = get_pod(cluster, "ready")
    assert condition(pod, "ContainersReady") == "True"
    # the probes came from the node: its management port's address, .2 of its subnet
    node = json.loads(kubectl(cluster, "get", "node", "ovn-worker", "-o", "json").stdout)
    subnet = json.loads(node["metadata"]["annotations"]["k8s.ovn.org/node-subnets"])["default"]
    management_ip = subnet[0].rsplit(".", 1)[0] + ".2"
    log = cluster.log_dir / "pods" / f"{NAMESPACE}.ready" / "netexec.log"
    assert f'{management_ip} "GET /healthz' in log.read_text()
    # from a process in the node's kubelet cgroup, in the node's network namespace
    recorded = KubeletCgroup.read(cluster.dir / "nodes" / "ovn-worker" / KUBELET_CGROUP_FILE)
    assert recorded.directory is not None, recorded.error
    assert recorded.path.endswith("/ovn-worker/kubelet") and recorded.level == 4
    [prober] = (recorded.directory / "cgroup.procs").read_text().split()
    node_netns = NETNS_DIR / f"{cluster.dataplane.prefix}-ovn-worker"
    assert os.stat(f"/proc/{prober}/ns/net").st_ino == os.stat(node_netns).st_ino
    # a probe that fails keeps the pod out of Ready, with the kubelet's words
    unhealthy = wait_until(lambda: events(cluster, "never-ready", "Unhealthy"))
    assert unhealthy[0]["message"].startswith("Readiness probe failed: dial tcp ")
    pod = get_pod(cluster, "never-ready")
    assert condition(pod, "Ready") == "False" and pod["status"]["phase"] == "Running"
    assert pod["status"]["containerStatuses"][0]["ready"] is False


def test_a_failing_liveness_probe_restarts_the_container(cluster: LocalCluster) -> None:
    apply_pod(cluster, "unlucky", {**NETEXEC, "livenessProbe": {
        "httpGet": {"path": "/nope", "port": 8080}, "periodSeconds": 1, "initialDelaySeconds": 1,
        "failureThreshold": 2, "terminationGracePeriodSeconds": 1}}, nodeName="ovn-worker2")

    def restarted() -> dict[str, Any] | None:
        status = (get_pod(cluster, "unlucky").get("status") or {}).get("containerStatuses")
        return status[0] if status and status[0]["restartCount"] >= 1 else None

    status = wait_until(restarted, timeout=60)
    assert status is not None
    assert status["lastState"]["terminated"]["reason"] in ("Completed", "Error")
    [killing] = events(cluster, "unlucky", "Killing")
    assert killing["message"] == "Container netexec failed liveness probe, will be restarted"
    # the kubelet's words for the 404; at load 40 the first probes can come before netexec
    # listens (connection refused, which fails the probe too), so wait for the 404's event
    wait_until(lambda: "Liveness probe failed: HTTP probe failed with statuscode: 404" in {
        e["message"] for e in events(cluster, "unlucky", "Unhealthy")}, timeout=60,
        what="an Unhealthy event for the probe's 404")


def test_exec_probes_and_a_container_that_exits(cluster: LocalCluster) -> None:
    """An exec readiness probe runs in the container's namespaces; a container that exits
    is restarted at once the first time, its exit code kept in lastState."""
    apply_pod(cluster, "exec-ready", {**NETEXEC, "readinessProbe": {"exec": {"command": [
        "curl", "-sf", "--max-time", "1", "http://localhost:8080/healthz"]},
        "periodSeconds": 1}}, nodeName="ovn-worker2")
    wait_ready(cluster, "exec-ready")
    netns = cluster.dataplane.pod_netns_prefix("ovn-worker2") + f"{NAMESPACE}.exec-ready"
    subprocess.run(["ip", "netns", "exec", netns, "curl", "-s", "--max-time", "2",
                    "http://localhost:8080/exit?code=3"], capture_output=True, timeout=10)

    def restarted() -> dict[str, Any] | None:
        status = get_pod(cluster, "exec-ready")["status"]["containerStatuses"][0]
        return status if status["restartCount"] == 1 and status["ready"] else None

    status = wait_until(restarted, timeout=30)
    assert status is not None
    assert status["lastState"]["terminated"]["exitCode"] == 3
    assert status["lastState"]["terminated"]["reason"] == "Error"


def test_an_unsupported_image_says_so(cluster: LocalCluster) -> None:
    apply_pod(cluster, "nginx", {"name": "web", "image": "nginx:1.27"})

    def waiting() -> dict[str, Any] | None:
        statuses = (get_pod(cluster, "nginx").get("status") or {}).get("containerStatuses")
        return statuses[0]["state"].get("waiting") if statuses else None

    state = wait_until(waiting)
    assert state is not None
    assert state["reason"] == "UnsupportedImage"
    assert state["message"].startswith("image 'nginx:1.27' is not supported: unknown image")
    assert get_pod(cluster, "nginx")["status"]["phase"] == "Pending"
    [event] = wait_until(lambda: events(cluster, "nginx", "UnsupportedImage"))
    assert event["type"] == "Warning" and "nginx:1.27" in event["message"]


def test_a_restarted_kubelet_adopts_running_containers(cluster: LocalCluster) -> None:
    apply_pod(cluster, "steady", NETEXEC)
    wait_ready(cluster, "steady")
    before = get_pod(cluster, "steady")["status"]["containerStatuses"][0]
    assert cluster.restart("kubelet") == ["kubelet"]
    apply_pod(cluster, "after", {"name": "c", "image": "agnhost"})  # the new kubelet works
    wait_ready(cluster, "after", "steady")
    after = get_pod(cluster, "steady")["status"]["containerStatuses"][0]
    assert (after["containerID"], after["restartCount"]) == (before["containerID"], 0)


def test_deleting_a_pod_kills_its_process(cluster: LocalCluster) -> None:
    apply_pod(cluster, "doomed", NETEXEC)
    wait_ready(cluster, "doomed")
    status = get_pod(cluster, "doomed")["status"]["containerStatuses"][0]
    pid = int(status["containerID"].rsplit("/", 1)[1])
    assert alive(pid)
    kubectl(cluster, "delete", "pod", "doomed", "-n", NAMESPACE, "--timeout=60s")
    # the local API server deletes a pod at once (no graceful deletion), so the kubelet
    # stops its containers right after (SIGTERM: netexec ends at once)
    wait_until(lambda: not alive(pid), timeout=30, what=f"container pid {pid} ended")
    assert kubectl(cluster, "get", "pod", "doomed", "-n", NAMESPACE,
                   check=False).returncode != 0
