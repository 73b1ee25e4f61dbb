"""The local cluster's supervisor: restarts what dies, carries out restarts.

``ovnk local up`` starts one supervisor process (``ovnk local supervise``,
recorded in ``cluster.json`` as ``supervisor``, stopped first by ``down``).
It is the parent of every supervised process — the OVN databases and
ovn-northd, each node's OVS (ovsdb-server, ovs-vswitchd) and ovn-controller,
the components and the node agents: it starts them, so it learns how each one
ended (exit code or signal), and it is the only one that restarts them.
Level-driven: every pass reads ``cluster.json`` and, under its lock, converges
each supervised record:

* not started yet (pid 0): start it, once every record it ``requires`` is
  ready (ovn-northd needs the NB and SB servers, ovn-controller the SB server
  and its node's OVS, the zone controller NB);
* ``restart_requested`` (``ovnk local restart``): stop it (on purpose, not
  counted), start it again, forget its backoff;
* running, but a record it is ``bound_to`` was started after it: stop it and
  start it again (on purpose, not counted) — a node agent after its node's
  ovs-vswitchd, whose OpenFlow tables it must fill again;
* found dead: record how it ended (``last_exit``, the tail of its log), remove
  its ready file, and schedule the next start after an exponential backoff
  (``base``, doubling per death in a row, capped at ``cap``; a run longer than
  ``stable_after`` starts the series again) — a process that crashes at start
  is retried ever more slowly, never in a hot loop;
* its next start is due and what it requires is ready: start it and count a
  restart.

What the processes keep lives on disk and survives them: the NB and SB
databases, each node's ``conf.db`` (bridges, ports, the pods' interfaces),
and, with the userspace datapath, the bridges' tap devices and their
addresses.  A record ``down`` marked unwanted is never touched again, nor is
anything unsupervised (the API server).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ovnk_local.state import ClusterState, ProcessRecord, StateFile
from ovnk_local.supervisor import (
    log_tail,
    pid_running,
    record_ready,
    spawn_process,
    terminate,
    terminate_all,
)

log = logging.getLogger(__name__)

BACKOFF_BASE = 1.0
BACKOFF_CAP = 30.0
STABLE_AFTER = 60.0
POLL_INTERVAL = 0.2
LOG_TAIL_LINES = 5
REAP_GRACE = 1.0  # seconds a child seen dead may take to become reapable


def restart_delay(failures: int, base: float = BACKOFF_BASE, cap: float = BACKOFF_CAP) -> float:
    """Seconds to wait before the next start after ``failures`` deaths in a row (>= 1)."""
    return float(min(cap, base * 2 ** max(0, failures - 1)))


def describe_exit(status: int | None) -> str:
    """A wait status as an operator reads it."""
    if status is None:
        return "exited (exit status unknown: not started by this supervisor)"
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = "unknown signal"
        return f"killed by signal {-code} ({name})"
    return f"exit code {code}"


def waiting_for(record: ProcessRecord, state: ClusterState) -> list[str]:
    """The records ``record`` requires that are not ready (one missing from the state
    is not waited for)."""
    return [name for name in record.requires
            if name in state.processes and not record_ready(state.processes[name])]


def rebound_by(record: ProcessRecord, state: ClusterState) -> str | None:
    """The record ``record`` is bound to that was started after it, if any."""
    for name in record.bound_to:
        other = state.processes.get(name)
        if other is not None and other.pid and other.started > record.started:
            return name
    return None


class Supervisor:
    def __init__(self, states: StateFile, base: float = BACKOFF_BASE, cap: float = BACKOFF_CAP,
                 stable_after: float = STABLE_AFTER,
                 clock: Callable[[], float] = time.time) -> None:
        self.states = states
        self.base = base
        self.cap = cap
        self.stable_after = stable_after
        self.clock = clock
        # the processes this one started, by pid: it alone reaps them (holding the objects
        # keeps subprocess from reaping them behind its back, see spawn_process)
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._exits: dict[int, int] = {}  # reaped child pid -> wait status
        self._waiting: set[str] = set()  # records said to wait for their requirements
        self._last = ClusterState()  # the state as the last pass read it

    def run(self, stop: threading.Event, interval: float = POLL_INTERVAL) -> bool:
        """Supervise until ``stop`` is set (True) or the cluster's state file, once seen, is
        gone (False)."""
        log.info("supervising the local cluster of %s", self.states.path.parent)
        seen = False
        while not stop.is_set():
            if self.states.path.exists():
                seen = True
            elif seen:  # it was there: removed under a running cluster
                self.orphaned()
                return False
            try:
                self.step()
            except Exception:  # a bad pass must not end supervision
                log.exception("supervisor pass failed")
            stop.wait(interval)
        log.info("supervisor stopping (the processes keep running)")
        return True

    def orphaned(self) -> None:
        """The cluster's directory or state file was removed under it: nobody can reach or
        stop its processes through ``ovnk local`` any more, so stop what it last knew of
        (its children and the cluster's other records) instead of running them forever."""
        records = [record for record in self._last.processes.values()
                   if record.name != "supervisor"]
        log.error("%s is gone: stopping the %d processes of this local cluster",
                  self.states.path, len(records))
        terminate_all(records)
        self._reap()

    # -- one pass ----------------------------------------------------------------------------
    def step(self) -> None:
        self._reap()
        now = self.clock()
        state = self._last = self.states.read()
        if not any(self._due(record, state, now) for record in state.processes.values()):
            return
        with self.states.update() as state:
            now = self.clock()
            for record in state.processes.values():
                if self._due(record, state, now):
                    self._converge(record, state, now)

    def _due(self, record: ProcessRecord, state: ClusterState, now: float) -> bool:
        if not record.supervised or not record.wanted:
            return False
        if record.restart_requested:
            return True
        if record.pid == 0:
            return self._requirements_ready(record, state)
        if pid_running(record.pid, record.args):
            return rebound_by(record, state) is not None
        if record.next_start == 0:
            return True  # found dead
        return now >= record.next_start and self._requirements_ready(record, state)

    def _converge(self, record: ProcessRecord, state: ClusterState, now: float) -> None:
        if record.restart_requested:
            log.info("%s: restarting on request", record.name)
            self._stop(record)
            record.restart_requested = False
            record.failures = 0
            record.next_start = 0.0
            self._start_when_ready(record, state)
        elif record.pid == 0:
            self._start(record)
        elif pid_running(record.pid, record.args):
            log.info("%s: restarting, since %s started again", record.name,
                     rebound_by(record, state))
            self._stop(record)
            self._start_when_ready(record, state)
        elif record.next_start == 0:
            self._died(record, now)
        else:
            self._start(record)
            record.restarts += 1
            record.next_start = 0.0
            log.info("%s: started again (restart %d) as pid %d", record.name, record.restarts,
                     record.pid)

    def _requirements_ready(self, record: ProcessRecord, state: ClusterState) -> bool:
        waiting = waiting_for(record, state)
        if waiting and record.name not in self._waiting:
            log.info("%s: waiting for %s", record.name, ", ".join(waiting))
        self._waiting.discard(record.name)
        if waiting:
            self._waiting.add(record.name)
        return not waiting

    def _start_when_ready(self, record: ProcessRecord, state: ClusterState) -> None:
        """Start it now if what it requires is ready, else leave it to a later pass."""
        if self._requirements_ready(record, state):
            self._start(record)
        else:
            record.pid = 0

    def _stop(self, record: ProcessRecord) -> None:
        terminate(record)
        self._forget(record.pid)

    def _died(self, record: ProcessRecord, now: float) -> None:
        record.last_exit = describe_exit(self._status_of(record.pid))
        record.last_exit_at = now
        record.last_exit_log = log_tail(record.log, LOG_TAIL_LINES, record.log_offset)
        if record.ready_file:
            Path(record.ready_file).unlink(missing_ok=True)
        record.failures = 1 if now - record.started >= self.stable_after \
            else record.failures + 1
        delay = restart_delay(record.failures, self.base, self.cap)
        record.next_start = now + delay
        log.warning("%s (pid %d) %s; starting it again in %.1fs", record.name, record.pid,
                    record.last_exit, delay)

    def _start(self, record: ProcessRecord) -> None:
        if record.ready_file:
            Path(record.ready_file).unlink(missing_ok=True)
        self._children[record.pid] = spawn_process(record)

    # -- exit statuses of our own children ---------------------------------------------------
    def _reap(self) -> None:
        for pid in list(self._children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                self._children.pop(pid, None)
                continue
            if done:
                # tell the Popen too, or its finaliser would wait for the pid again (maybe
                # reused by then)
                self._children.pop(pid).returncode = os.waitstatus_to_exitcode(status)
                self._exits[pid] = status

    def _status_of(self, pid: int) -> int | None:
        """The exit status of a child that is gone from ``/proc``'s view.  A dying process
        loses its command line before it can be reaped, so one seen as not running may not
        be waitable yet: give it a moment (one of ours, at most ``REAP_GRACE``)."""
        deadline = time.monotonic() + REAP_GRACE
        self._reap()
        while pid in self._children and time.monotonic() < deadline:
            time.sleep(0.01)
            self._reap()
        return self._exits.pop(pid, None)

    def _forget(self, pid: int) -> None:
        self._reap()
        self._exits.pop(pid, None)
        self._children.pop(pid, None)
