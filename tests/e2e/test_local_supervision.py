"""``ovnk local`` supervises its components: a dead one comes back, with backoff, and says why.

A local cluster without a real dataplane; components are killed with SIGKILL, made to
crash at start, and restarted by several ``ovnk local restart`` commands at once.
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
    # it started every component itself (it is their parent, so it knows how they end)
    for name in ("scheduler", "kubelet", "endpointslice-controller", "cluster-manager",
                 "controller"):
        record = state.processes[name]
        assert record.supervised and record.ready_file
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
        os.kill(cluster.state().processes["scheduler"].pid, signal.SIGKILL)
        time.sleep(8)  # a hot loop would restart it dozens of times meanwhile
        record = cluster.state().processes["scheduler"]
        # deaths 1s, 2s, 4s apart (then 8s, ... capped at 30s): three restarts in 8s
        assert 2 <= record.restarts <= 4, record
        assert record.failures == record.restarts + 1 or record.failures == record.restarts
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


def test_down_stops_the_supervisor_first_and_nothing_comes_back(cluster: LocalCluster) -> None:
    # runs last in this module: the cluster goes down
    assert cluster.down()[0] == "supervisor"
    time.sleep(2)  # longer than the first backoff: a live supervisor would have restarted
    assert processes_of(cluster, str(cluster.dir)) == []
    assert cluster.status() == []
