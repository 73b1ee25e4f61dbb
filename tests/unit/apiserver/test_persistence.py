"""File-backed snapshots: a restarted server keeps objects, CRDs and its resourceVersion."""

from __future__ import annotations

import json
import os
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

import pytest
import yaml
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.persistence import journal_path, read_snapshot
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.testing.waiting import wait_until

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
        snapshot = read_snapshot(data)
        assert snapshot is not None
        names = [o["metadata"]["name"] for o in snapshot["objects"]["/namespaces"]]
    assert "blue" in names
    assert journal_path(data).exists()  # a write while running goes to the journal


def test_a_crash_keeps_every_journaled_write_and_drops_a_torn_line(
        kube_apiserver_factory: Callable[..., ServerHandle], tmp_path: Path) -> None:
    """No clean stop: the snapshot is old, the journal has the writes since; a last line cut
    short by the crash is left out."""
    data = tmp_path / "data.json"
    server = kube_apiserver_factory(data_file=data)
    assert server.persistence is not None
    core = client.CoreV1Api(client_for(server))
    core.create_namespace({"metadata": {"name": "blue"}})
    core.create_namespaced_config_map("blue", {"metadata": {"name": "a"}, "data": {"v": "1"}})
    core.patch_namespaced_config_map("a", "blue", {"data": {"v": "2"}})
    core.create_namespaced_config_map("blue", {"metadata": {"name": "gone"}})
    core.delete_namespaced_config_map("gone", "blue")
    last_rv = int(core.list_namespace().metadata.resource_version)
    server.persistence.sync()
    snapshot_before = data.read_text()
    with journal_path(data).open("a") as journal:
        journal.write('{"rv": 99999, "storage": "/configmaps", "type": "ADD')  # torn
    state = read_snapshot(data)
    assert state is not None and data.read_text() == snapshot_before
    assert state["resourceVersion"] == last_rv
    maps = {o["metadata"]["name"]: o for o in state["objects"]["/configmaps"]
            if o["metadata"].get("namespace") == "blue"}
    assert set(maps) == {"a"} and maps["a"]["data"] == {"v": "2"}


def test_the_journal_is_folded_into_the_snapshot_once_it_outgrows_it(
        tmp_path: Path) -> None:
    from ovnk_local.apiserver.persistence import Persistence
    from ovnk_local.apiserver.store import Store

    store = Store()
    data = tmp_path / "data.json"
    persistence = Persistence(store, data, interval=60, min_compact_bytes=2000)
    persistence.start()
    persistence.flush()
    assert persistence.compactions == 1 and not journal_path(data).exists()
    for index in range(40):
        store.put("/configmaps", {"metadata": {"name": f"c{index}", "namespace": "x"},
                                  "data": {"v": "x" * 40}})
        persistence.sync()
    assert persistence.compactions >= 2  # folded at least once on the way
    if journal_path(data).exists():  # never much more than the snapshot (or the minimum)
        assert journal_path(data).stat().st_size <= max(2000, data.stat().st_size) + 200
    state = read_snapshot(data)
    assert state is not None and len(state["objects"]["/configmaps"]) == 40
    persistence.stop()
    assert not journal_path(data).exists()  # a clean stop leaves one snapshot
    assert len(json.loads(data.read_text())["objects"]["/configmaps"]) == 40


def test_module_runs_as_a_process(tmp_path: Path) -> None:
    kubeconfig, data, certs = tmp_path / "kubeconfig", tmp_path / "data.json", tmp_path / "pki"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ovnk_local.apiserver", "--port", str(port), "--data", str(data),
         "--cert-dir", str(certs), "--kubeconfig", str(kubeconfig), "--log-level", "WARNING"])
    try:
        def healthy() -> bool:
            try:
                context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
                with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=1,
                                            context=context) as r:
                    return bool(r.read() == b"ok")
            except (OSError, ssl.SSLError):
                return False

        wait_until(healthy, 60, what="the API server's /healthz")
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


def test_module_takes_its_log_level_from_the_environment(tmp_path: Path) -> None:
    """``OVNK_APISERVER_LOG_LEVEL=DEBUG`` (what ``ovnk local up`` passes on) turns the access
    log on without a flag; the default stays INFO."""
    certs = tmp_path / "pki"

    def served(level: str | None) -> str:
        port = free_port()
        env = {k: v for k, v in os.environ.items() if k != "OVNK_APISERVER_LOG_LEVEL"}
        if level:
            env["OVNK_APISERVER_LOG_LEVEL"] = level
        process = subprocess.Popen(
            [sys.executable, "-m", "ovnk_local.apiserver", "--port", str(port),
             "--cert-dir", str(certs), "--no-admission-entry-points"],
            env=env, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 20
            while True:
                try:
                    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
                    request = urllib.request.Request(f"https://127.0.0.1:{port}/healthz",
                                                     headers={"User-Agent": "peer/1.0"})
                    with urllib.request.urlopen(request, timeout=1, context=context) as r:
                        assert r.read() == b"ok"
                    break
                except (OSError, ssl.SSLError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
        finally:
            process.terminate()
            _, stderr = process.communicate(timeout=10)
        return stderr

    assert '"GET /healthz HTTP/1.1" 200 peer/1.0' in served("DEBUG")
    assert '"GET /healthz HTTP/1.1"' not in served(None)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
