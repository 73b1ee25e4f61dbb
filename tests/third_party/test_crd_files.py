"""Installing a third-party topology changes neither the checked-in CRD files nor their test.

The ``flat`` topology (``dists/ovnk-flat-demo``) has a UDN section (``topology: Flat``), so
the CRDs of a cluster that loads it offer ``Flat``.  The checked-in files are the bundled
topologies' alone: with ``flat`` importable (``PYTHONPATH``, as an installed distribution
is), ``tests/unit/test_crd_manifests.py`` still passes, ``python -m ovnk_core.manifests.crds
--check`` finds no drift, and the writer gives a cluster with ``flat`` its CRDs only when
asked (``--topologies ... --dir``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

from ovnk_core.manifests.crds import CRD_DIR

ROOT = Path(__file__).resolve().parents[2]
UDN_CRD = "k8s.ovn.org_userdefinednetworks.yaml"


def run_with(site: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` from the repository root, ``site`` importable (the topology installed
    there), no OVNK_* setting of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVNK_")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


def topology_enum(path: Path) -> list[str]:
    crd = yaml.safe_load(path.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    return list(spec["properties"]["topology"]["enum"])


def test_the_extra_topology_is_installed_and_has_a_section(
        third_party_sites: dict[str, Path]) -> None:
    """What makes the other tests here meaningful: with the site importable, the installed
    sections (what ``build_crds()`` uses by default) include Flat."""
    result = run_with(third_party_sites["flat"], "-c",
                      "from ovnk_core.udn.sections import installed_sections; "
                      "print(','.join(installed_sections().values()))")
    assert result.returncode == 0, result.stderr
    assert "Flat" in result.stdout.strip().split(","), result.stdout


def test_the_crd_manifest_test_passes_with_an_extra_topology_installed(
        third_party_sites: dict[str, Path]) -> None:
    result = run_with(third_party_sites["flat"], "-m", "pytest", "-q", "-p",
                      "no:cacheprovider", "tests/unit/test_crd_manifests.py")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]


def test_the_checked_in_files_stay_the_bundled_topologies(
        third_party_sites: dict[str, Path], tmp_path: Path) -> None:
    before = {path.name: path.stat().st_mtime_ns for path in CRD_DIR.glob("*.yaml")}
    check = run_with(third_party_sites["flat"], "-m", "ovnk_core.manifests.crds", "--check")
    assert (check.returncode, check.stderr) == (0, "")
    assert "Flat" not in topology_enum(CRD_DIR / UDN_CRD)
    # a cluster that loads flat gets its CRDs where it asks for them
    written = run_with(third_party_sites["flat"], "-m", "ovnk_core.manifests.crds",
                       "--topologies", "layer2,layer3,localnet,flat", "--dir", str(tmp_path))
    assert written.returncode == 0, written.stderr
    assert "Flat" in topology_enum(tmp_path / UDN_CRD)
    assert {path.name: path.stat().st_mtime_ns for path in CRD_DIR.glob("*.yaml")} == before
