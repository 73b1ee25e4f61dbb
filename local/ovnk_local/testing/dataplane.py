"""The one gate of every test that needs the local cluster's real dataplane, the
image's ``kubectl`` against such a cluster, and the few probes those tests make of
real pods (their network namespace, pings, the kernel's echo counter).

A machine without it (no root, no OVS userspace datapath...) skips those
tests with the reason; in CI (``CI=true``) every tier must run, so the same
reason fails the test instead of hiding it.
"""

from __future__ import annotations

import subprocess
from typing import Any

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


def pod_netns(cluster: LocalCluster, pod: dict[str, Any]) -> str:
    """The network namespace of a running pod (from its object)."""
    meta = pod["metadata"]
    return (cluster.dataplane.pod_netns_prefix(pod["spec"]["nodeName"])
            + f"{meta['namespace']}.{meta['name']}")


def echo_requests_received(netns: str) -> int:
    """ICMP echo requests the kernel of ``netns`` received so far (``InEchos``)."""
    snmp = subprocess.run(["ip", "netns", "exec", netns, "cat", "/proc/net/snmp"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    header, values = [line.split() for line in snmp if line.startswith("Icmp:")][:2]
    return int(dict(zip(header, values, strict=True))["InEchos"])


def ping(netns: str, ip: str, interface: str | None = None) -> bool:
    """Three pings from ``netns`` (out of ``interface`` when given); True when answered."""
    bind = ["-I", interface] if interface else []
    result = subprocess.run(["ip", "netns", "exec", netns, "ping", "-c", "3", "-i", "0.2",
                             "-W", "1", "-q", *bind, ip], capture_output=True, text=True)
    return result.returncode == 0


def wait_pods_ready(cluster: LocalCluster, namespace: str, explain: str = "") -> None:
    """Every pod of ``namespace`` Ready within 90 s, else fail with ``explain``."""
    result = kubectl(cluster, "wait", "--for=condition=Ready", "pod", "--all", "-n",
                     namespace, "--timeout=90s", check=False)
    assert result.returncode == 0, f"pods of {namespace} not ready: {result.stderr}\n{explain}"


__all__ = ["echo_requests_received", "kubectl", "ping", "pod_netns", "require_dataplane",
           "wait_pods_ready"]
