"""Upstream OVN-Kubernetes' UDN/CUDN API validation scenarios, run as upstream runs them.

``data/upstream_udn_api_scenarios.yaml`` holds every scenario of upstream's
``test/e2e/testscenario/cudn`` at the snapshot ovnk follows.  Each manifest is applied with
the real ``kubectl`` to the local API server (ovnk's CRDs, ovnk's UDN/CUDN admission): an
invalid one must be refused with upstream's expected text in kubectl's stderr (substring,
as upstream's ``ContainSubstring``), a valid one accepted.  Upstream expects the messages of
Kubernetes 1.36, e.g. a failed CEL rule on a string printing the string.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from ovnk_local.apiserver.security import SecurityOptions
from ovnk_local.apiserver.server import ServerHandle, ServerOptions, serve, with_security

import ovnk_core
from ovnk_core.udn import admission as udn_admission

DATA = Path(__file__).resolve().parent / "data" / "upstream_udn_api_scenarios.yaml"
CRD_DIR = Path(ovnk_core.__file__).resolve().parent / "manifests" / "crds"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
SCENARIOS: list[dict[str, Any]] = yaml.safe_load(DATA.read_text())["scenarios"]


class Kubectl:
    def __init__(self, handle: ServerHandle, home: Path) -> None:
        self.kubeconfig = handle.write_kubeconfig(home / "kubeconfig")
        self.home = home

    def __call__(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [KUBECTL, f"--kubeconfig={self.kubeconfig}", f"--cache-dir={self.home}/cache",
             "--request-timeout=20s", *args], input=stdin, capture_output=True, text=True,
            timeout=60, env={"HOME": str(self.home), "PATH": "/usr/bin:/bin"})


@pytest.fixture(scope="module")
def kubectl(cluster_pki: SecurityOptions,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kubectl]:
    """One server for every scenario, with ovnk's CRDs and UDN/CUDN admission."""
    if not Path(KUBECTL).exists():
        pytest.fail("these tests drive the real kubectl, which is not installed", pytrace=False)
    handle = serve("127.0.0.1", 0, None, with_security(ServerOptions(), cluster_pki))
    try:
        udn_admission.register(handle.admission)
        run = Kubectl(handle, tmp_path_factory.mktemp("kubectl"))
        applied = run("apply", "-k", str(CRD_DIR))
        assert applied.returncode == 0, applied.stderr
        run("create", "namespace", "red")
        yield run
    finally:
        handle.stop()


def _id(scenario: dict[str, Any]) -> str:
    return f"{scenario['set']}: {scenario['description']}"


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if "expectedErr" in s], ids=_id)
def test_invalid_scenario_is_refused_with_upstreams_message(kubectl: Kubectl,
                                                            scenario: dict[str, Any]) -> None:
    result = kubectl("apply", "-f", "-", stdin=scenario["manifest"])
    assert result.returncode != 0, f"accepted: {result.stdout}"
    assert scenario["expectedErr"] in result.stderr, result.stderr


@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if "expectedErr" not in s], ids=_id)
def test_valid_scenario_is_accepted(kubectl: Kubectl, scenario: dict[str, Any]) -> None:
    result = kubectl("apply", "-f", "-", stdin=scenario["manifest"])
    try:
        assert result.returncode == 0, result.stderr
    finally:
        kubectl("delete", "--ignore-not-found", "--wait=false", "-f", "-",
                stdin=scenario["manifest"])


def test_the_data_holds_every_upstream_scenario() -> None:
    """Upstream's 148 scenarios at the snapshot (98 refused, 50 accepted), the CEL-on-a-
    string ones among them."""
    assert len(SCENARIOS) == 148 and sum("expectedErr" in s for s in SCENARIOS) == 98
    assert any('Invalid value: "300.0.0.0/24": CIDR is invalid' in s.get("expectedErr", "")
               for s in SCENARIOS)
