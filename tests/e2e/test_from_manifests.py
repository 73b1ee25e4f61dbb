"""``ovnk local up --from-manifests``: ovnk's components run as ``dist/`` declares them.

The cluster manager (Deployment ovnkube-control-plane), every node's zone controller and
node agent (DaemonSet ovnkube-node) run with the manifests' args and env, the ConfigMap and their
service account's token and CA mounted as files, and the RBAC of ``dist/`` alone: pods on
a primary UDN across the two nodes get their network and ping each other.  A manifest
with a rule, a flag or a mount taken away (a kustomize overlay) fails the way it would on
a real cluster, with the component's own message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client as k8s_client
from ovnk_local.cluster import LocalCluster
from ovnk_local.manifest_pods import SERVICE_ACCOUNT_MOUNT
from ovnk_local.settings import ComponentSettings
from ovnk_local.supervisor import CLUSTER_ENV, LocalClusterError
from ovnk_local.testing.dataplane import (
    echo_requests_received,
    kubectl,
    ping,
    pod_netns,
    require_dataplane,
    wait_pods_ready,
)
from ovnk_local.zones import PER_NODE

from ovnk_core.annotations.node_subnets import NODE_SUBNETS_ANNOTATION
from ovnk_core.identities import CLUSTER_MANAGER_USER
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.cluster_config import ServiceAccountFiles, cluster_configuration
from ovnk_core.kube.resources import NODES
from ovnk_core.manifests.dist import DIST_DIR
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e]

IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.45"
NODE_NAMES = ("ovn-worker", "ovn-worker2")


def workloads() -> str:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "blue", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
        {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
         "metadata": {"name": "blue", "namespace": "blue"},
         "spec": {"topology": "Layer3", "layer3": {
             "role": "Primary", "subnets": [{"cidr": "103.103.0.0/16", "hostSubnet": 24}]}}}]
    for name, node in zip(("a", "b"), NODE_NAMES, strict=True):
        docs.append({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": "blue"},
                     "spec": {"nodeName": node,
                              "containers": [{"name": "agnhost", "image": IMAGE}]}})
    return "# from manifests\n" + "\n---\n".join(json.dumps(doc) for doc in docs)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("from-manifests") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=True, zone_mode=PER_NODE, manifests=DIST_DIR)
    try:
        kubectl(local, "apply", "-f", "-", stdin=workloads())
        wait_pods_ready(local, "blue")
        yield local
    finally:
        local.down()


def pod(cluster: LocalCluster, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(cluster, "get", "pod", "-n", "blue", name,
                                               "-o", "json").stdout)
    return found


def udn_address(pod_obj: dict[str, Any]) -> str:
    entries = json.loads(pod_obj["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])
    return str(entries["blue/blue"]["ip_addresses"][0]).split("/")[0]


@pytest.mark.netns
def test_udn_pods_get_their_network_from_the_manifests(cluster: LocalCluster) -> None:
    a, b = pod(cluster, "a"), pod(cluster, "b")

    def reaches(source: dict[str, Any], target: dict[str, Any]) -> bool:
        before = echo_requests_received(pod_netns(cluster, target))
        return ping(pod_netns(cluster, source), udn_address(target)) and \
            echo_requests_received(pod_netns(cluster, target)) > before

    wait_until(lambda: reaches(a, b), timeout=30, what="blue/a reaching blue/b")
    wait_until(lambda: reaches(b, a), timeout=30, what="blue/b reaching blue/a")


@pytest.mark.netns
def test_components_run_as_the_manifests_declare(cluster: LocalCluster) -> None:
    records = cluster.state().processes
    manager = records["cluster-manager"]
    assert manager.container and "--config=/run/ovnkube-config/ovnk.toml" in manager.args
    assert "--k8s-kubeconfig" not in " ".join(manager.args)  # in-cluster configuration
    assert manager.env["KUBERNETES_SERVICE_PORT"] == str(cluster.state().api_port)
    assert {m[1] for m in manager.mounts} == {"/run/ovnkube-config", SERVICE_ACCOUNT_MOUNT}
    # the running process: the declared environment (and the cluster's mark), its mounts
    environ = dict(entry.split("=", 1) for entry in
                   Path(f"/proc/{manager.pid}/environ").read_text().split("\0") if entry)
    assert set(environ) == {*manager.env, CLUSTER_ENV}
    mounted = {line.split()[4] for line in
               Path(f"/proc/{manager.pid}/mountinfo").read_text().splitlines()}
    tokens = os.path.realpath(SERVICE_ACCOUNT_MOUNT)  # /var/run is /run here
    assert {"/run/ovnkube-config", tokens} <= mounted
    assert tokens not in {line.split()[4] for line in
                          Path("/proc/self/mountinfo").read_text().splitlines()}
    for node in NODE_NAMES:
        controller = records[f"{node}/controller"]
        assert controller.container and f"--zone={node}" in controller.args
        assert controller.env["K8S_NODE"] == node
        agent = records[f"{node}/node-agent"]  # with its node's certificate, from /etc/ovn
        assert agent.container and f"--node-name={node}" in agent.args
        assert "--k8s-kubeconfig=/etc/ovn/ovnkube-node-certs/kubeconfig" in agent.args
        assert {"/etc/ovn", "/var/run/openvswitch", "/var/run/ovn-kubernetes",
                "/var/run/netns"} <= {m[1] for m in agent.mounts}
    admin = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
    for node in NODE_NAMES:
        assert NODE_SUBNETS_ANNOTATION in admin.get(NODES, node)["metadata"]["annotations"]
    for log in [manager.log, *(records[f"{n}/controller"].log for n in NODE_NAMES)]:
        assert "forbidden" not in Path(log).read_text(), log
    # the mounted token is the service account's, as the API server sees it
    token_dir = Path(next(m[0] for m in manager.mounts if m[1] == SERVICE_ACCOUNT_MOUNT))
    api = KubeClient(k8s_client.ApiClient(cluster_configuration(
        "", {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
             "KUBERNETES_SERVICE_PORT": str(cluster.state().api_port)},
        ServiceAccountFiles.in_dir(token_dir))))
    review = api.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         body={"apiVersion": "authentication.k8s.io/v1",
                               "kind": "SelfSubjectReview"})
    assert json.loads(review.read())["status"]["userInfo"]["username"] == CLUSTER_MANAGER_USER


# -- a manifest with something taken away ---------------------------------------------------

def overlay(directory: Path, patches: list[dict[str, Any]]) -> Path:
    """A kustomize overlay of ``dist/`` with JSON patches."""
    directory.mkdir(parents=True)
    (directory / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": [os.path.relpath(DIST_DIR, directory)],
        "patches": [{"target": target, "patch": yaml.safe_dump(ops)}
                    for target, ops in patches]}))
    return directory


CLUSTER_MANAGER = {"kind": "Deployment", "name": "ovnkube-control-plane"}
BROKEN = {
    "flag": ([(CLUSTER_MANAGER, [{"op": "add", "path": "/spec/template/spec/containers/0/args/-",
                                  "value": "--no-such-flag"}])],
             "unrecognized arguments: --no-such-flag"),
    "mount": ([(CLUSTER_MANAGER, [{"op": "remove", "path":
                                   "/spec/template/spec/containers/0/volumeMounts/0"}])],
              "config file /run/ovnkube-config/ovnk.toml does not exist"),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_broken_manifest_fails_the_component(what: str, tmp_path: Path) -> None:
    patches, message = BROKEN[what]
    local = LocalCluster(tmp_path / ".ovnk")
    try:
        with pytest.raises(LocalClusterError,
                           match="component cluster-manager exit code 2") as failed:
            local.up(nodes=1, timeout=60, dataplane=False, zone_mode=PER_NODE,
                     manifests=overlay(tmp_path / "overlay", patches))
        assert message in str(failed.value)  # the tail of its log
    finally:
        local.down()


def run_cluster_manager(directory: Path, manifests: Path) -> tuple[bool, str]:
    """Bring a control-plane-only cluster up from ``manifests``; whether its node got its
    subnets within 15 s, and the cluster manager's log then."""
    local = LocalCluster(directory)
    try:
        local.up(nodes=1, timeout=60, dataplane=False, zone_mode=PER_NODE, manifests=manifests)
        admin = KubeClient(api_client_from_kubeconfig(str(local.kubeconfig)))
        log = Path(local.state().processes["cluster-manager"].log)

        def annotated() -> bool:
            node = admin.get(NODES, "ovn-worker")
            return NODE_SUBNETS_ANNOTATION in node["metadata"].get("annotations", {})
        try:
            wait_until(annotated, timeout=15, what="the node's subnets")
        except AssertionError:
            pass
        return annotated(), log.read_text()
    finally:
        local.down()


def test_a_missing_rbac_rule_is_forbidden(tmp_path: Path) -> None:
    """Without the rule for ``nodes/status`` (and ``pods/status``) the cluster manager is
    refused as its service account and no node gets its subnets (with dist/ as it is, the
    nodes get them: ``test_components_run_as_the_manifests_declare``)."""
    rule = [({"kind": "ClusterRole", "name": "ovnkube-cluster-manager"},
             [{"op": "test", "path": "/rules/1/resources", "value":
               ["pods/status", "nodes/status"]}, {"op": "remove", "path": "/rules/1"}])]
    refused = (f'nodes "ovn-worker" is forbidden: User "{CLUSTER_MANAGER_USER}" '
               'cannot patch resource "nodes/status"')
    annotated, log = run_cluster_manager(tmp_path / "broken", overlay(tmp_path / "no-rule",
                                                                      rule))
    assert not annotated and refused in log


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"zone_mode": "single"}, "it needs --zones per-node"),
    ({"zone_mode": PER_NODE, "settings": ComponentSettings({"mtu": "1300"})},
     "the components' options are the manifests'"),
])
def test_what_from_manifests_refuses(tmp_path: Path, kwargs: dict[str, Any],
                                     message: str) -> None:
    local = LocalCluster(tmp_path / ".ovnk")
    with pytest.raises(LocalClusterError, match=message):
        local.up(nodes=1, dataplane=False, manifests=DIST_DIR, **kwargs)
    assert not local.state().processes  # nothing was started
