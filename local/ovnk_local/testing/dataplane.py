"""The one gate of every test that needs the local cluster's real dataplane, and the
image's ``kubectl`` against such a cluster.

A machine without it (no root, no OVS userspace datapath...) skips those
tests with the reason; in CI (``CI=true``) every tier must run, so the same
reason fails the test instead of hiding it.
"""

from __future__ import annotations

import subprocess

import pytest

from ovnk_core.testing.capabilities import in_ci
from ovnk_local.cluster import LocalCluster, dataplane_unavailable


def require_dataplane() -> None:
    """Return when a real dataplane can run here; otherwise fail (CI) or skip, with why."""
    reason = dataplane_unavailable()
    if reason is None:
        return
    if in_ci():
        pytest.fail(f"no real dataplane in CI: {reason}")
    pytest.skip(f"no real dataplane here: {reason}")


def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``kubectl --kubeconfig <the cluster's> ARGS``; ``check``: fail the test on an error,
    with kubectl's message."""
    result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args],
                            input=stdin, capture_output=True, text=True, timeout=timeout)
    if check:
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result


__all__ = ["kubectl", "require_dataplane"]
