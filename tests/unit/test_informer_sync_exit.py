"""A component whose informers cannot sync exits non-zero saying why (so its supervisor
restarts it), instead of staying alive as a leader that runs nothing.

Here the NetworkAttachmentDefinition CRD is not installed, so the NAD informer's
list fails with 404 for ever.  Before, the cluster manager's leader-election thread
died in ``start_controllers``: the process kept running, held the lease without
renewing it, and ran no controller.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for, with_crds

from ovnk_core.identities import OVN_NAMESPACE
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import LEASES, NAMESPACES
from ovnk_core.testing.waiting import wait_until

REASON = ("informers did not sync within 2s: network-attachment-definitions.k8s.cni.cncf.io "
          "(NotFound: ")


def ovnk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ovnk_core.cli.main", *args],
                          capture_output=True, text=True, timeout=120, check=False)


def test_the_cluster_manager_exits_non_zero_with_the_reason_and_frees_its_lease(
        kube_apiserver: ServerHandle, tmp_path: Path) -> None:
    admin = KubeClient(client_for(kube_apiserver))
    admin.create(NAMESPACES, {"metadata": {"name": OVN_NAMESPACE}})
    kubeconfig = kube_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    ready = tmp_path / "ready"
    result = ovnk("cluster-manager", "--k8s-kubeconfig", str(kubeconfig),
                  "--enable-multi-network", "--informer-sync-timeout", "2s",
                  "--ready-file", str(ready))
    assert result.returncode == 2, result.stderr[-2000:]
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ovnk cluster-manager: {REASON}"), result.stderr[-2000:]
    assert "the server could not find the requested resource" in last
    assert not ready.exists()
    # it led, failed, and gave the lease up for a restarted process (or another replica)
    lease = admin.get(LEASES, "ovnkube-cluster-manager", OVN_NAMESPACE)
    assert lease["spec"].get("holderIdentity") is None


def test_with_the_crds_installed_the_same_command_syncs_and_runs(
        kube_apiserver: ServerHandle, tmp_path: Path) -> None:
    admin = with_crds(kube_apiserver)
    admin.create(NAMESPACES, {"metadata": {"name": OVN_NAMESPACE}})
    kubeconfig = kube_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    ready = tmp_path / "ready"
    process = subprocess.Popen(
        [sys.executable, "-m", "ovnk_core.cli.main", "cluster-manager", "--k8s-kubeconfig",
         str(kubeconfig), "--enable-multi-network", "--informer-sync-timeout", "2s",
         "--ready-file", str(ready)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(ready.exists, timeout=30)
        time.sleep(3)  # past the sync timeout: still running
        assert process.poll() is None
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr[-2000:]
