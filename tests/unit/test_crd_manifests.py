"""The shipped CRD YAML files are exactly what the builders produce from the bundled
topologies (whatever else is installed: ``tests/third_party/test_crd_files.py``), and carry
upstream's names, scopes, short names, status subresources and CEL messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ovnk_core.manifests.crds import (
    CRD_DIR,
    build_crds,
    crd_file_differences,
    crd_file_name,
    main,
    render,
    sections_of,
    shipped_sections,
)
from ovnk_core.manifests.kustomize import manifest_files


def test_shipped_yaml_matches_builders() -> None:
    built = build_crds(shipped_sections())
    assert sorted(p.name for p in manifest_files(CRD_DIR)) == sorted(map(crd_file_name, built))
    for obj in built:
        assert (CRD_DIR / crd_file_name(obj)).read_text() == render(obj), (
            "run: python -m ovnk_core.manifests.crds")
    assert crd_file_differences() == []


def test_crd_identities() -> None:
    crds = {c["metadata"]["name"]: c["spec"] for c in build_crds()}
    udn = crds["userdefinednetworks.k8s.ovn.org"]
    cudn = crds["clusteruserdefinednetworks.k8s.ovn.org"]
    nad = crds["network-attachment-definitions.k8s.cni.cncf.io"]
    assert (udn["scope"], udn["names"]["shortNames"]) == ("Namespaced", ["udn"])
    assert (cudn["scope"], cudn["names"]["shortNames"]) == ("Cluster", ["cudn"])
    assert nad["names"]["shortNames"] == ["net-attach-def"]
    assert udn["versions"][0]["subresources"] == {"status": {}}
    assert crds["ipamclaims.k8s.cni.cncf.io"]["versions"][0]["name"] == "v1alpha1"
    assert crds["egressips.k8s.ovn.org"]["scope"] == "Cluster"


def test_upstream_cel_messages_are_present() -> None:
    text = json.dumps(build_crds())
    for message in (
        "spec.layer3 is required when topology is Layer3 and forbidden otherwise",
        "spec.layer2 is required when topology is Layer2 and forbidden otherwise",
        "spec.localnet is required when topology is Localnet and forbidden otherwise",
        "Topology is immutable", "Layer2 is immutable", "Localnet is immutable",
        "HostSubnet must be smaller than CIDR subnet", "HostSubnet must < 32 for ipv4 CIDR",
        "JoinSubnets is only supported for Primary network",
        "Subnets must not overlap or contain each other",
        "Disabled ipam.mode is only supported for Secondary network",
        "lifecycle Persistent is only supported when ipam.mode is Enabled",
        "physicalNetworkName cannot contain `,` or `:` characters",
        "transport 'NoOverlay' is only supported for Layer3 primary networks",
        "spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'",
    ):
        assert message in text, message


def test_help_prints_usage_and_writes_nothing(tmp_path: Path) -> None:
    before = {path.name: path.stat().st_mtime_ns for path in CRD_DIR.glob("*.yaml")}
    result = subprocess.run([sys.executable, "-m", "ovnk_core.manifests.crds", "--help"],
                            capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout.startswith("usage: python -m ovnk_core.manifests.crds")
    assert "--check" in result.stdout and "--topologies" in result.stdout
    assert {path.name: path.stat().st_mtime_ns for path in CRD_DIR.glob("*.yaml")} == before


def test_other_topologies_are_written_elsewhere_only(tmp_path: Path) -> None:
    """The checked-in files are the bundled topologies': ``--topologies`` needs ``--dir``,
    and ``--check`` reports a directory that differs, file by file."""
    refused = subprocess.run([sys.executable, "-m", "ovnk_core.manifests.crds",
                              "--topologies", "layer3"], capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 2 and "--topologies needs --dir" in refused.stderr
    assert main(["--topologies", "layer3", "--dir", str(tmp_path)]) == 0
    assert crd_file_differences(tmp_path, sections_of(["layer3"])) == []
    problems = crd_file_differences(tmp_path)
    assert problems == [f"{name}: differs from what the builders make" for name in (
        "k8s.ovn.org_clusteruserdefinednetworks.yaml", "k8s.ovn.org_userdefinednetworks.yaml")]
    (tmp_path / "k8s.ovn.org_egressips.yaml").unlink()
    (tmp_path / "stray.yaml").write_text("{}\n")
    assert main(["--check", "--dir", str(tmp_path), "--topologies", "layer3"]) == 1
    assert crd_file_differences(tmp_path, sections_of(["layer3"])) == [
        "k8s.ovn.org_egressips.yaml: missing",
        "stray.yaml: not built by ovnk_core.manifests.crds"]
