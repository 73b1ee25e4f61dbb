"""Container probes as the kubelet runs them: specs, thresholds, timers.

``parse_probe`` reads a container's ``livenessProbe``, ``readinessProbe`` or
``startupProbe`` with Kubernetes' defaults (``periodSeconds`` 10, ``timeoutSeconds``
1, ``successThreshold`` 1, ``failureThreshold`` 3, ``initialDelaySeconds`` 0).
``ProbeManager`` runs every registered probe on its own timer thread and a small
pool (never on an informer or controller thread) and reports each result through
a callback; the kubelet (``ovnk_local.kubelet``) turns them into container
readiness, restarts and events.  Semantics follow the kubelet's prober:

* a probe's first run is ``initialDelaySeconds`` after the container started, then
  every ``periodSeconds``; one run takes at most ``timeoutSeconds``;
* readiness starts *not ready* and flips after ``successThreshold`` successes in a
  row, back after ``failureThreshold`` failures in a row;
* liveness starts *alive*; ``failureThreshold`` failures in a row report it failed,
  and the probe holds (stops) until the container is replaced;
* startup starts *not started*; while it has not succeeded, liveness and readiness
  do not run; it stops after its first success; ``failureThreshold`` failures fail it
  like liveness (the container is restarted).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

LIVENESS, READINESS, STARTUP = "liveness", "readiness", "startup"
KINDS = {LIVENESS: "livenessProbe", READINESS: "readinessProbe", STARTUP: "startupProbe"}
TITLE = {LIVENESS: "Liveness", READINESS: "Readiness", STARTUP: "Startup"}
HTTP, TCP, EXEC, GRPC = "http", "tcp", "exec", "grpc"


class InvalidProbe(ValueError):
    """A probe the kubelet cannot run (a named port the container does not declare...)."""


@dataclass(frozen=True)
class ProbeSpec:
    kind: str  # LIVENESS, READINESS or STARTUP
    handler: str  # HTTP, TCP, EXEC or GRPC
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3
    scheme: str = "HTTP"
    host: str = ""  # empty: the pod's IP
    port: int | str = 0  # a number or the name of a container port
    path: str = "/"
    headers: tuple[tuple[str, str], ...] = ()
    command: tuple[str, ...] = ()
    termination_grace: float | None = None  # the probe's terminationGracePeriodSeconds


def _number(spec: dict[str, Any], name: str, default: float, minimum: float) -> float:
    value = spec.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidProbe(f"{name} must be a number, got {value!r}")
    return max(float(value), minimum)


def parse_probe(kind: str, spec: dict[str, Any]) -> ProbeSpec:
    """One probe of a container spec, with Kubernetes' defaults.

    :raises InvalidProbe: no handler, or more than one.
    """
    handlers = [name for name in ("httpGet", "tcpSocket", "exec", "grpc") if spec.get(name)]
    if len(handlers) != 1:
        raise InvalidProbe(f"{KINDS[kind]} must have exactly one handler (httpGet, tcpSocket, "
                           f"exec, grpc), got {handlers or 'none'}")
    common: dict[str, Any] = {
        "initial_delay": _number(spec, "initialDelaySeconds", 0.0, 0.0),
        "period": _number(spec, "periodSeconds", 10.0, 1.0),
        "timeout": _number(spec, "timeoutSeconds", 1.0, 1.0),
        "success_threshold": int(_number(spec, "successThreshold", 1, 1)),
        "failure_threshold": int(_number(spec, "failureThreshold", 3, 1)),
    }
    if kind != READINESS:
        common["success_threshold"] = 1  # the API allows nothing else for these
    grace = spec.get("terminationGracePeriodSeconds")
    if isinstance(grace, int) and not isinstance(grace, bool):
        common["termination_grace"] = float(grace)
    [handler] = handlers
    body = spec[handler]
    if handler == "httpGet":
        headers = tuple((str(h.get("name", "")), str(h.get("value", "")))
                        for h in body.get("httpHeaders") or [] if isinstance(h, dict))
        return ProbeSpec(kind, HTTP, scheme=str(body.get("scheme") or "HTTP"),
                         host=str(body.get("host") or ""), port=body.get("port", 0),
                         path=str(body.get("path") or "/"), headers=headers, **common)
    if handler == "tcpSocket":
        return ProbeSpec(kind, TCP, host=str(body.get("host") or ""),
                         port=body.get("port", 0), **common)
    if handler == "exec":
        return ProbeSpec(kind, EXEC, command=tuple(str(w) for w in body.get("command") or []),
                         **common)
    return ProbeSpec(kind, GRPC, port=body.get("port", 0), **common)


def container_probes(container: dict[str, Any]) -> list[ProbeSpec]:
    """The container's probes (startup first)."""
    return [parse_probe(kind, container[field_name])
            for kind, field_name in ((STARTUP, "startupProbe"), (LIVENESS, "livenessProbe"),
                                     (READINESS, "readinessProbe"))
            if isinstance(container.get(field_name), dict)]


def resolve_port(port: int | str, container: dict[str, Any]) -> int:
    """A probe's port: a number, a numeric string, or a container port's name.

    :raises InvalidProbe: a name the container does not declare, or not a port.
    """
    if isinstance(port, str) and not port.isdigit():
        for declared in container.get("ports") or []:
            if isinstance(declared, dict) and declared.get("name") == port:
                return int(declared.get("containerPort", 0))
        raise InvalidProbe(f"port {port!r} is not a named port of container "
                           f"{container.get('name')!r}")
    number = int(port)
    if not 0 < number < 65536:
        raise InvalidProbe(f"port {number} is not a port")
    return number


# -- running them ------------------------------------------------------------------------------
Runner = Callable[[ProbeSpec], tuple[bool, str]]
# (container id, kind, success of this run, message, whether the probe's result changed)
Reporter = Callable[[str, str, bool, str, bool], None]


@dataclass
class _Worker:
    container: str
    spec: ProbeSpec
    run: Runner
    result: bool | None
    successes: int = 0
    failures: int = 0
    held: bool = False  # liveness/startup failed, or startup succeeded: no more runs
    running: bool = False
    serial: int = field(default_factory=itertools.count().__next__)


def initial_result(kind: str) -> bool | None:
    """Readiness: not ready; liveness: alive; startup: unknown (not started)."""
    return {READINESS: False, LIVENESS: True}.get(kind)


class ProbeManager:
    """Runs probes on timers; reports every result through ``report``."""

    def __init__(self, report: Reporter, max_workers: int = 8,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.report = report
        self.clock = clock
        self._workers: dict[tuple[str, str], _Worker] = {}
        self._heap: list[tuple[float, int, tuple[str, str]]] = []
        self._lock = threading.Condition()
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="probe")
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="probe-timers", daemon=True)
        self._thread.start()

    # -- registration ---------------------------------------------------------------------------
    def add(self, container: str, specs: list[ProbeSpec], run: Callable[[ProbeSpec], Runner],
            started: float | None = None, ready: bool | None = None) -> None:
        """Probe ``container`` (an id unique to one run of it) with ``specs``.

        ``run(spec)`` gives the function that runs one probe.  ``started`` (a clock
        value, default now) anchors ``initialDelaySeconds``.  ``ready`` seeds the
        readiness result (a container adopted from an earlier kubelet that was ready).
        Adding a container again changes nothing.
        """
        base = started if started is not None else self.clock()
        with self._lock:
            for spec in specs:
                key = (container, spec.kind)
                if key in self._workers:
                    continue
                result = initial_result(spec.kind)
                if spec.kind == READINESS and ready is not None:
                    result = ready
                self._workers[key] = _Worker(container, spec, run(spec), result)
                heapq.heappush(self._heap, (base + spec.initial_delay,
                                            self._workers[key].serial, key))
            self._lock.notify()

    def remove(self, container: str) -> None:
        with self._lock:
            for key in [k for k in self._workers if k[0] == container]:
                del self._workers[key]

    def result(self, container: str, kind: str) -> bool | None:
        """The probe's current result; None for an unknown startup result, and for a
        probe the container does not have."""
        with self._lock:
            worker = self._workers.get((container, kind))
            return None if worker is None else worker.result

    def has(self, container: str, kind: str) -> bool:
        with self._lock:
            return (container, kind) in self._workers

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            self._workers.clear()
            self._lock.notify()
        self._pool.shutdown(wait=False, cancel_futures=True)

    # -- timers ---------------------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._stopped:
                    now = self.clock()
                    if self._heap and self._heap[0][0] <= now:
                        break
                    wait = self._heap[0][0] - now if self._heap else None
                    self._lock.wait(wait)
                if self._stopped:
                    return
                _, serial, key = heapq.heappop(self._heap)
                worker = self._workers.get(key)
                if worker is None or worker.serial != serial or worker.held:
                    continue
                if worker.spec.kind != STARTUP and (worker.container, STARTUP) in \
                        self._workers and self._workers[(worker.container, STARTUP)].result \
                        is not True:
                    # liveness and readiness wait for the startup probe
                    heapq.heappush(self._heap, (self.clock() + worker.spec.period, serial, key))
                    continue
                worker.running = True
            try:
                self._pool.submit(self._run, worker, key)
            except RuntimeError:  # the pool is shut down
                return

    def _run(self, worker: _Worker, key: tuple[str, str]) -> None:
        started = self.clock()
        try:
            ok, message = worker.run(worker.spec)
        except Exception as exc:  # a runner that raises is a failed probe, never a dead timer
            log.exception("probe %s of %s raised", worker.spec.kind, worker.container)
            ok, message = False, f"probe error: {exc}"
        spec = worker.spec
        with self._lock:
            worker.running = False
            if self._workers.get(key) is not worker:
                return  # removed while it ran
            before = worker.result
            if ok:
                worker.successes, worker.failures = worker.successes + 1, 0
                if worker.successes >= spec.success_threshold:
                    worker.result = True
                    if spec.kind == STARTUP:
                        worker.held = True
            else:
                worker.successes, worker.failures = 0, worker.failures + 1
                if worker.failures >= spec.failure_threshold:
                    worker.result = False
                    if spec.kind in (LIVENESS, STARTUP):
                        worker.held = True
            changed = worker.result != before
            if not worker.held:
                heapq.heappush(self._heap, (max(started + spec.period, self.clock()),
                                            worker.serial, key))
                self._lock.notify()
        try:
            self.report(worker.container, spec.kind, ok, message, changed)
        except Exception:
            log.exception("reporting probe %s of %s failed", spec.kind, worker.container)
