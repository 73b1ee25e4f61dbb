"""``dist/`` renders with ``kubectl kustomize`` and agrees with the code: one copy of the CRDs
and RBAC, flags ``ovnk`` takes, mounts with their volumes, bound service accounts, a
configuration file the components load, upstream's names; ``ovnk cni-install`` writes a
plugin the host's Python runs and the node's conflist."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ovnk_core.cli.main import build_parser
from ovnk_core.cli.main import main as ovnk_main
from ovnk_core.config import load_config
from ovnk_core.manifests.crds import build_crds, shipped_sections
from ovnk_core.manifests.dist import DIST_DIR, containers, find, pod_spec, render
from ovnk_core.manifests.kustomize import listed_resources, manifest_files
from ovnk_core.manifests.rbac import RBAC_DIR, ovnk_rbac_documents

OVN_PROGRAMS = {"ovsdb-server", "ovn-northd", "ovn-controller", "/bin/sh"}


@pytest.fixture(scope="module")
def objects() -> list[dict[str, Any]]:
    return render()


def key(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def test_crds_and_rbac_are_the_shipped_files(objects: list[dict[str, Any]]) -> None:
    rendered = {key(obj): obj for obj in objects}
    for crd in build_crds(shipped_sections()):
        assert rendered[key(crd)] == crd
    for document in ovnk_rbac_documents():
        assert rendered[key(document)] == document
    for folder in (RBAC_DIR, RBAC_DIR.parent / "crds"):
        assert listed_resources(folder) == [p.name for p in manifest_files(folder)], folder
    assert not list(DIST_DIR.rglob("*customresourcedefinition*"))


def test_upstream_names(objects: list[dict[str, Any]]) -> None:
    find(objects, "Namespace", "ovn-kubernetes")
    deployment = find(objects, "Deployment", "ovnkube-control-plane")
    assert pod_spec(deployment)["serviceAccountName"] == "ovnkube-cluster-manager"
    assert [c["name"] for c in containers(deployment)] == ["ovnkube-cluster-manager"]
    daemonset = find(objects, "DaemonSet", "ovnkube-node")
    assert pod_spec(daemonset)["serviceAccountName"] == "ovnkube-node"
    assert {c["name"] for c in containers(daemonset)} >= {
        "cni-install", "nb-ovsdb", "sb-ovsdb", "ovn-northd", "ovn-controller",
        "ovnkube-controller", "ovnkube-node"}


def expand(value: str) -> str:
    """``$(VAR)`` as the kubelet expands it, with a stand-in value."""
    return re.sub(r"\$\((\w+)\)", "node-1", value)


def test_every_ovnk_container_takes_its_flags(objects: list[dict[str, Any]]) -> None:
    parser = build_parser()
    checked = 0
    for workload in (o for o in objects if o["kind"] in ("Deployment", "DaemonSet")):
        for container in containers(workload):
            command = container["command"]
            if command[0] in OVN_PROGRAMS:
                continue
            assert command[0] == "ovnk", container["name"]
            argv = [expand(word) for word in [*command[1:], *container.get("args", [])]]
            try:
                parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"{workload['metadata']['name']}/{container['name']}: "
                            f"ovnk refuses {argv}")
            checked += 1
    assert checked == 5  # cni-install, ovnkube-controller, ovnkube-node, the manager, webhook


def test_mounts_volumes_and_accounts_exist(objects: list[dict[str, Any]]) -> None:
    accounts = {key(o)[1:] for o in objects if o["kind"] == "ServiceAccount"}
    bound = {(s["namespace"], s["name"]) for o in objects if o["kind"].endswith("Binding")
             for s in o["subjects"] if s["kind"] == "ServiceAccount"}
    config_maps = {key(o)[1:] for o in objects if o["kind"] == "ConfigMap"}
    for workload in (o for o in objects if o["kind"] in ("Deployment", "DaemonSet")):
        namespace = workload["metadata"]["namespace"]
        spec = pod_spec(workload)
        if spec.get("automountServiceAccountToken", True):
            account = (namespace, spec["serviceAccountName"])
            assert account in accounts and account in bound, account
        volumes = {v["name"]: v for v in spec["volumes"]}
        for container in containers(workload):
            for mount in container.get("volumeMounts", []):
                assert mount["name"] in volumes, (container["name"], mount)
        for volume in volumes.values():
            if "configMap" in volume:
                assert (namespace, volume["configMap"]["name"]) in config_maps


def test_the_config_map_is_a_valid_configuration(objects: list[dict[str, Any]],
                                                 tmp_path: Path) -> None:
    config_map = find(objects, "ConfigMap", "ovnkube-config")
    path = tmp_path / "ovnk.toml"
    path.write_text(config_map["data"]["ovnk.toml"])
    config = load_config({}, env={}, config_file=path)
    assert config.enable_network_segmentation and config.enable_multi_network


def test_cni_install_writes_a_plugin_the_host_runs(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    bin_dir, conf_dir = tmp_path / "opt-cni-bin", tmp_path / "etc-cni-net.d"
    socket = "/var/run/ovn-kubernetes/cni/ovn-cni-server.sock"
    argv = ["cni-install", "--bin-dir", str(bin_dir), "--conf-dir", str(conf_dir),
            "--server-socket", socket]
    assert ovnk_main(argv) == 0
    assert ovnk_main(argv) == 0  # a restarted pod installs again
    conflist = json.loads((conf_dir / "10-ovn-kubernetes.conflist").read_text())
    assert conflist["plugins"] == [{"type": "ovn-k8s-cni-overlay", "server-socket": socket}]
    plugin = bin_dir / "ovn-k8s-cni-overlay"
    assert os.access(plugin, os.X_OK)
    assert sorted(p.name for p in bin_dir.iterdir()) == ["ovn-k8s-cni-overlay"]
    # the host's python3, outside the virtual environment, with nothing of ovnk installed
    reply = subprocess.run([str(plugin)], env={"CNI_COMMAND": "VERSION", "PATH": "/usr/bin"},
                           input=b'{"cniVersion": "1.0.0"}', capture_output=True, check=True,
                           cwd=tmp_path)
    assert "1.1.0" in json.loads(reply.stdout)["supportedVersions"]
    status = subprocess.run([str(plugin)], env={"CNI_COMMAND": "STATUS", "PATH": "/usr/bin",
                                                      "CNI_PATH": str(bin_dir)},
                            input=json.dumps({"cniVersion": "1.1.0", "name": "n",
                                              "type": "ovn-k8s-cni-overlay",
                                              "server-socket": str(tmp_path / "no.sock")}
                                             ).encode(), capture_output=True, cwd=tmp_path)
    assert status.returncode == 1 and json.loads(status.stdout)["code"] == 50


def test_a_broken_kustomization_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({"resources": ["gone.yaml"]}))
    from ovnk_core.errors import OvnkError
    with pytest.raises(OvnkError, match="kubectl kustomize .*gone.yaml"):
        render(tmp_path)


def test_plugin_rbac_is_what_the_config_map_enables(objects: list[dict[str, Any]]) -> None:
    from ovnk_core.manifests.dist import main as dist_main
    assert dist_main(["--check"]) == 0, "run: python -m ovnk_core.manifests.dist"
    networkpolicy = find(objects, "ClusterRole", "ovnk:feature:networkpolicy:zone")
    assert networkpolicy["metadata"]["labels"][
        "rbac.k8s.ovn.org/aggregate-to-ovnkube-controller"] == "true"
