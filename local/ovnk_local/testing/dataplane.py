"""The one gate of every test that needs the local cluster's real dataplane, the
image's ``kubectl`` against such a cluster, and the few probes those tests make of
real pods (their network namespace, pings, the kernel's echo counter).

A machine without it (no root, no OVS userspace datapath...) skips those
tests with the reason; in CI (``CI=true``) every tier must run, so the same
reason fails the test instead of hiding it.
"""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION
from ovnk_core.testing.capabilities import missing_capability
from ovnk_local.cluster import LocalCluster, dataplane_unavailable


def require_dataplane() -> None:
    """Return when a real dataplane can run here; otherwise fail (CI) or skip, with why."""
    reason = dataplane_unavailable()
    if reason is None:
        return
    missing_capability(f"no real dataplane here: {reason}")


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


def primary_ip(pod: dict[str, Any]) -> str:
    """The pod's address on its primary network (from its pod-networks annotation)."""
    networks = json.loads(pod["metadata"]["annotations"][POD_NETWORKS_ANNOTATION])
    primary = next(key for key, entry in networks.items() if entry["role"] == "primary")
    return str(networks[primary]["ip_addresses"][0]).split("/")[0]


def real_reachability(cluster: LocalCluster, selected: list[dict[str, Any]]
                      ) -> set[tuple[str, str]]:
    """(source, target) pairs of ``ns/name`` where the target's kernel got the pings to its
    primary address and the source the replies: what ``ovnk reachability`` must say.  A
    source never reaches a target at its own address (isolated networks may overlap)."""
    keys = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in selected}

    def towards(target: str) -> list[tuple[str, str]]:
        reached = []
        for source in keys:
            if source == target or primary_ip(keys[source]) == primary_ip(keys[target]):
                # the same address in two networks: the source would ping itself (and that
                # echo, counted by a target meanwhile, would look like a reach)
                continue
            before = echo_requests_received(pod_netns(cluster, keys[target]))
            replied = ping(pod_netns(cluster, keys[source]), primary_ip(keys[target]))
            received = echo_requests_received(pod_netns(cluster, keys[target])) > before
            if replied and received:
                reached.append((source, target))
        return reached

    with ThreadPoolExecutor(len(keys)) as pool:  # one target per worker: counters stay exact
        return {pair for pairs in pool.map(towards, keys) for pair in pairs}


def wait_pods_ready(cluster: LocalCluster, namespace: str, explain: str = "") -> None:
    """Every pod of ``namespace`` Ready within 90 s, else fail with ``explain``."""
    result = kubectl(cluster, "wait", "--for=condition=Ready", "pod", "--all", "-n",
                     namespace, "--timeout=90s", check=False)
    assert result.returncode == 0, f"pods of {namespace} not ready: {result.stderr}\n{explain}"


__all__ = ["echo_requests_received", "kubectl", "ping", "pod_netns", "primary_ip",
           "real_reachability", "require_dataplane", "wait_pods_ready"]
