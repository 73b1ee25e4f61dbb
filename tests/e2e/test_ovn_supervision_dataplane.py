"""OVN's and OVS's own processes in ``ovnk local`` with a real dataplane: SIGKILLed, each is
started again by the supervisor from what it kept on disk, and the pods keep (or get back)
their packets.

* ovn-northd, the NB and SB servers, ovn-controller and a node's ovsdb-server: pings
  between pods on two nodes go on while each one is killed and comes back;
* NB kept down: a pod created meanwhile gets a Warning event, and is wired and Ready
  once NB is back;
* ovs-vswitchd: the pods' veths and the bridges' tap devices (with the node IP) outlive
  it; the new one reads its bridges and ports from ``conf.db``, ovn-controller fills
  br-int again, and the node agent, bound to it, starts again and fills breth0's flows
  (egress to the external host works again).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster, ProcessStatus
from ovnk_local.dataplane import EXTERNAL_HOST_IP
from ovnk_local.testing.dataplane import kubectl, ping, pod_netns, require_dataplane

from ovnk_core.kube.client import JSON, KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.resources import EVENTS, NAMESPACES, PODS
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
NAMESPACE = "supervised"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("ovn-supervision") / ".ovnk")
    local.up(nodes=2, timeout=120, dataplane=True)
    yield local
    local.down()
    assert local.dataplane.namespaces() == [], "ovnk local down left namespaces behind"


@pytest.fixture(scope="module")
def admin(cluster: LocalCluster) -> KubeClient:
    client = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
    client.create(NAMESPACES, {"metadata": {"name": NAMESPACE}})
    return client


def create_pod(admin: KubeClient, name: str, node: str) -> None:
    admin.create(PODS, {"metadata": {"name": name, "namespace": NAMESPACE},
                        "spec": {"nodeName": node, "containers": [
                            {"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}, NAMESPACE)


def ready_pod(cluster: LocalCluster, admin: KubeClient, name: str,
              timeout: float = 90) -> dict[str, Any]:
    waited = kubectl(cluster, "wait", "--for=condition=Ready", "pod", name, "-n", NAMESPACE,
                     f"--timeout={timeout:.0f}s", check=False, timeout=timeout + 30)
    assert waited.returncode == 0, f"pod {name} not ready: {waited.stderr}"
    pod: dict[str, Any] = admin.get(PODS, name, NAMESPACE)
    return pod


@pytest.fixture(scope="module")
def pods(cluster: LocalCluster, admin: KubeClient) -> dict[str, dict[str, Any]]:
    """``a`` on ovn-worker, ``b`` on ovn-worker2 (geneve between them), both Ready."""
    create_pod(admin, "a", "ovn-worker")
    create_pod(admin, "b", "ovn-worker2")
    return {name: ready_pod(cluster, admin, name) for name in ("a", "b")}


def status_of(cluster: LocalCluster, name: str) -> ProcessStatus:
    return {s.name: s for s in cluster.status()}[name]


def kill_and_wait_back(cluster: LocalCluster, name: str) -> ProcessStatus:
    """SIGKILL the process of record ``name``; its status once it is ready again."""
    before = status_of(cluster, name)
    os.kill(before.pid, signal.SIGKILL)
    back = wait_until(lambda: (lambda s: s if s.restarts == before.restarts + 1 and s.ready
                               else None)(status_of(cluster, name)), timeout=60,
                      what=f"{name} started again")
    assert back.pid != before.pid and back.last_exit == "killed by signal 9 (SIGKILL)"
    return back


def received(ping_output: str) -> tuple[int, int]:
    """(transmitted, received) of a ping's summary."""
    match = re.search(r"(\d+) packets transmitted, (\d+) received", ping_output)
    assert match, ping_output
    return int(match.group(1)), int(match.group(2))


def test_pods_keep_pinging_while_ovn_processes_are_killed(
        cluster: LocalCluster, pods: dict[str, dict[str, Any]]) -> None:
    source, target = pod_netns(cluster, pods["a"]), pods["b"]["status"]["podIP"]
    pinging = subprocess.Popen(["ip", "netns", "exec", source, "ping", "-D", "-i", "0.2",
                                "-W", "1", target], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
    killed = []
    try:
        for name in ("northd", "nb-ovsdb", "sb-ovsdb", "ovn-worker/ovn-controller",
                     "ovn-worker/ovsdb-server", "ovn-worker2/ovn-controller"):
            killed.append(f"{time.time():.3f} {name}")
            kill_and_wait_back(cluster, name)
            wait_until(lambda: ping(source, target), timeout=30, what=f"pings after {name}")
    finally:
        pinging.send_signal(signal.SIGINT)  # ping prints its summary
        output = pinging.communicate(timeout=30)[0]
    sent, got = received(output)
    # the flows stay in ovs-vswitchd
    assert sent >= 10 and got >= sent * 0.9, "\n".join(killed) + "\n" + output
    assert ping(source, target)
    assert all(s.ready for s in cluster.status()), [s for s in cluster.status() if not s.ready]


def test_a_pod_created_while_nb_is_down_is_wired_once_it_is_back(
        cluster: LocalCluster, admin: KubeClient, pods: dict[str, dict[str, Any]]) -> None:
    db = cluster.ovn_dir / "nb.db"
    aside = db.with_name("nb.db.aside")
    db.rename(aside)  # NB cannot start again until it is back
    try:
        os.kill(status_of(cluster, "nb-ovsdb").pid, signal.SIGKILL)
        wait_until(lambda: status_of(cluster, "controller").not_ready, timeout=30,
                   what="the controller not ready")
        create_pod(admin, "late", "ovn-worker")

        def warning() -> JSON | None:
            return next((e for e in admin.list(EVENTS, namespace=NAMESPACE)["items"]
                         if e["involvedObject"]["name"] == "late"
                         and e["type"] == "Warning"), None)

        event = wait_until(warning, timeout=60, what="a Warning event on the pod")
        assert (event["reason"], event["message"].split(": ", 1)[0]) == (
            "ErrorAddingResource", f"failed to add the logical ports of pod {NAMESPACE}/late")
        assert admin.get(PODS, "late", NAMESPACE)["status"].get("phase") == "Pending"
    finally:
        aside.rename(db)
    late = ready_pod(cluster, admin, "late")
    assert ping(pod_netns(cluster, late), pods["b"]["status"]["podIP"])
    assert status_of(cluster, "controller").ready


def test_a_killed_ovs_vswitchd_comes_back_and_so_does_its_node(
        cluster: LocalCluster, pods: dict[str, dict[str, Any]]) -> None:
    source, target = pod_netns(cluster, pods["a"]), pods["b"]["status"]["podIP"]
    assert ping(source, EXTERNAL_HOST_IP)  # through breth0's flows, which the agent owns
    agent = status_of(cluster, "ovn-worker/node-agent")
    switch = kill_and_wait_back(cluster, "ovn-worker/ovs-vswitchd")
    again = wait_until(lambda: (lambda s: s if s.pid != agent.pid and s.ready else None)(
        status_of(cluster, "ovn-worker/node-agent")), timeout=90, what="the agent again")
    assert again.restarts == agent.restarts  # on purpose, after its ovs-vswitchd: no crash
    state = cluster.state().processes
    assert state["ovn-worker/node-agent"].started > state["ovn-worker/ovs-vswitchd"].started
    assert switch.ready
    wait_until(lambda: ping(source, target), timeout=60, what="pod to pod again")
    wait_until(lambda: ping(source, EXTERNAL_HOST_IP), timeout=60, what="egress again")


def test_node_daemons_restart_on_request(cluster: LocalCluster,
                                         pods: dict[str, dict[str, Any]]) -> None:
    restarted = subprocess.run(
        [sys.executable, "-m", "ovnk_core.cli.main", "local", "restart",
         "ovn-worker2/ovs-vswitchd", "--dir", str(cluster.dir)],
        capture_output=True, text=True, timeout=240)
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    assert restarted.stdout.strip() == \
        "restarted: ovn-worker2/ovs-vswitchd, ovn-worker2/node-agent"
    names = cluster.restart("ovn-controller")
    assert names == ["ovn-worker/ovn-controller", "ovn-worker2/ovn-controller"]
    assert all(status_of(cluster, name).ready for name in names)
    wait_until(lambda: ping(pod_netns(cluster, pods["a"]), pods["b"]["status"]["podIP"]),
               timeout=60, what="pod to pod after the restarts")
