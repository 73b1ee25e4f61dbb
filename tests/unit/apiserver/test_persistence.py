"""File-backed snapshots: a restarted server keeps objects, CRDs and its resourceVersion."""

from __future__ import annotations

import json
import socket
import ssl
import stat
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for

CRD = {"metadata": {"name": "gizmos.example.org"},
       "spec": {"group": "example.org", "scope": "Cluster",
                "names": {"kind": "Gizmo", "plural": "gizmos"},
                "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                    "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object", "properties": {"size": {"type": "integer"}}}}}}}]}}


def test_restart_keeps_objects_and_resource_version(
        kube_apiserver_factory: Callable[..., ServerHandle], tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    first = kube_apiserver_factory(data_file=data)
    api = client_for(first)
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "blue"}})
    cm = core.create_namespaced_config_map("blue", {"metadata": {"name": "a"},
                                                    "data": {"k": "v"}})
    client.ApiextensionsV1Api(api).create_custom_resource_definition(CRD)
    client.CustomObjectsApi(api).create_cluster_custom_object(
        "example.org", "v1", "gizmos", {"apiVersion": "example.org/v1", "kind": "Gizmo",
                                        "metadata": {"name": "g"}, "spec": {"size": 3}})
    last_rv = int(core.list_namespace().metadata.resource_version)
    first.stop()
    assert json.loads(data.read_text())["resourceVersion"] == last_rv

    second = kube_apiserver_factory(data_file=data)
    api = client_for(second)
    core = client.CoreV1Api(api)
    again = core.read_namespaced_config_map("a", "blue")
    assert (again.metadata.uid, again.data) == (cm.metadata.uid, {"k": "v"})
    gizmo = client.CustomObjectsApi(api).get_cluster_custom_object("example.org", "v1",
                                                                   "gizmos", "g")
    assert gizmo["spec"] == {"size": 3}
    created = core.create_namespaced_config_map("blue", {"metadata": {"name": "b"}})
    assert int(created.metadata.resource_version) == last_rv + 1
    stream = watch.Watch().stream(core.list_namespaced_config_map, "blue",
                                  resource_version=cm.metadata.resource_version,
                                  timeout_seconds=1)
    try:
        list(stream)
        raise AssertionError("a watch from before the restart must be expired")
    except ApiException as exc:
        assert exc.status == 410


def test_writes_are_flushed_while_running(
        kube_apiserver_factory: Callable[..., ServerHandle], tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    server = kube_apiserver_factory(data_file=data)
    client.CoreV1Api(client_for(server)).create_namespace({"metadata": {"name": "blue"}})
    deadline = time.monotonic() + 5
    names: list[str] = []
    while time.monotonic() < deadline and "blue" not in names:
        time.sleep(0.05)
        snapshot: dict[str, Any] = json.loads(data.read_text())
        names = [o["metadata"]["name"] for o in snapshot["objects"]["/namespaces"]]
    assert "blue" in names


def test_module_runs_as_a_process(tmp_path: Path) -> None:
    kubeconfig, data, certs = tmp_path / "kubeconfig", tmp_path / "data.json", tmp_path / "pki"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ovnk_local.apiserver", "--port", str(port), "--data", str(data),
         "--cert-dir", str(certs), "--kubeconfig", str(kubeconfig), "--log-level", "WARNING"])
    try:
        deadline = time.monotonic() + 20
        context = None
        while time.monotonic() < deadline:
            try:
                context = context or ssl.create_default_context(cafile=str(certs / "ca.crt"))
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=1,
                                            context=context) as r:
                    assert r.read() == b"ok"
                    break
            except (OSError, ssl.SSLError):
                time.sleep(0.1)
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{port}"
        assert config["users"][0]["name"] == "kubernetes-admin"
        assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
        assert stat.S_IMODE((certs / "ca.key").stat().st_mode) == 0o600
        with pytest.raises(OSError):  # plain HTTP is not served
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
    finally:
        process.terminate()
        assert process.wait(timeout=10) == 0
    assert json.loads(data.read_text())["resourceVersion"] >= 4


def test_module_refuses_to_run_without_tls_or_on_a_public_address(tmp_path: Path) -> None:
    run = [sys.executable, "-m", "ovnk_local.apiserver", "--port", "0"]
    plain = subprocess.run(run, capture_output=True, text=True, timeout=30)
    assert plain.returncode == 2
    assert "TLS and authentication are required" in plain.stderr
    public = subprocess.run([*run, "--host", "0.0.0.0", "--cert-dir", str(tmp_path)],
                            capture_output=True, text=True, timeout=30)
    assert public.returncode == 2
    assert "refusing to serve on 0.0.0.0: not a loopback address" in public.stderr


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
