"""Bounded waiting for tests: poll a condition until it holds or the time is up.

Tests of asynchronous code wait for an observable state, never sleep a fixed
time; this is the one helper they use.  ``NotFound`` while polling counts as
"not yet" (an object that has not been created yet).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from ovnk_core.kube.errors import NotFound

T = TypeVar("T")


DEFAULT_TIMEOUT = 30.0
"""Long enough for a condition that takes a second on an idle machine to be reached on a
2-CPU machine running tests in parallel (load 20 and more); only a failing wait takes it."""


def wait_until(predicate: Callable[[], T], timeout: float = DEFAULT_TIMEOUT,
               interval: float = 0.05, what: str = "condition") -> T:
    """Return the first truthy value of ``predicate()``; fail the test after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except NotFound:
            value = None  # type: ignore[assignment]
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} not reached within {timeout:.0f}s")
        time.sleep(interval)
