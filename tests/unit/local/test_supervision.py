"""The local cluster's supervisor and its state file, on real processes (no cluster)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ovnk_local.state import ProcessRecord, StateFile, StateFileError
from ovnk_local.supervision import Supervisor, describe_exit, restart_delay
from ovnk_local.supervisor import pid_running, record_ready, terminate

from ovnk_core.testing.waiting import wait_until


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


SERVES = python("print('serving', flush=True); import time; time.sleep(120)")
# listens on the unix socket argv[1] after argv[2] seconds ({pid} in it: its own pid)
LISTENS = python("import os, socket, sys, time; time.sleep(float(sys.argv[2])); "
                 "path = sys.argv[1].replace('{pid}', str(os.getpid())); "
                 "os.path.exists(path) and os.unlink(path); "
                 "s = socket.socket(socket.AF_UNIX); s.bind(path); s.listen(); "
                 "print('listening', flush=True); time.sleep(120)")
CRASHES = python("import sys; print('cannot start: no kubeconfig', flush=True); sys.exit(3)")


@pytest.fixture
def states(tmp_path: Path) -> Iterator[StateFile]:
    states = StateFile(tmp_path / "cluster.json")
    yield states
    for record in states.read().processes.values():
        terminate(record, grace=2)


def supervised(tmp_path: Path, name: str, args: list[str], **extra: object) -> ProcessRecord:
    return ProcessRecord(name, "component", args, str(tmp_path / f"{name}.log"),
                         supervised=True, ready_file=str(tmp_path / f"{name}.ready"),
                         **extra)  # type: ignore[arg-type]


@pytest.fixture
def supervisor(states: StateFile) -> Iterator[Supervisor]:
    """A supervisor (backoff 0.2s doubling, capped at 0.8s) running in a thread."""
    running = Supervisor(states, base=0.2, cap=0.8)
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop, 0.05), daemon=True)
    thread.start()
    yield running
    stop.set()
    thread.join(timeout=10)


def record_of(states: StateFile, name: str) -> ProcessRecord:
    return states.read().processes[name]


def record_when(states: StateFile, name: str,
                condition: Callable[[ProcessRecord], bool]) -> ProcessRecord:
    """The record once ``condition`` holds for it."""
    found: list[ProcessRecord] = []

    def check() -> bool:
        record = record_of(states, name)
        found[:] = [record]
        return condition(record)

    wait_until(check)
    return found[0]


def add(states: StateFile, *records: ProcessRecord) -> None:
    with states.update() as state:
        for record in records:
            state.processes[record.name] = record


def test_backoff_doubles_per_death_and_is_capped() -> None:
    assert [restart_delay(n, 1.0, 30.0) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]


def test_exit_reasons_read_as_an_operator_reads_them() -> None:
    exited = subprocess.Popen(["sh", "-c", "exit 3"])
    _, status = os.waitpid(exited.pid, 0)
    assert describe_exit(status) == "exit code 3"
    killed = subprocess.Popen(["sleep", "60"])
    killed.send_signal(signal.SIGKILL)
    _, status = os.waitpid(killed.pid, 0)
    assert describe_exit(status) == "killed by signal 9 (SIGKILL)"
    assert describe_exit(None) == "exited (exit status unknown: not started by this supervisor)"


def test_a_killed_process_comes_back_and_says_how_it_ended(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    add(states, supervised(tmp_path, "web", SERVES))
    first = record_when(states, "web", lambda r: pid_running(r.pid, r.args))
    Path(first.ready_file).write_text("ready\n")
    wait_until(lambda: Path(first.log).read_text().strip() == "serving")
    os.kill(first.pid, signal.SIGKILL)
    back = record_when(states, "web", lambda r: r.restarts == 1 and pid_running(r.pid, r.args))
    assert back.pid != first.pid
    assert back.last_exit == "killed by signal 9 (SIGKILL)"
    assert back.last_exit_log == ["serving"]
    assert back.next_start == 0.0 and back.failures == 1
    assert not Path(back.ready_file).exists()  # the dead one's readiness is gone with it


def test_a_process_crashing_at_start_is_backed_off_not_hot_looped(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    add(states, supervised(tmp_path, "broken", CRASHES))
    delays: dict[int, float] = {}

    def observe() -> bool:
        record = record_of(states, "broken")
        if record.next_start:
            delays[record.failures] = round(record.next_start - record.last_exit_at, 3)
        return len(delays) >= 5

    wait_until(observe, timeout=20, interval=0.01)
    assert delays == {1: 0.2, 2: 0.4, 3: 0.8, 4: 0.8, 5: 0.8}
    record = record_of(states, "broken")
    assert record.last_exit == "exit code 3"
    assert record.last_exit_log == ["cannot start: no kubeconfig"]
    # five deaths took at least 0.2 + 0.4 + 0.8 + 0.8 s; a hot loop would have done dozens
    assert 4 <= record.restarts <= 5


def test_exit_statuses_survive_other_subprocesses_of_the_same_process(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    """Python's subprocess reaps the children of dropped Popen objects whenever a new Popen
    is made: the supervisor keeps its own, so their exit statuses stay its to read."""
    stop = threading.Event()

    def make_popens() -> None:
        while not stop.is_set():
            subprocess.run(["true"], check=True)

    churn = threading.Thread(target=make_popens, daemon=True)
    churn.start()
    try:
        add(states, supervised(tmp_path, "broken", CRASHES))
        record = record_when(states, "broken", lambda r: r.restarts >= 3)
    finally:
        stop.set()
        churn.join()
    assert record.last_exit == "exit code 3"


def test_what_down_stopped_or_nobody_supervises_is_left_alone(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    stopped = supervised(tmp_path, "stopped", SERVES, wanted=False)
    infra = ProcessRecord("apiserver", "infra", SERVES, str(tmp_path / "apiserver.log"))
    marker = supervised(tmp_path, "marker", SERVES)
    add(states, stopped, infra, marker)
    wait_until(lambda: record_of(states, "marker").pid)  # the supervisor did a pass
    time.sleep(0.3)  # and several more
    assert record_of(states, "stopped").pid == 0 and record_of(states, "apiserver").pid == 0


def test_a_restart_request_is_carried_out_on_purpose(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    add(states, supervised(tmp_path, "web", SERVES))
    first = record_when(states, "web", lambda r: r.pid != 0)
    with states.update() as state:
        state.processes["web"].restart_requested = True
    again = record_when(states, "web", lambda r: not r.restart_requested)
    assert again.pid != first.pid and pid_running(again.pid, again.args)
    assert not pid_running(first.pid, first.args)
    assert again.restarts == 0 and again.last_exit == ""  # stopped on purpose: no crash


def test_a_corrupt_state_file_is_reported_and_supervision_goes_on(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    states.path.write_text("{not json")
    with pytest.raises(StateFileError, match=r"cluster\.json is not a local cluster's state"):
        states.read()
    with pytest.raises(StateFileError):
        supervisor.step()
    time.sleep(0.3)  # the supervisor's own passes fail on it meanwhile, and are logged
    states.path.write_text(json.dumps({"processes": {}}))  # repaired: supervision resumes
    add(states, supervised(tmp_path, "web", SERVES))
    wait_until(lambda: record_of(states, "web").pid)


WRITER = """
import sys
from pathlib import Path
from ovnk_local.state import ProcessRecord, StateFile
states = StateFile(Path(sys.argv[1]))
for index in range(int(sys.argv[3])):
    with states.update() as state:
        name = f"{sys.argv[2]}-{index}"
        state.processes[name] = ProcessRecord(name, "component", ["x"], "log")
        state.api_port += 1
"""


def test_concurrent_writers_lose_nothing_and_never_tear_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.json"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{i}", "25"])
               for i in range(6)]
    torn = 0
    while any(w.poll() is None for w in writers):  # a reader never sees half a file
        try:
            StateFile(path).read()
        except StateFileError:
            torn += 1
    assert [w.wait() for w in writers] == [0] * 6
    state = StateFile(path).read()
    assert torn == 0
    assert state.api_port == 150 and len(state.processes) == 150
    assert not list(tmp_path.glob(".cluster.json.*.tmp"))


def server(tmp_path: Path, name: str, delay: float = 0.0, **extra: object) -> ProcessRecord:
    """A supervised process that listens on ``<name>.sock`` after ``delay`` seconds."""
    sock = str(tmp_path / f"{name}.sock")
    return ProcessRecord(name, "infra", [*LISTENS, sock, str(delay)], str(tmp_path / f"{name}.log"),
                         supervised=True, ready_socket=sock, **extra)  # type: ignore[arg-type]


def test_a_process_starts_once_what_it_requires_is_ready(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    """ovn-northd needs NB and SB serving: started only once both accept connections; a
    dependency that dies later is restarted alone (its dependents reconnect by themselves)."""
    add(states, server(tmp_path, "nb", delay=0.8), server(tmp_path, "sb"),
        server(tmp_path, "northd", requires=["nb", "sb"]))
    sb = record_when(states, "sb", lambda r: record_ready(r))
    nb = record_when(states, "nb", lambda r: record_ready(r))
    northd = record_when(states, "northd", lambda r: record_ready(r))
    assert northd.started >= max(nb.started + 0.8, sb.started)  # nb listens 0.8 s late
    os.kill(nb.pid, signal.SIGKILL)
    back = record_when(states, "nb", lambda r: r.restarts == 1 and record_ready(r))
    assert back.last_exit == "killed by signal 9 (SIGKILL)"
    again = record_of(states, "northd")
    assert again.pid == northd.pid and again.restarts == 0 and pid_running(again.pid, again.args)


def test_a_restart_request_waits_for_what_it_requires(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    add(states, server(tmp_path, "nb", delay=0.5), server(tmp_path, "controller",
                                                           requires=["nb"]))
    first = record_when(states, "controller", lambda r: record_ready(r))
    nb = record_of(states, "nb")
    with states.update() as state:  # NB is killed, and a restart of the controller asked
        os.kill(nb.pid, signal.SIGKILL)
        state.processes["controller"].restart_requested = True
    again = record_when(states, "controller", lambda r: r.pid not in (0, first.pid)
                        and record_ready(r))
    assert not pid_running(first.pid, first.args)
    assert again.started > record_when(states, "nb", lambda r: record_ready(r)).started
    assert again.restarts == 0 and again.last_exit == ""


def test_a_process_bound_to_another_restarts_after_it(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    """A node agent fills the OpenFlow tables of its node's ovs-vswitchd: a new
    ovs-vswitchd has none, so the agent starts again after it (on purpose, not counted)."""
    add(states, server(tmp_path, "vswitchd"),
        server(tmp_path, "agent", requires=["vswitchd"], bound_to=["vswitchd"]))
    agent = record_when(states, "agent", lambda r: record_ready(r))
    switch = record_of(states, "vswitchd")
    os.kill(switch.pid, signal.SIGKILL)
    switch = record_when(states, "vswitchd", lambda r: r.restarts == 1 and record_ready(r))
    again = record_when(states, "agent", lambda r: r.pid not in (0, agent.pid)
                        and record_ready(r))
    assert again.started > switch.started
    assert again.restarts == 0 and again.last_exit == ""
    assert not pid_running(agent.pid, agent.args)
    time.sleep(0.3)  # several passes: started once after its vswitchd, and left alone since
    assert record_of(states, "agent").pid == again.pid


def test_a_ready_socket_may_name_the_process_pid(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    """ovn-controller takes no --unixctl: its socket is ovn-controller.PID.ctl."""
    sock = str(tmp_path / "ovn-controller.{pid}.ctl")
    add(states, ProcessRecord("ctl", "node", [*LISTENS, sock, "0.3"], str(tmp_path / "c.log"),
                              supervised=True, ready_socket=sock))
    started = record_when(states, "ctl", lambda r: r.pid != 0)
    assert not record_ready(started)  # listening only after 0.3 s
    ready = record_when(states, "ctl", lambda r: record_ready(r))
    assert Path(sock.replace("{pid}", str(ready.pid))).exists()


def test_a_supervisor_whose_state_file_vanished_stops_the_cluster(
        tmp_path: Path, states: StateFile) -> None:
    running = Supervisor(states, base=0.2, cap=0.8)
    stop = threading.Event()
    ended: list[bool] = []
    thread = threading.Thread(target=lambda: ended.append(running.run(stop, 0.05)),
                              daemon=True)
    thread.start()
    try:
        child = supervised(tmp_path, "web", SERVES)
        infra = ProcessRecord("apiserver", "infra", SERVES, str(tmp_path / "apiserver.log"))
        add(states, child, infra)
        started = record_when(states, "web", lambda r: pid_running(r.pid, r.args))
        with states.update() as state:  # the API server is started by 'up', not supervised
            state.processes["apiserver"].pid = subprocess.Popen(
                infra.args, start_new_session=True).pid
        apiserver = record_of(states, "apiserver")
        wait_until(lambda: running._last.processes["apiserver"].pid == apiserver.pid)
        states.path.unlink()  # e.g. the cluster's directory removed under it
        thread.join(timeout=30)
        assert ended == [False]
        assert not pid_running(started.pid, started.args)
        assert not pid_running(apiserver.pid, apiserver.args)
    finally:
        stop.set()
        thread.join(timeout=10)
        for record in (child, infra):
            terminate(record, grace=2)


def test_a_supervisor_started_before_its_state_file_waits_for_it(
        tmp_path: Path, states: StateFile, supervisor: Supervisor) -> None:
    time.sleep(0.2)  # several passes with no state file: not taken for a vanished one
    add(states, supervised(tmp_path, "web", SERVES))
    record_when(states, "web", lambda r: pid_running(r.pid, r.args))


def test_down_stops_the_clusters_processes_its_state_lost(tmp_path: Path) -> None:
    from ovnk_local.cluster import LocalCluster
    from ovnk_local.supervisor import cluster_marker

    cluster = LocalCluster(tmp_path / "cluster")
    other = LocalCluster(tmp_path / "other")
    ours = subprocess.Popen(SERVES, env={**os.environ, **cluster_marker(cluster.dir)},
                            start_new_session=True)
    theirs = subprocess.Popen(SERVES, env={**os.environ, **cluster_marker(other.dir)},
                              start_new_session=True)
    try:
        cluster.dir.mkdir()
        cluster.states.write(cluster.states.read())  # a state listing no process
        assert cluster.down() == [f"pid {ours.pid}"]
        assert ours.wait(timeout=10) == -signal.SIGTERM
        assert theirs.poll() is None  # another cluster's process is not touched
    finally:
        for process in (ours, theirs):
            process.kill()
            process.wait()
