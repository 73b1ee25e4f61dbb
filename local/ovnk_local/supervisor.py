"""Starting, watching and stopping the processes of one local cluster.

Every process is started detached (its own session) so it outlives the
command that started it, with its output in ``DIR/logs/<name>.log``; its
pid, command line and log path are recorded in ``DIR/cluster.json``
(``ovnk_local.state``).  A process counts as running only if its pid is
alive, not a zombie, and its command line is still ours (pids get reused).
Stopping is by pid: TERM, then KILL after a grace period.  Restarting what
dies is the supervisor's (``ovnk_local.supervision``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from ovnk_core.errors import OvnkError
from ovnk_core.ovn.install import program_name
from ovnk_core.ovn.processes import unix_socket_accepts
from ovnk_local.state import ProcessRecord

CLUSTER_ENV = "OVNK_LOCAL_CLUSTER"
"""Set to the cluster's directory in the environment of the processes ``up`` starts (the API
server, the supervisor), hence inherited by everything the supervisor starts: ``down`` finds
a cluster's processes by it even when ``cluster.json`` lost their records."""


class LocalClusterError(OvnkError):
    """The local cluster could not be started, inspected or stopped as asked."""


def pid_running(pid: int, args: list[str]) -> bool:
    """Alive, not a zombie, and still running the command we started."""
    if pid <= 0 or not process_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmdline) and program_name([part.decode() for part in cmdline]) == \
        program_name(args)


def record_ready(record: ProcessRecord) -> bool:
    """Running, and ready as far as its record can tell: its ready file written, its
    socket accepting connections (neither: running is ready)."""
    if not pid_running(record.pid, record.args):
        return False
    if record.ready_file and not Path(record.ready_file).exists():
        return False
    return not record.ready_socket or unix_socket_accepts(
        record.ready_socket.replace("{pid}", str(record.pid)))


def cluster_marker(cluster_dir: Path) -> dict[str, str]:
    """The environment entry that marks a process as one of the cluster in ``cluster_dir``."""
    return {CLUSTER_ENV: str(cluster_dir.resolve())}


def marked_processes(cluster_dir: Path) -> list[int]:
    """Pids of the running processes marked as the cluster's (``CLUSTER_ENV``), except this
    process: what is left of a cluster whose state file lost them."""
    marker = b"\0" + b"=".join(part.encode() for part in
                               next(iter(cluster_marker(cluster_dir).items()))) + b"\0"
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = b"\0" + (entry / "environ").read_bytes()
        except OSError:
            continue  # gone meanwhile, or a kernel thread
        if marker in environ:
            found.append(int(entry.name))
    return sorted(found)


def kill_pids(pids: list[int], grace: float = 10.0) -> list[int]:
    """SIGTERM each, then SIGKILL those still there after ``grace``; the ones signalled."""
    signalled = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
            signalled.append(pid)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace
    alive = list(signalled)
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if process_alive(pid)]
    for pid in alive:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return signalled


def process_alive(pid: int) -> bool:
    """The pid is a process that has not ended (not a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def spawn(record: ProcessRecord) -> ProcessRecord:
    """Start the record's process detached (``spawn_process``); the record, with its pid."""
    spawn_process(record)
    return record


def spawn_process(record: ProcessRecord) -> subprocess.Popen[bytes]:
    """Start the record's process detached; inside its network namespace if it names one.

    The namespace is entered between fork and exec (not with ``ip netns exec``), so the
    process's command line stays its own and ``pid_running`` recognises it.  A caller that
    reaps the process itself must keep the returned object: a dropped ``Popen`` of a
    running child is reaped by the next ``Popen`` anyone creates (``subprocess._cleanup``),
    and its exit status is lost.
    """
    Path(record.log).parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **record.env} if record.env else None
    preexec = None
    if record.container:  # a container: its declared environment, its own mounts
        from ovnk_local.mount_ns import enter_mount_namespace

        # the cluster's mark aside (how 'down' finds its processes), nothing inherited
        marked = {CLUSTER_ENV: os.environ[CLUSTER_ENV]} if CLUSTER_ENV in os.environ else {}
        env, mounts = {**record.env, **marked}, [tuple(m) for m in record.mounts]

        def preexec() -> None:
            enter_mount_namespace(mounts)
    elif record.netns:
        from ovnk_core.node.netns import enter_netns

        netns = record.netns

        def preexec() -> None:
            enter_netns(netns)
    with open(record.log, "ab") as log:
        record.log_offset = log.seek(0, os.SEEK_END)
        proc = subprocess.Popen(record.args, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env=env, preexec_fn=preexec)
    record.pid = proc.pid
    record.started = time.time()
    return proc


def terminate(record: ProcessRecord, grace: float = 10.0) -> bool:
    """Stop the process; True if it was running."""
    return bool(terminate_all([record], grace))


def terminate_all(records: list[ProcessRecord], grace: float = 10.0) -> list[ProcessRecord]:
    """Stop the processes together: SIGTERM to each, then wait for all of them (SIGKILL for
    any still running after ``grace``), so that stopping many takes as long as the slowest,
    not their sum.  The ones that were running, in the given order."""
    signalled = []
    for record in records:
        if not pid_running(record.pid, record.args):
            continue
        try:
            os.kill(record.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        signalled.append(record)
    remaining = list(signalled)
    deadline = time.monotonic() + grace
    while remaining and time.monotonic() < deadline:
        for record in list(remaining):
            if not pid_running(record.pid, record.args):
                remaining.remove(record)
            _reap(record.pid)
        if remaining:
            time.sleep(0.05)
    for record in remaining:
        try:
            os.kill(record.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    killed_by = time.monotonic() + 5  # SIGKILL is not refused, but takes effect a bit later
    while remaining and time.monotonic() < killed_by:
        for record in list(remaining):
            _reap(record.pid)
            if not pid_running(record.pid, record.args):
                remaining.remove(record)
        if remaining:
            time.sleep(0.05)
    return signalled


def _reap(pid: int) -> None:
    """Collect the exit status when the process is our own child (tests run in-process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def log_tail(log: str, lines: int = 5, since: int = 0) -> list[str]:
    """The last ``lines`` lines of a log file written after byte ``since`` (its end only)."""
    try:
        with open(log, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(since, size - 8192, 0))
            data = handle.read()
    except OSError:
        return []
    return data.decode(errors="replace").splitlines()[-lines:]


def wait_until(predicate: object, timeout: float, what: str, log: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.05)
    tail = ""
    if log and Path(log).exists():
        tail = ": " + " | ".join(log_tail(log))
    raise LocalClusterError(f"{what} not ready after {timeout:.0f}s{tail}")
