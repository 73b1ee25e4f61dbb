"""The percentile the latency benchmarks report: nearest rank, ``ceil(q x n)``-th value."""

from __future__ import annotations

import math


def percentile(values: list[float], q: float) -> float:
    """The value at quantile ``q`` (0..1) of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]
