"""The work queue behind every controller: keys, not events.

Properties a level-driven controller relies on:

* a key queued several times before a worker takes it is processed once
  (duplicates collapse);
* a key is never handed to two workers at once: if it is queued while being
  processed, it is handed out again only after ``done``;
* keys can be queued for later (``add_after``); an earlier request for the
  same key wins, so "retry in 1 min" never postpones "now";
* ``shutdown`` wakes every waiting worker.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections import deque

from ovnk_core.kube.backoff import Clock, RealClock


class ShutDown(Exception):
    """The queue was shut down; the worker should exit."""


class WorkQueue:
    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock or RealClock()
        self._cond = threading.Condition()
        self._ready: deque[str] = deque()
        self._queued: set[str] = set()
        self._processing: set[str] = set()
        self._dirty_while_processing: set[str] = set()
        self._waiting: list[tuple[float, int, str]] = []
        self._due: dict[str, float] = {}
        self._seq = itertools.count()
        self._shutdown = False

    def add(self, key: str) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: str) -> None:
        if self._shutdown:
            return
        self._due.pop(key, None)
        if key in self._processing:
            self._dirty_while_processing.add(key)
            return
        if key not in self._queued:
            self._queued.add(key)
            self._ready.append(key)
            self._cond.notify()

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            due = self.clock.now() + delay
            current = self._due.get(key)
            if key in self._queued or (current is not None and current <= due):
                return
            self._due[key] = due
            heapq.heappush(self._waiting, (due, next(self._seq), key))
            self._cond.notify()

    def get(self, timeout: float | None = None) -> str | None:
        """The next ready key (blocking); ``None`` on timeout; ``ShutDown`` when closed."""
        deadline = None if timeout is None else self.clock.now() + timeout
        with self._cond:
            while True:
                if self._shutdown:
                    raise ShutDown()
                self._promote_locked()
                if self._ready:
                    key = self._ready.popleft()
                    self._queued.discard(key)
                    self._processing.add(key)
                    return key
                now = self.clock.now()
                if deadline is not None and now >= deadline:
                    return None
                wait = None if not self._waiting else max(0.0, self._waiting[0][0] - now)
                if deadline is not None:
                    wait = deadline - now if wait is None else min(wait, deadline - now)
                self.clock.wait(self._cond, wait)

    def done(self, key: str) -> None:
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty_while_processing:
                self._dirty_while_processing.discard(key)
                self._add_locked(key)

    def _promote_locked(self) -> None:
        now = self.clock.now()
        while self._waiting and self._waiting[0][0] <= now:
            due, _, key = heapq.heappop(self._waiting)
            if self._due.get(key) == due:
                del self._due[key]
                self._add_locked(key)

    def shutdown(self) -> None:
        with self._cond:
            self._shutdown = True
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._ready) + len(self._due)

    def idle(self) -> bool:
        """Nothing queued, waiting or being processed."""
        with self._cond:
            return not (self._ready or self._due or self._processing)

    def pending_delayed(self) -> dict[str, float]:
        """Keys waiting for a later time, with their due time (for tests and metrics)."""
        with self._cond:
            return dict(self._due)
