"""Level-driven controllers: informer events enqueue keys, workers reconcile keys.

``reconcile(key)`` reads the current object from the informer caches and
converges the world to it; it never sees the event that woke it.  What it
raises decides what happens next:

* nothing: success; the key's failure count is reset;
* ``NotReady``: requeue after a short fixed delay (or a growing one with
  ``backoff=True``), failure budget untouched;
* ``PermanentError``: reported through ``on_error`` (status condition and
  event), not requeued — the next change of the object or the resync retries;
* anything else (``TemporaryError`` included): requeue with per-key
  exponential backoff; after ``max_failures`` the key moves to the slow lane
  (retried every ``slow_lane_period``), reported through ``on_error`` and
  counted in ``slow_lane``, never dropped.

Workers start only after every informer has synced and ``initial_sync`` has
run (the initial-sync barrier), so a controller never acts on a half-filled
cache.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ovnk_core.errors import NotReady, PermanentError, TemporaryError
from ovnk_core.kube.backoff import CONTROLLER_BACKOFF, MAX_FAILURES, Backoff, Clock, RealClock
from ovnk_core.kube.client import JSON
from ovnk_core.kube.informer import Informer, wait_for_informers
from ovnk_core.kube.resources import object_key
from ovnk_core.kube.workqueue import ShutDown, WorkQueue

log = logging.getLogger(__name__)

KeyFunc = Callable[[JSON], Iterable[str]]
ErrorReporter = Callable[[str, BaseException, str], None]  # (key, error, kind)
ChangeFilter = Callable[[JSON | None, JSON | None], bool]  # (old, new) -> enqueue?

NOT_READY_DELAY = 1.0


@dataclass
class ControllerStats:
    reconciles: int = 0
    failures: int = 0
    not_ready: int = 0
    permanent: int = 0
    slow_lane: set[str] = field(default_factory=set)


class Controller:
    """One named controller: a queue, its workers, and the informers that feed it.

    :param name: used in logs and metrics.
    :param reconcile: ``reconcile(key)``; see the module docstring for what raising means.
    :param workers: number of worker threads (one key is never processed by two at once).
    :param on_error: called with ``(key, error, kind)`` where kind is ``permanent`` or
        ``slow-lane``, to set a status condition and emit an event.
    :param initial_sync: run once after informers synced and before workers start.
    """

    def __init__(self, name: str, reconcile: Callable[[str], None], workers: int = 1,
                 backoff: Backoff = CONTROLLER_BACKOFF, max_failures: int = MAX_FAILURES,
                 slow_lane_period: float = 300.0, not_ready_delay: float = NOT_READY_DELAY,
                 on_error: ErrorReporter | None = None,
                 initial_sync: Callable[[], None] | None = None,
                 clock: Clock | None = None) -> None:
        self.name = name
        self.reconcile = reconcile
        self.workers = workers
        self.backoff = backoff
        self.max_failures = max_failures
        self.slow_lane_period = slow_lane_period
        self.not_ready_delay = not_ready_delay
        self.on_error = on_error
        self.initial_sync = initial_sync
        self.clock = clock or RealClock()
        self.queue = WorkQueue(self.clock)
        self.stats = ControllerStats()
        self._failures: dict[str, int] = {}
        self._waits: dict[str, int] = {}
        self._lock = threading.Lock()
        self._informers: list[Informer] = []
        self._threads: list[threading.Thread] = []
        self._all_keys: Callable[[], Iterable[str]] | None = None

    # -- wiring ----------------------------------------------------------------------------
    def watch(self, informer: Informer, key_func: KeyFunc | None = None,
              primary: bool = False, relevant: ChangeFilter | None = None) -> None:
        """Enqueue ``key_func(obj)`` (default: the object's own key) on every change.

        ``primary=True`` marks the informer whose keys ``reconcile_all`` enqueues.
        ``relevant(old, new)``, when given, drops changes the controller does not
        care about (say, a pod update that did not touch its addresses) before any
        key is computed; adds and deletes have ``old`` or ``new`` as None.
        """
        keys_of = key_func or (lambda obj: [object_key(obj)])

        def on_change(_event: str, old: JSON | None, new: JSON | None) -> None:
            if relevant is not None and not relevant(old, new):
                return
            keys: set[str] = set()
            for obj in (old, new):
                if obj is not None:
                    keys.update(keys_of(obj))
            for key in keys:
                self.queue.add(key)

        informer.add_handler(on_change)
        self._informers.append(informer)
        if primary:
            self._all_keys = informer.list_keys

    def reconcile_after(self, key: str, delay: float) -> None:
        self.queue.add_after(key, delay)

    def requeue(self, key: str) -> None:
        """Reconcile ``key`` again now, without backoff."""
        self.queue.add(key)

    def retry_waiting(self) -> int:
        """Reconcile now every key that is waiting (``NotReady``) or failing, in the slow
        lane too: what they waited for may be back (a database reachable again).  Returns
        how many were queued."""
        with self._lock:
            keys = set(self._failures) | set(self._waits)
        for key in keys:
            self.queue.add(key)
        return len(keys)

    def reconcile_all(self) -> None:
        if self._all_keys is None:
            raise RuntimeError(f"controller {self.name} has no primary informer")
        for key in self._all_keys():
            self.queue.add(key)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, sync_timeout: float = 60.0) -> None:
        """Wait for informers, run the initial sync, then start the workers."""
        wait_for_informers(self._informers, sync_timeout)
        if self.initial_sync is not None:
            self.initial_sync()
        for index in range(self.workers):
            thread = threading.Thread(target=self._worker, name=f"{self.name}-worker-{index}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
        log.info("controller %s: started %d worker(s)", self.name, self.workers)

    def stop(self) -> None:
        self.queue.shutdown()
        for thread in self._threads:
            thread.join(timeout=10)

    def failures(self, key: str) -> int:
        with self._lock:
            return self._failures.get(key, 0)

    # -- one key ---------------------------------------------------------------------------
    def _worker(self) -> None:
        while True:
            try:
                key = self.queue.get()
            except ShutDown:
                return
            if key is None:
                continue
            try:
                self.process(key)
            finally:
                self.queue.done(key)

    def process(self, key: str) -> None:
        """Reconcile one key and schedule what its outcome asks for."""
        self.stats.reconciles += 1
        try:
            self.reconcile(key)
        except NotReady as exc:
            self.stats.not_ready += 1
            with self._lock:
                waits = self._waits[key] = self._waits.get(key, 0) + 1
            if exc.delay is not None:
                delay = exc.delay
            elif exc.backoff:
                delay = max(self.not_ready_delay, self.backoff.delay(waits))
            else:
                delay = self.not_ready_delay
            log.debug("controller %s: %s not ready (retry in %.2fs): %s", self.name, key,
                      delay, exc)
            self.queue.add_after(key, delay)
            return
        except PermanentError as exc:
            self.stats.permanent += 1
            log.warning("controller %s: %s failed permanently: %s", self.name, key, exc)
            self._forget(key)
            self._report(key, exc, "permanent")
            return
        except Exception as exc:
            self._failed(key, exc)
            return
        self._forget(key)

    def _failed(self, key: str, exc: BaseException) -> None:
        self.stats.failures += 1
        with self._lock:
            count = self._failures.get(key, 0) + 1
            self._failures[key] = count
        if count > self.max_failures:
            first = key not in self.stats.slow_lane
            self.stats.slow_lane.add(key)
            log.warning("controller %s: %s failed %d times (%s); retrying every %.0fs",
                        self.name, key, count, exc, self.slow_lane_period)
            if first:
                self._report(key, exc, "slow-lane")
            self.queue.add_after(key, self.slow_lane_period)
            return
        delay = exc.delay if isinstance(exc, TemporaryError) and exc.delay is not None \
            else self.backoff.delay(count)
        log.info("controller %s: %s failed (attempt %d): %s; retrying in %.3fs",
                 self.name, key, count, exc, delay)
        self.queue.add_after(key, delay)

    def _forget(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)
            self._waits.pop(key, None)
        self.stats.slow_lane.discard(key)

    def _report(self, key: str, exc: BaseException, kind: str) -> None:
        if self.on_error is None:
            return
        try:
            self.on_error(key, exc, kind)
        except Exception:
            log.exception("controller %s: reporting the error of %s failed", self.name, key)

