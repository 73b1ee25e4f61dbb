"""The one gate of every test that needs the local cluster's real dataplane.

A machine without it (no root, no OVS userspace datapath...) skips those
tests with the reason; in CI (``CI=true``) every tier must run, so the same
reason fails the test instead of hiding it.
"""

from __future__ import annotations

import pytest

from ovnk_core.testing.capabilities import in_ci
from ovnk_local.cluster import dataplane_unavailable


def require_dataplane() -> None:
    """Return when a real dataplane can run here; otherwise fail (CI) or skip, with why."""
    reason = dataplane_unavailable()
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"no real dataplane in CI: {reason}")
    pytest.skip(f"no real dataplane here: {reason}")


__all__ = ["require_dataplane"]
