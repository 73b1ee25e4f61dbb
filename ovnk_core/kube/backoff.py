"""Retry timing: per-key exponential backoff with jitter, and the clock it runs on.

Two presets match upstream: controllers back off from 5 ms to 1 min, object
retries from 1 s to 60 s.  The failure budget (15, as upstream) decides when
a key leaves the fast lane; the key is never dropped — it moves to the slow
lane, retried every resync period.  The clock is injectable so tests can move
time by hand instead of sleeping.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Protocol

MAX_FAILURES = 15


class Clock(Protocol):
    def now(self) -> float: ...

    def wait(self, condition: threading.Condition, timeout: float | None) -> None: ...


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        condition.wait(timeout)


class FakeClock:
    """A clock that only moves when told; waiting on it returns as soon as it moves."""

    def __init__(self, start: float = 1000.0) -> None:
        self._now = start
        self._conditions: list[threading.Condition] = []

    def now(self) -> float:
        return self._now

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        if condition not in self._conditions:
            self._conditions.append(condition)
        condition.wait(0.05)

    def advance(self, seconds: float) -> None:
        self._now += seconds
        for condition in self._conditions:
            with condition:
                condition.notify_all()


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff ``base * 2**(failures-1)`` capped at ``cap``, with +-``jitter``."""

    base: float = 0.005
    cap: float = 60.0
    jitter: float = 0.1

    def delay(self, failures: int, rng: random.Random | None = None) -> float:
        if failures <= 0:
            return 0.0
        raw = min(self.cap, self.base * float(1 << min(failures - 1, 62)))
        spread = float((rng or random).uniform(-self.jitter, self.jitter))
        return max(0.0, min(self.cap, raw * (1 + spread)))


CONTROLLER_BACKOFF = Backoff(base=0.005, cap=60.0)
OBJECT_BACKOFF = Backoff(base=1.0, cap=60.0)
