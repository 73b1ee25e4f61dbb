"""Work queue and backoff semantics, on a fake clock (no sleeping)."""

from __future__ import annotations

import random
import threading

import pytest

from ovnk_core.kube.backoff import CONTROLLER_BACKOFF, OBJECT_BACKOFF, Backoff, FakeClock
from ovnk_core.kube.workqueue import ShutDown, WorkQueue


def test_backoff_presets_match_upstream() -> None:
    no_jitter = Backoff(base=0.005, cap=60.0, jitter=0.0)
    assert [no_jitter.delay(n) for n in (1, 2, 3)] == [0.005, 0.01, 0.02]
    assert no_jitter.delay(30) == 60.0
    assert (CONTROLLER_BACKOFF.base, CONTROLLER_BACKOFF.cap) == (0.005, 60.0)
    assert (OBJECT_BACKOFF.base, OBJECT_BACKOFF.cap) == (1.0, 60.0)
    assert OBJECT_BACKOFF.delay(0) == 0.0


def test_backoff_jitter_stays_within_bounds() -> None:
    rng = random.Random(7)
    delays = [OBJECT_BACKOFF.delay(3, rng) for _ in range(200)]
    assert all(3.6 <= d <= 4.4 for d in delays)
    assert len(set(delays)) > 100
    assert all(OBJECT_BACKOFF.delay(20, rng) <= 60.0 for _ in range(50))


def test_duplicate_keys_collapse() -> None:
    queue = WorkQueue(FakeClock())
    for key in ("a", "b", "a", "a"):
        queue.add(key)
    assert [queue.get(timeout=0), queue.get(timeout=0), queue.get(timeout=0)] == ["a", "b", None]


def test_key_is_not_handed_out_twice_while_processing() -> None:
    queue = WorkQueue(FakeClock())
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.add("a")  # changed while a worker holds it
    assert queue.get(timeout=0) is None
    queue.done("a")
    assert queue.get(timeout=0) == "a"


def test_add_after_waits_for_the_clock_and_earliest_wins() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    queue.add_after("a", 10)
    queue.add_after("a", 60)  # a later retry does not postpone the earlier one
    assert queue.get(timeout=0) is None
    clock.advance(9.9)
    assert queue.get(timeout=0) is None
    clock.advance(0.2)
    assert queue.get(timeout=0) == "a"
    queue.done("a")
    clock.advance(100)
    assert queue.get(timeout=0) is None  # the 60 s request was superseded


def test_immediate_add_overrides_a_pending_delay() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    queue.add_after("a", 30)
    queue.add("a")
    assert queue.get(timeout=0) == "a"
    queue.done("a")
    clock.advance(31)
    assert queue.get(timeout=0) is None


def test_blocked_worker_wakes_when_clock_reaches_due_time() -> None:
    clock = FakeClock()
    queue = WorkQueue(clock)
    got: list[str | None] = []
    worker = threading.Thread(target=lambda: got.append(queue.get(timeout=50)))
    worker.start()
    queue.add_after("late", 5)
    clock.advance(5)
    worker.join(timeout=5)
    assert got == ["late"]


def test_shutdown_wakes_workers() -> None:
    queue = WorkQueue()
    errors: list[BaseException] = []

    def run() -> None:
        try:
            queue.get()
        except ShutDown as exc:
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    queue.shutdown()
    worker.join(timeout=5)
    assert not worker.is_alive() and len(errors) == 1
    with pytest.raises(ShutDown):
        queue.get(timeout=0)
