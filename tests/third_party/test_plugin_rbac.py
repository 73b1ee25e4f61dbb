"""A third-party feature ships the API rights its controller needs, and works only with them.

The feature ``podset`` (``dists/ovnk-podset-demo``) runs a controller in the cluster
manager that keeps a ConfigMap per namespace; ovnk's cluster manager has no right on
ConfigMaps, so the feature declares one (``PodsetFeature.rbac_rules``).  The cluster
manager runs as its own service account under the RBAC ovnk ships
(``ovnk_core/manifests/rbac``), on the local API server, which aggregates ClusterRoles as
kube-controller-manager does:

* without the feature's contribution the API server refuses the controller (403) and no
  ConfigMap appears — ovnk's own roles do not cover it;
* once the ClusterRoles of the enabled plugins are applied (what ``ovnk local`` applies and
  ``python -m ovnk_core.manifests.rbac`` prints), the API server aggregates the feature's
  rule into ``ovnkube-cluster-manager-plugins`` and the same running controller writes
  its ConfigMap; nothing else of the cluster manager gained a right.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import component_client
from ovnk_local.testing.control_plane import ControlPlane, cluster_with_nodes

from ovnk_core.config import Config
from ovnk_core.identities import CLUSTER_MANAGER_USER
from ovnk_core.kube.apply import apply_documents
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import ApiError, NotFound
from ovnk_core.kube.resources import CLUSTER_ROLES, CONFIGMAPS, NAMESPACES, PODS
from ovnk_core.manifests.plugin_rbac import missing_aggregated_rules, plugin_rbac_documents
from ovnk_core.manifests.rbac import ovnk_rbac_documents
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until

POD_NETWORKS = "k8s.ovn.org/pod-networks"
ROLE = "ovnk:feature:podset:cluster-manager"
RULE = {"apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["get", "create", "update", "delete"]}


def podset_config() -> Config:
    return udn_config(extra_features="podset")


def summary(client: KubeClient) -> dict[str, str] | None:
    try:
        data: dict[str, str] = client.get(CONFIGMAPS, "podset", "demo").get("data") or {}
        return data
    except NotFound:
        return None


def pod_ip(client: KubeClient, name: str) -> str | None:
    raw = (client.get(PODS, name, "demo")["metadata"].get("annotations") or {}).get(
        POD_NETWORKS)
    if not raw:
        return None
    return ",".join(ip.split("/")[0] for entry in json.loads(raw).values()
                    for ip in entry["ip_addresses"])


@pytest.fixture
def admin(kube_apiserver: ServerHandle) -> KubeClient:
    return cluster_with_nodes(kube_apiserver)


@pytest.fixture
def plane(admin: KubeClient, kube_apiserver: ServerHandle,
          on_sys_path: Callable[[str], Path]) -> Iterator[ControlPlane]:
    on_sys_path("podset")
    running = ControlPlane(kube_apiserver, podset_config())
    yield running
    running.stop()


def test_the_feature_declares_its_rights_as_an_aggregated_cluster_role(
        on_sys_path: Callable[[str], Path]) -> None:
    on_sys_path("podset")
    [role] = [d for d in plugin_rbac_documents(podset_config())
              if d["metadata"]["labels"]["rbac.k8s.ovn.org/plugin"] == "podset"]
    assert role == {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "metadata": {"name": ROLE, "labels": {
                        "rbac.k8s.ovn.org/aggregate-to-ovnkube-cluster-manager": "true",
                        "rbac.k8s.ovn.org/plugin": "podset"}},
                    "rules": [RULE]}
    # installed, not enabled: nothing (NetworkPolicy's, on by default, is there)
    assert [d["metadata"]["name"] for d in plugin_rbac_documents(udn_config())] == [
        "ovnk:feature:networkpolicy:zone"]
    assert ovnk_rbac_documents(podset_config())[-1] == role
    assert role not in ovnk_rbac_documents()


def test_the_manifest_writer_prints_the_enabled_plugins_roles(
        third_party_sites: dict[str, Path]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVNK_")}
    env["PYTHONPATH"] = str(third_party_sites["podset"])
    printed = subprocess.run(
        [sys.executable, "-m", "ovnk_core.manifests.rbac", "--enable-multi-network",
         "--enable-feature", "podset"], capture_output=True, text=True, env=env, timeout=120)
    assert printed.returncode == 0, printed.stderr
    documents = [d for d in yaml.safe_load_all(printed.stdout) if d]
    names = [(d["kind"], d["metadata"]["name"]) for d in documents]
    assert ("ClusterRole", ROLE) in names
    assert ("ClusterRole", "ovnkube-cluster-manager-plugins") in names
    assert ("ClusterRoleBinding", "ovnkube-cluster-manager-plugins") in names


def test_the_controller_is_refused_without_the_contributed_rule_and_works_with_it(
        admin: KubeClient, plane: ControlPlane, kube_apiserver: ServerHandle) -> None:
    # ovnk's shipped RBAC and the default configuration's plugin roles (component_client)
    manager = plane.start_manager()
    [controller] = [c for c in manager.plugin_controllers
                    if c.name == "podset-cluster-manager-controller"]
    admin.create(NAMESPACES, {"metadata": {"name": "demo"}})
    admin.create(PODS, {"metadata": {"name": "web", "namespace": "demo"},
                        "spec": {"nodeName": "ovn-worker",
                                 "containers": [{"name": "c", "image": "agnhost"}]}}, "demo")
    ip = wait_until(functools.partial(pod_ip, admin, "web"), timeout=30)

    # Refused: the controller tried and failed, and nothing was written.
    wait_until(lambda: controller.stats.failures > 0, timeout=30,
               what="the podset controller's refused attempt")
    assert summary(admin) is None
    as_manager = component_client(kube_apiserver, CLUSTER_MANAGER_USER)
    with pytest.raises(ApiError) as refused:
        as_manager.get(CONFIGMAPS, "podset", "demo")
    assert refused.value.code == 403

    # The enabled plugins' ClusterRoles, as ovnk local applies them: aggregated into the
    # cluster manager's plugins role, the same running controller now succeeds.
    contributed = plugin_rbac_documents(podset_config())
    apply_documents(admin, contributed)
    wait_until(lambda: not missing_aggregated_rules(admin.list(CLUSTER_ROLES)["items"],
                                                    contributed), timeout=10)
    aggregated = admin.get(CLUSTER_ROLES, "ovnkube-cluster-manager-plugins")
    assert aggregated["rules"] == [RULE]
    admin.patch(PODS, "web", {"metadata": {"labels": {"touched": "yes"}}}, "demo")
    wait_until(lambda: summary(admin) == {"web": ip}, timeout=30,
               what="the feature's ConfigMap")
    # Applying ovnk's manifests again keeps what was aggregated (no window without it).
    apply_documents(admin, ovnk_rbac_documents())
    assert admin.get(CLUSTER_ROLES, "ovnkube-cluster-manager-plugins")["rules"] == [RULE]
    # Only what the feature asked for: listing ConfigMaps stays refused.
    with pytest.raises(ApiError) as still_refused:
        as_manager.list(CONFIGMAPS, "demo")
    assert still_refused.value.code == 403
