"""A container of the manifests becomes a process as a kubelet would make it (``manifest_pods``):
``$(VAR)`` expansion, the declared environment, volumes and the service account as files,
and a clear refusal of what cannot be run as declared."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.manifest_pods import (
    SERVICE_ACCOUNT_MOUNT,
    ManifestError,
    Pod,
    container_record,
    expand,
)
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.kube.apply import apply_documents
from ovnk_core.kube.client import KubeClient

NAMESPACE = "ovn-kubernetes"
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "cm", "namespace": NAMESPACE},
    "spec": {"selector": {"matchLabels": {"app": "cm"}}, "template": {
        "metadata": {"labels": {"app": "cm"}},
        "spec": {"serviceAccountName": "robot", "containers": [{
            "name": "main", "image": "localhost/ovnk:latest",
            "command": ["ovnk", "cluster-manager"],
            "args": ["--config=/etc/conf/ovnk.toml", "--node-name=$(NODE)", "--x=$(UNSET)",
                     "--y=$$(NODE)"],
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "GREETING", "value": "on $(NODE)"},
                    {"name": "LEVEL", "valueFrom": {"configMapKeyRef": {
                        "name": "conf", "key": "level"}}}],
            "volumeMounts": [{"name": "conf", "mountPath": "/etc/conf"},
                             {"name": "run", "mountPath": "/var/run/thing", "readOnly": True}]}],
            "volumes": [{"name": "conf", "configMap": {"name": "conf"}},
                        {"name": "run", "hostPath": {"path": "/var/run/thing"}}]}}}}


def apply(handle: ServerHandle, deployment: dict[str, Any]) -> KubeClient:
    admin = KubeClient(client_for(handle))
    apply_documents(admin, [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "robot", "namespace": NAMESPACE}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "conf",
                                                               "namespace": NAMESPACE},
         "data": {"ovnk.toml": "loglevel = 'info'\n", "level": "debug"}},
        deployment])
    return admin


def place(handle: ServerHandle, tmp_path: Path) -> Pod:
    return Pod("cm-0", NAMESPACE, "node-1", "172.18.0.2", tmp_path / "host", tmp_path / "pod",
               handle.host, handle.port, b"CA")


def test_expand_as_the_kubelet() -> None:
    env = {"A": "1"}
    assert expand("$(A)-$(B)-$$(A)-$$", env) == "1-$(B)-$(A)-$"


def test_a_container_as_its_manifest_declares(kube_apiserver: ServerHandle,
                                              tmp_path: Path) -> None:
    admin = apply(kube_apiserver, DEPLOYMENT)
    record = container_record(admin, ("Deployment", "cm", "main"),
                              place(kube_apiserver, tmp_path), "cluster-manager",
                              tmp_path / "cm.log", tmp_path / "cm.ready")
    assert record.args == [sys.executable, "-m", "ovnk_core.cli.main", "cluster-manager",
                           "--config=/etc/conf/ovnk.toml", "--node-name=node-1",
                           "--x=$(UNSET)", "--y=$(NODE)", "--ready-file",
                           str(tmp_path / "cm.ready")]
    assert record.container and record.env["GREETING"] == "on node-1"
    assert record.env["LEVEL"] == "debug"
    assert record.env["KUBERNETES_SERVICE_PORT"] == str(kube_apiserver.port)
    assert "KUBECONFIG" not in record.env
    mounts = {target: (Path(source), mode) for source, target, mode in record.mounts}
    assert mounts["/etc/conf"] == (tmp_path / "pod" / "volumes" / "conf", "ro")
    assert (tmp_path / "pod" / "volumes" / "conf" / "ovnk.toml").read_text() == \
        "loglevel = 'info'\n"
    assert mounts["/var/run/thing"] == (tmp_path / "host" / "var" / "run" / "thing", "ro")
    token_dir, mode = mounts[SERVICE_ACCOUNT_MOUNT]
    assert mode == "ro" and (token_dir / "ca.crt").read_bytes() == b"CA"
    assert (token_dir / "namespace").read_text() == NAMESPACE
    assert (token_dir / "token").read_text().count(".") == 2  # a JWT the server signed


def broken(edit: str) -> dict[str, Any]:
    deployment = copy.deepcopy(DEPLOYMENT)
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    if edit == "undeclared volume":
        container["volumeMounts"].append({"name": "nowhere", "mountPath": "/x"})
    elif edit == "missing configmap":
        spec["volumes"][0]["configMap"]["name"] = "gone"
    elif edit == "volume kind":
        spec["volumes"][1] = {"name": "run", "emptyDir": {}}
    elif edit == "valueFrom":
        container["env"].append({"name": "S", "valueFrom": {"secretKeyRef": {
            "name": "s", "key": "k"}}})
    elif edit == "missing key":
        container["env"][2]["valueFrom"]["configMapKeyRef"]["key"] = "nope"
    elif edit == "command":
        container["command"] = ["/bin/sh", "-c"]
    elif edit == "service account":
        spec["serviceAccountName"] = "nobody"
    return deployment


@pytest.mark.parametrize(("edit", "message"), [
    ("undeclared volume", "container main mounts volume 'nowhere', which the pod does not "
                          "declare"),
    ("missing configmap", "ConfigMap ovn-kubernetes/gone does not exist"),
    ("volume kind", r"volume run: emptyDir is not supported by ovnk local \(configMap, "
                    r"hostPath\)"),
    ("valueFrom", r"env S: valueFrom \['secretKeyRef'\] is not supported"),
    ("missing key", "env LEVEL: ConfigMap conf has no key nope"),
    ("command", r"container main: command \['/bin/sh', '-c'\] is not one of the image's "
                "entry points"),
    ("service account", "service account ovn-kubernetes/nobody does not exist"),
])
def test_what_cannot_run_as_declared_is_named(kube_apiserver: ServerHandle, tmp_path: Path,
                                              edit: str, message: str) -> None:
    admin = apply(kube_apiserver, broken(edit))
    with pytest.raises(ManifestError, match=message):
        container_record(admin, ("Deployment", "cm", "main"), place(kube_apiserver, tmp_path),
                         "cluster-manager", tmp_path / "cm.log", tmp_path / "cm.ready")


def test_a_host_path_can_be_elsewhere_and_local_args_follow(kube_apiserver: ServerHandle,
                                                            tmp_path: Path) -> None:
    admin = apply(kube_apiserver, DEPLOYMENT)
    elsewhere = tmp_path / "ovs"
    pod = place(kube_apiserver, tmp_path)
    pod = Pod(*[getattr(pod, f) for f in ("name", "namespace", "node", "node_ip", "host_root",
                                          "directory", "api_host", "api_port", "ca_pem")],
              host_paths={"/var/run/thing": elsewhere})
    record = container_record(admin, ("Deployment", "cm", "main"), pod, "cluster-manager",
                              tmp_path / "cm.log", tmp_path / "cm.ready", ["--local=1"])
    assert [elsewhere.as_posix(), "/var/run/thing", "ro"] in record.mounts
    assert record.args[-3:] == ["--local=1", "--ready-file", str(tmp_path / "cm.ready")]
