"""Components find their cluster as a pod does: the service account's token and CA files and
``KUBERNETES_SERVICE_HOST``/``_PORT`` when no kubeconfig is given (``kube.cluster_config``),
and stop with one clear message when there is neither."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client as k8s_client
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for, component_client

from ovnk_core.cli.main import main
from ovnk_core.errors import ConfigError
from ovnk_core.identities import CLUSTER_MANAGER_SA, CLUSTER_MANAGER_USER, OVN_NAMESPACE
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.cluster_config import ServiceAccountFiles, cluster_configuration
from ovnk_core.kube.errors import ApiError
from ovnk_core.kube.resources import NAMESPACES, PODS, SERVICE_ACCOUNTS


def mounted(directory: Path, token: str = "a-token", ca: bytes = b"ca") -> ServiceAccountFiles:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "token").write_text(token)
    (directory / "ca.crt").write_bytes(ca)
    return ServiceAccountFiles.in_dir(directory)


def pod_env(host: str = "10.96.0.1", port: str = "443") -> dict[str, str]:
    return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port}


def test_in_cluster_reads_the_service_account_files(tmp_path: Path) -> None:
    files = mounted(tmp_path / "sa", token="t0ken")
    configuration = cluster_configuration("", pod_env(), files)
    assert configuration.host == "https://10.96.0.1:443"
    assert configuration.api_key["BearerToken"] == "bearer t0ken"
    assert configuration.ssl_ca_cert == str(files.ca)
    assert cluster_configuration("", pod_env("fd00::1", "6443"), files).host == \
        "https://[fd00::1]:6443"


@pytest.mark.parametrize("missing, message", [
    ("token", "the service account's token {dir}/token does not exist"),
    ("ca.crt", "the service account's CA certificate {dir}/ca.crt does not exist"),
])
def test_in_cluster_names_the_missing_file(tmp_path: Path, missing: str, message: str) -> None:
    files = mounted(tmp_path / "sa")
    (tmp_path / "sa" / missing).unlink()
    with pytest.raises(ConfigError, match=message.format(dir=tmp_path / "sa")):
        cluster_configuration("", pod_env(), files)


def test_in_cluster_needs_the_port_and_a_token(tmp_path: Path) -> None:
    files = mounted(tmp_path / "sa")
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_PORT is not"):
        cluster_configuration("", {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, files)
    empty = mounted(tmp_path / "empty", token="")
    with pytest.raises(ConfigError, match="in-cluster configuration .*empty"):
        cluster_configuration("", pod_env(), empty)


def test_a_kubeconfig_wins_and_nothing_is_a_clear_error(tmp_path: Path) -> None:
    files = mounted(tmp_path / "sa")
    with pytest.raises(ConfigError, match=f"kubeconfig {tmp_path}/none does not exist"):
        cluster_configuration(str(tmp_path / "none"), pod_env(), files)
    with pytest.raises(ConfigError, match="no cluster to talk to: give --k8s-kubeconfig"):
        cluster_configuration("", {"HOME": str(tmp_path)}, files)


def test_in_cluster_client_is_the_service_account(kube_apiserver: ServerHandle,
                                                  tmp_path: Path) -> None:
    """Against the local API server: the token file authenticates as the service account and
    its RBAC (``manifests/rbac``) holds: it lists pods and may not create namespaces."""
    component_client(kube_apiserver, CLUSTER_MANAGER_USER)  # applies the shipped RBAC
    admin = KubeClient(client_for(kube_apiserver))
    token = admin.create_subresource(SERVICE_ACCOUNTS, CLUSTER_MANAGER_SA, "token",
                                     {"spec": {}}, OVN_NAMESPACE)["status"]["token"]
    ca = kube_apiserver.security.options.client_ca_file.read_bytes()
    files = mounted(tmp_path / "sa", token=token, ca=ca)
    api = KubeClient(k8s_client.ApiClient(cluster_configuration(
        "", pod_env(kube_apiserver.host, str(kube_apiserver.port)), files)))
    assert api.list(PODS)["items"] == []
    with pytest.raises(ApiError, match=f'User "{CLUSTER_MANAGER_USER}" cannot create') as refused:
        api.create(NAMESPACES, {"metadata": {"name": "not-mine"}})
    assert refused.value.code == 403


@pytest.mark.parametrize("component", ["cluster-manager", "controller", "node"])
def test_component_without_any_cluster_stops_with_the_reason(
        component: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("KUBERNETES_SERVICE_HOST", "KUBECONFIG", "OVNK_K8S_KUBECONFIG", "OVNK_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    argv = [component] + (["--node-name", "node-1", "--ovs-db", str(tmp_path / "db.sock"),
                           "--cni-socket", str(tmp_path / "cni.sock"), "--pod-netns-prefix",
                           "p-"] if component == "node" else [])
    if component == "controller":
        argv += ["--nb-address", f"unix:{tmp_path / 'nb.sock'}"]
    assert main(argv) == 2
    assert f"ovnk {component}: no cluster to talk to" in capsys.readouterr().err
