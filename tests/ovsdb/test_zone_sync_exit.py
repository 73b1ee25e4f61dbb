"""The zone controller process exits non-zero saying why when its informers cannot sync
(here the NetworkAttachmentDefinition CRD is not installed), so its supervisor restarts it
instead of it running controllers that never start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ovnk_local.apiserver.server import ServerHandle

from ovnk_core.ovn.processes import OvsdbServer


def test_the_zone_controller_exits_non_zero_with_the_reason(
        kube_apiserver: ServerHandle, nb_server: OvsdbServer, tmp_path: Path) -> None:
    nb_server.wipe()
    kubeconfig = kube_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    ready = tmp_path / "ready"
    result = subprocess.run(
        [sys.executable, "-m", "ovnk_core.cli.main", "controller", "--k8s-kubeconfig",
         str(kubeconfig), "--nb-address", nb_server.remote, "--enable-multi-network",
         "--informer-sync-timeout", "2s", "--ready-file", str(ready)],
        capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        "ovnk controller: informers did not sync within 2s: "
        "network-attachment-definitions.k8s.cni.cncf.io (NotFound: the server could not "
        "find the requested resource)")
    assert not ready.exists()
