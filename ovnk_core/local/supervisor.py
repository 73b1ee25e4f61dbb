"""Starting, watching and stopping the processes of one local cluster.

Every process is started detached (its own session) so it outlives the
``ovnk local up`` command, with its output in ``DIR/logs/<name>.log``; its
pid, command line and log path are recorded in ``DIR/cluster.json``.  A
process counts as running only if its pid is alive, not a zombie, and its
command line is still ours (pids get reused).  Stopping is by pid: TERM,
then KILL after a grace period.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ovnk_core.errors import OvnkError


class LocalClusterError(OvnkError):
    """The local cluster could not be started, inspected or stopped as asked."""


@dataclass
class ProcessRecord:
    name: str
    role: str  # "infra" (API server, OVN), "component" (restartable) or "node" (a node's daemons)
    args: list[str]
    log: str
    pid: int = 0
    started: float = 0.0
    netns: str = ""  # run inside this named network namespace
    env: dict[str, str] = field(default_factory=dict)  # added to the inherited environment


@dataclass
class ClusterState:
    api_port: int = 0
    nodes: list[str] = field(default_factory=list)
    processes: dict[str, ProcessRecord] = field(default_factory=dict)
    dataplane: bool = False

    @classmethod
    def load(cls, path: Path) -> ClusterState:
        if not path.exists():
            return cls()
        raw = json.loads(path.read_text())
        return cls(api_port=raw.get("api_port", 0), nodes=raw.get("nodes", []),
                   dataplane=bool(raw.get("dataplane", False)),
                   processes={name: ProcessRecord(**record)
                              for name, record in raw.get("processes", {}).items()})

    def save(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"api_port": self.api_port, "nodes": self.nodes,
                                   "dataplane": self.dataplane,
                                   "processes": {n: asdict(r) for n, r in
                                                 self.processes.items()}}, indent=2))
        tmp.replace(path)


def pid_running(pid: int, args: list[str]) -> bool:
    """Alive, not a zombie, and still running the command we started."""
    if pid <= 0:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    if state in ("Z", "X"):
        return False
    return bool(cmdline) and os.path.basename(cmdline[0].decode()) == os.path.basename(args[0])


def spawn(record: ProcessRecord) -> ProcessRecord:
    """Start the record's process detached; inside its network namespace if it names one.

    The namespace is entered between fork and exec (not with ``ip netns exec``), so the
    process's command line stays its own and ``pid_running`` recognises it.
    """
    Path(record.log).parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **record.env} if record.env else None
    preexec = None
    if record.netns:
        from ovnk_core.node.netns import enter_netns

        netns = record.netns

        def preexec() -> None:
            enter_netns(netns)
    with open(record.log, "ab") as log:
        proc = subprocess.Popen(record.args, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                env=env, preexec_fn=preexec)
    record.pid = proc.pid
    record.started = time.time()
    return record


def terminate(record: ProcessRecord, grace: float = 10.0) -> bool:
    """Stop the process; True if it was running."""
    if not pid_running(record.pid, record.args):
        return False
    try:
        os.kill(record.pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not pid_running(record.pid, record.args):
            _reap(record.pid)
            return True
        _reap(record.pid)
        time.sleep(0.05)
    try:
        os.kill(record.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _reap(record.pid)
    return True


def _reap(pid: int) -> None:
    """Collect the exit status when the process is our own child (tests run in-process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def wait_until(predicate: object, timeout: float, what: str, log: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        time.sleep(0.05)
    tail = ""
    if log and Path(log).exists():
        tail = ": " + " | ".join(Path(log).read_text(errors="replace").splitlines()[-5:])
    raise LocalClusterError(f"{what} not ready after {timeout:.0f}s{tail}")
