"""``ovnk local`` supervises its components and OVN's own processes: a dead one comes back,
with backoff, and says why.

A local cluster without a real dataplane; components, the OVN databases and ovn-northd are
killed with SIGKILL, made to crash at start, and restarted by several ``ovnk local
restart`` commands at once.  While NB cannot be reached the zone controller is not ready
and says why, and a pod it cannot wire gets an event.  (With a real dataplane, each
node's OVS and ovn-controller too: ``test_ovn_supervision_dataplane.py``.)
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ovnk_local.cluster import LocalCluster, ProcessStatus
from ovnk_local.supervisor import pid_running

from ovnk_core.kube.client import JSON, KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.resources import EVENTS, PODS
from ovnk_core.ovn.install import command
from ovnk_core.testing.waiting import wait_until


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("supervised") / ".ovnk")
    local.up(nodes=1, timeout=90, dataplane=False)
    yield local
    local.down()


def ovnk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ovnk_core.cli.main", *args],
                          capture_output=True, text=True, timeout=120)


def status_of(cluster: LocalCluster, name: str) -> ProcessStatus:
    return {s.name: s for s in cluster.status()}[name]


def processes_of(cluster: LocalCluster, *words: str) -> list[int]:
    """Pids of live processes whose command line holds every one of ``words``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and all(word in cmdline for word in words):
            found.append(int(entry.name))
    return found


def test_the_supervisor_is_recorded_and_running(cluster: LocalCluster) -> None:
    supervisor = status_of(cluster, "supervisor")
    assert supervisor.running and supervisor.role == "supervisor"
    state = cluster.state()
    # it started every component and OVN process itself (it is their parent, so it knows
    # how they end)
    for name in ("scheduler", "kubelet", "endpointslice-controller", "cluster-manager",
                 "controller", "nb-ovsdb", "sb-ovsdb", "northd"):
        record = state.processes[name]
        assert record.supervised and (record.ready_file or record.ready_socket)
        parent = int(Path(f"/proc/{record.pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        assert parent == supervisor.pid


def test_a_killed_component_comes_back_with_the_reason_in_status(cluster: LocalCluster) -> None:
    before = cluster.state().processes["cluster-manager"]
    os.kill(before.pid, signal.SIGKILL)
    back = wait_until(lambda: (lambda s: s if s.restarts == 1 and s.ready else None)(
        status_of(cluster, "cluster-manager")), timeout=60)
    assert back is not None
    assert back.pid != before.pid
    assert back.last_exit == "killed by signal 9 (SIGKILL)"
    assert back.last_exit_log  # the tail of what it logged before it was killed
    shown = ovnk("local", "status", "--dir", str(cluster.dir))
    assert shown.returncode == 0, shown.stdout + shown.stderr
    row = next(line for line in shown.stdout.splitlines() if line.startswith("cluster-manager"))
    assert row.split()[3:5] == ["ready", "1"]  # STATE, RESTARTS
    assert "killed by signal 9 (SIGKILL)" in shown.stdout
    assert f"    | {back.last_exit_log[-1]}" in shown.stdout


def test_a_component_crashing_at_start_is_backed_off(cluster: LocalCluster) -> None:
    kubeconfig = cluster.component_kubeconfig("scheduler")
    good = kubeconfig.read_bytes()
    kubeconfig.write_text("this is not a kubeconfig\n")
    try:
        before = cluster.state().processes["scheduler"].restarts
        os.kill(cluster.state().processes["scheduler"].pid, signal.SIGKILL)
        delays: dict[int, float] = {}  # deaths in a row -> the wait before the next start

        def three_deaths() -> bool:
            record = cluster.state().processes["scheduler"]
            if record.next_start:
                delays[record.failures] = round(record.next_start - record.last_exit_at, 3)
            return len(delays) >= 3

        # however slowly it gets to crash on a loaded machine: 1s, 2s, 4s (then 8s, ...
        # capped at 30s), never a hot loop
        wait_until(three_deaths, timeout=120, interval=0.1)
        assert delays == {1: 1.0, 2: 2.0, 3: 4.0}
        record = cluster.state().processes["scheduler"]
        assert record.failures >= 3 and record.restarts - before <= record.failures, record
        assert record.last_exit == "exit code 1"
        assert record.last_exit_log, "the tail of its log says why it cannot start"
        shown = ovnk("local", "status", "--dir", str(cluster.dir))
        assert shown.returncode == 1  # not everything is ready
        assert "exit code 1" in shown.stdout
    finally:
        kubeconfig.write_bytes(good)
    assert ovnk("local", "restart", "scheduler", "--dir", str(cluster.dir)).returncode == 0
    record = cluster.state().processes["scheduler"]
    assert record.failures == 0 and record.next_start == 0.0  # backoff forgotten
    assert status_of(cluster, "scheduler").ready


def test_concurrent_restarts_leave_a_valid_state_file(cluster: LocalCluster) -> None:
    restarts = [subprocess.Popen([sys.executable, "-m", "ovnk_core.cli.main", "local",
                                  "restart", "scheduler", "--dir", str(cluster.dir)],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for _ in range(4)]
    results = [(p.wait(timeout=180), p.communicate()) for p in restarts]
    assert all(code == 0 for code, _ in results), results
    raw = json.loads(cluster.state_file.read_text())
    assert set(raw["processes"]) >= {"apiserver", "supervisor", "scheduler", "controller"}
    record = cluster.state().processes["scheduler"]
    assert not record.restart_requested and pid_running(record.pid, record.args)
    # exactly one scheduler: no restart leaked a process the state file does not know
    assert processes_of(cluster, "local component scheduler", str(cluster.dir)) == [record.pid]
    assert all(s.ready for s in cluster.status())


@pytest.mark.parametrize("name", ["northd", "sb-ovsdb", "nb-ovsdb"])
def test_a_killed_ovn_process_comes_back_with_its_state(cluster: LocalCluster,
                                                        name: str) -> None:
    """Their databases are on disk: NB still has what the zone wrote, and the zone, which
    noticed nothing it had to repair, writes nothing more."""
    nb = command("ovn-nbctl", f"--db=unix:{cluster.nb_socket}", "--timeout=10")
    switches = subprocess.run([*nb, "ls-list"], capture_output=True, text=True,
                              check=True).stdout
    assert "ovn-worker" in switches
    before = cluster.state().processes[name]
    os.kill(before.pid, signal.SIGKILL)
    back = wait_until(lambda: (lambda s: s if s.restarts == before.restarts + 1 and s.ready
                               else None)(status_of(cluster, name)), timeout=60)
    assert back.last_exit == "killed by signal 9 (SIGKILL)"
    assert back.last_exit_log, "the tail of its own log"
    assert subprocess.run([*nb, "ls-list"], capture_output=True, text=True,
                          check=True).stdout == switches
    wait_until(lambda: status_of(cluster, "controller").ready, timeout=30)
    shown = ovnk("local", "status", "--dir", str(cluster.dir))
    row = next(line for line in shown.stdout.splitlines() if line.startswith(name + " "))
    assert row.split()[3:5] == ["ready", str(back.restarts)]


def test_nb_down_means_the_controller_is_not_ready_and_a_pod_event(
        cluster: LocalCluster) -> None:
    """NB's database made unreadable: its server cannot start (backed off, saying why), the
    zone controller says it cannot reach NB, a new pod gets a Warning event; once the
    database is back, so is NB, the controller is ready and a restart of it works."""
    admin = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
    db = cluster.ovn_dir / "nb.db"
    aside = db.with_name("nb.db.aside")
    db.rename(aside)
    try:
        os.kill(cluster.state().processes["nb-ovsdb"].pid, signal.SIGKILL)
        down = wait_until(lambda: (lambda s: s if s.last_exit == "exit code 1" else None)(
            status_of(cluster, "nb-ovsdb")), timeout=30)
        assert any("nb.db: open failed" in line for line in down.last_exit_log), down
        controller = wait_until(lambda: (lambda s: s if s.not_ready else None)(
            status_of(cluster, "controller")), timeout=30)
        assert controller.running and not controller.ready
        assert controller.not_ready.startswith(
            f"cannot reach OVN Northbound at unix:{cluster.nb_socket}: "), controller
        shown = ovnk("local", "status", "--dir", str(cluster.dir))
        assert shown.returncode == 1
        # (the OS error after it may differ by now: the socket refused, then removed)
        assert (f"    not ready: cannot reach OVN Northbound at unix:{cluster.nb_socket}: "
                in shown.stdout), shown.stdout
        assert "restarting in" in shown.stdout  # NB, backed off
        admin.create(PODS, {"metadata": {"name": "waits", "namespace": "default"},
                            "spec": {"containers": [{"name": "c", "image": "agnhost"}]}},
                     "default")

        def warning() -> JSON | None:
            return next((e for e in admin.list(EVENTS, namespace="default")["items"]
                         if e["involvedObject"]["name"] == "waits"
                         and e["type"] == "Warning"), None)

        event = wait_until(warning, timeout=60)
        assert event["reason"] == "ErrorAddingResource"
        assert event["message"].startswith(
            "failed to add the logical ports of pod default/waits: cannot reach OVN "
            "Northbound"), event["message"]
    finally:
        aside.rename(db)
    wait_until(lambda: status_of(cluster, "nb-ovsdb").ready, timeout=60)
    wait_until(lambda: status_of(cluster, "controller").ready, timeout=30)
    assert not status_of(cluster, "controller").not_ready
    nb = command("ovn-nbctl", f"--db=unix:{cluster.nb_socket}", "--timeout=10")
    wait_until(lambda: "default_waits" in subprocess.run(
        [*nb, "--bare", "--columns=name", "list", "Logical_Switch_Port"],
        capture_output=True, text=True).stdout, timeout=30)
    restarted = ovnk("local", "restart", "controller", "--dir", str(cluster.dir))
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr


def test_an_ovn_process_is_restarted_on_request(cluster: LocalCluster) -> None:
    before = cluster.state().processes["northd"]
    restarted = ovnk("local", "restart", "northd", "--dir", str(cluster.dir))
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    assert restarted.stdout.strip() == "restarted: northd"
    after = status_of(cluster, "northd")
    assert after.ready and after.pid != before.pid and after.restarts == before.restarts
    refused = ovnk("local", "restart", "apiserver", "--dir", str(cluster.dir))
    assert refused.returncode == 2
    assert "'apiserver' cannot be restarted" in refused.stderr
    assert "ovn-controller" not in refused.stderr  # no real dataplane: no node daemons


def test_down_stops_the_supervisor_first_and_nothing_comes_back(cluster: LocalCluster) -> None:
    # runs last in this module: the cluster goes down
    assert cluster.down()[0] == "supervisor"
    time.sleep(2)  # longer than the first backoff: a live supervisor would have restarted
    assert processes_of(cluster, str(cluster.dir)) == []
    assert cluster.status() == []
