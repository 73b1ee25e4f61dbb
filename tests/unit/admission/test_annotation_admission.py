"""Who may write ovnk's annotations: the pod and node hooks (upstream's ovnkube-identity
webhooks), called through the registry with each identity, then against the local API
server (a refused write leaves the object as it was)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.admission import AdmissionRegistry, denial, load_plugins
from ovnk_local.apiserver.authn import AUTHENTICATED, MASTERS, UserInfo
from ovnk_local.apiserver.errors import ApiStatusError
from ovnk_local.apiserver.resources import ResourceType
from ovnk_local.apiserver.rest import WriteOptions
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.cluster import build_node
from ovnk_local.testing.apiserver_fixtures import client_for, with_crds

from ovnk_core.admission import annotations as rules
from ovnk_core.annotations.node_gateway import CHASSIS_ID_ANNOTATION, GATEWAY_CONFIG_ANNOTATION
from ovnk_core.annotations.node_id import NODE_ID_ANNOTATION
from ovnk_core.annotations.node_subnets import NODE_SUBNETS_ANNOTATION
from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION
from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.identities import (
    CLUSTER_MANAGER_USER,
    CONTROLLER_USER,
    NODES_GROUP,
    OVN_NAMESPACE,
    node_agent_user,
)
from ovnk_core.kube.apply import apply_documents
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NAMESPACES, NODES, PODS
from ovnk_core.manifests.rbac import RBAC_DIR
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_core.webhook.endpoints import load_rules

POD_WEBHOOK = 'admission webhook "ovn-kubernetes-admission-webhook-pod.k8s.io" denied the ' \
              "request: "
NODE_WEBHOOK = 'admission webhook "ovn-kubernetes-admission-webhook-node.k8s.io" denied the ' \
               "request: "
PODS_RT = ResourceType("", "v1", "pods", "pod", "Pod", True, subresources=("status",))
NODES_RT = ResourceType("", "v1", "nodes", "node", "Node", False, subresources=("status",))

CLUSTER_MANAGER = UserInfo(CLUSTER_MANAGER_USER, ("system:serviceaccounts",
                                                  "system:serviceaccounts:ovn-kubernetes",
                                                  AUTHENTICATED))
CONTROLLER = UserInfo(CONTROLLER_USER, ("system:serviceaccounts", AUTHENTICATED))
WORKER = UserInfo(node_agent_user("ovn-worker"), (NODES_GROUP, AUTHENTICATED))
WORKER2 = UserInfo(node_agent_user("ovn-worker2"), (NODES_GROUP, AUTHENTICATED))
ALICE = UserInfo("alice", (AUTHENTICATED,))
ADMIN = UserInfo("kubernetes-admin", (MASTERS, AUTHENTICATED))

NETWORKS = json.dumps({"default": {"ip_addresses": ["10.244.0.5/24"],
                                   "mac_address": "0a:58:0a:f4:00:05",
                                   "role": "primary"}})
GATEWAY = json.dumps({"default": {"mode": "shared", "ip-addresses": ["172.18.0.2/16"]}})


@pytest.fixture
def registry() -> AdmissionRegistry:
    registry = AdmissionRegistry()
    rules.register(registry)
    return registry


def pod(annotations: dict[str, str] | None = None, name: str = "web") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "blue", "resourceVersion": "5"}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"nodeName": "ovn-worker",
                     "containers": [{"name": "c", "image": "agnhost"}]},
            "status": {"phase": "Running"}}


def node(annotations: dict[str, str] | None = None, name: str = "ovn-worker") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": "7",
                            "labels": {"kubernetes.io/hostname": name}}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": {},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}}


def annotated(obj: dict[str, Any], **changes: str | None) -> dict[str, Any]:
    """A copy of ``obj`` with ``k8s.ovn.org/`` annotations set (``None`` removes); keyword
    names spell the annotation with ``_`` for ``-`` (``node_id`` is ``k8s.ovn.org/node-id``)."""
    result = copy.deepcopy(obj)
    annotations = result["metadata"].setdefault("annotations", {})
    for key, value in changes.items():
        full = "k8s.ovn.org/" + key.replace("_", "-")
        if value is None:
            annotations.pop(full, None)
        else:
            annotations[full] = value
    return result


def refusal(registry: AdmissionRegistry, rt: ResourceType, operation: str,
            new: dict[str, Any] | None, old: dict[str, Any] | None, user: UserInfo | None,
            subresource: str = "") -> str | None:
    """The message of the refusal, or None when the write is admitted."""
    try:
        registry.validate(rt, subresource, operation, new, old, user)
    except ApiStatusError as err:
        assert (err.code, err.reason, err.details) == (403, "Forbidden", None)
        return err.message
    return None


# -- pods ------------------------------------------------------------------------------------
@pytest.mark.parametrize("subresource", ["", "status"])
def test_cluster_manager_writes_pod_networks(registry: AdmissionRegistry,
                                             subresource: str) -> None:
    bare = pod()
    with_networks = pod({POD_NETWORKS_ANNOTATION: NETWORKS})
    changed = annotated(with_networks, pod_networks="{}")
    for operation, new, old in (("CREATE", with_networks, None),
                                ("UPDATE", with_networks, bare),
                                ("UPDATE", changed, with_networks),
                                ("UPDATE", bare, with_networks)):
        assert refusal(registry, PODS_RT, operation, new, old, CLUSTER_MANAGER,
                       subresource) is None


@pytest.mark.parametrize("subresource", ["", "status"])
@pytest.mark.parametrize(("operation", "before", "after"), [
    ("CREATE", None, NETWORKS),     # a pod created with a forged annotation
    ("UPDATE", None, NETWORKS),     # added
    ("UPDATE", NETWORKS, "{}"),     # changed
    ("UPDATE", NETWORKS, None),     # removed
])
def test_anyone_else_may_not_touch_pod_networks(registry: AdmissionRegistry, subresource: str,
                                                operation: str, before: str | None,
                                                after: str | None) -> None:
    old = None if operation == "CREATE" else pod(
        {POD_NETWORKS_ANNOTATION: before} if before is not None else {"team": "a"})
    new = pod({POD_NETWORKS_ANNOTATION: after} if after is not None else {"team": "a"})
    assert refusal(registry, PODS_RT, operation, new, old, ALICE, subresource) == (
        POD_WEBHOOK + 'user "alice" is not allowed to set the following annotations on pod: '
        '"web": [k8s.ovn.org/pod-networks]')
    assert refusal(registry, PODS_RT, operation, new, old, CONTROLLER, subresource) == (
        POD_WEBHOOK + 'user "system:serviceaccount:ovn-kubernetes:ovnkube-controller" is not '
        'allowed to set the following annotations on pod: "web": [k8s.ovn.org/pod-networks]')
    assert refusal(registry, PODS_RT, operation, new, old, WORKER, subresource) == (
        POD_WEBHOOK + 'ovnkube-node on node: "ovn-worker" is not allowed to set the following '
        'annotations on pod: "web": [k8s.ovn.org/pod-networks]')
    assert refusal(registry, PODS_RT, operation, new, old, ADMIN, subresource) is None
    assert refusal(registry, PODS_RT, operation, new, old, None, subresource) is None


def test_other_pod_writes_are_not_checked(registry: AdmissionRegistry) -> None:
    old = pod({POD_NETWORKS_ANNOTATION: NETWORKS})
    other = copy.deepcopy(old)
    other["metadata"]["annotations"]["team"] = "a"
    other["metadata"]["labels"] = {"app": "web"}
    other["status"]["phase"] = "Succeeded"
    for user in (ALICE, WORKER, CONTROLLER):
        assert refusal(registry, PODS_RT, "UPDATE", other, old, user) is None
        assert refusal(registry, PODS_RT, "UPDATE", other, old, user, "status") is None
        assert refusal(registry, PODS_RT, "CREATE", pod({"team": "a"}), None, user) is None
        assert refusal(registry, PODS_RT, "DELETE", None, old, user) is None


# -- nodes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("subresource", ["", "status"])
def test_cluster_manager_owns_subnets_and_ids(registry: AdmissionRegistry,
                                             subresource: str) -> None:
    old = node({GATEWAY_CONFIG_ANNOTATION: GATEWAY})
    allocated = annotated(old, node_subnets='{"default":["10.244.0.0/24"]}', node_id="2")
    assert refusal(registry, NODES_RT, "UPDATE", allocated, old, CLUSTER_MANAGER,
                   subresource) is None
    released = annotated(allocated, node_subnets=None)
    assert refusal(registry, NODES_RT, "UPDATE", released, allocated, CLUSTER_MANAGER,
                   subresource) is None
    for user, who in ((ALICE, "alice"), (CONTROLLER, CONTROLLER_USER)):
        assert refusal(registry, NODES_RT, "UPDATE", allocated, old, user, subresource) == (
            NODE_WEBHOOK + f'user "{who}" is not allowed to set the following annotations on '
            'node: "ovn-worker": [k8s.ovn.org/node-id k8s.ovn.org/node-subnets]')
    assert refusal(registry, NODES_RT, "UPDATE", allocated, old, WORKER, subresource) == (
        NODE_WEBHOOK + 'ovnkube-node on node: "ovn-worker" is not allowed to set the following '
        "annotations: [k8s.ovn.org/node-id k8s.ovn.org/node-subnets]")


@pytest.mark.parametrize("subresource", ["", "status"])
def test_node_agent_publishes_its_own_node_facts(registry: AdmissionRegistry,
                                                subresource: str) -> None:
    old = node({NODE_SUBNETS_ANNOTATION: '{"default":["10.244.0.0/24"]}'})
    published = annotated(old, l3_gateway_config=GATEWAY, node_chassis_id="ovn-worker",
                          node_primary_ifaddr='{"ipv4":"172.18.0.2/16"}',
                          host_cidrs='["172.18.0.2/16"]', zone_name="global",
                          gateway_mtu_support="false",
                          node_masquerade_subnet='{"ipv4":"169.254.0.0/17"}',
                          node_mgmt_port_mac_addresses='{"default":"0a:58:0a:f4:00:02"}',
                          node_encap_ips='["172.18.0.2"]')
    assert refusal(registry, NODES_RT, "UPDATE", published, old, WORKER, subresource) is None
    moved = annotated(published, l3_gateway_config="{}", zone_name="ovn-worker",
                      remote_zone_migrated="ovn-worker", host_cidrs=None)
    assert refusal(registry, NODES_RT, "UPDATE", moved, published, WORKER, subresource) is None
    # the cluster manager and anyone else may not
    assert refusal(registry, NODES_RT, "UPDATE", published, old, CLUSTER_MANAGER,
                   subresource) == (
        NODE_WEBHOOK + 'user "system:serviceaccount:ovn-kubernetes:ovnkube-cluster-manager" '
        'is not allowed to set the following annotations on node: "ovn-worker": '
        "[k8s.ovn.org/gateway-mtu-support k8s.ovn.org/host-cidrs "
        "k8s.ovn.org/l3-gateway-config k8s.ovn.org/node-chassis-id "
        "k8s.ovn.org/node-encap-ips k8s.ovn.org/node-masquerade-subnet "
        "k8s.ovn.org/node-mgmt-port-mac-addresses k8s.ovn.org/node-primary-ifaddr "
        "k8s.ovn.org/zone-name]")
    gateway_only = annotated(old, l3_gateway_config=GATEWAY)
    assert refusal(registry, NODES_RT, "UPDATE", gateway_only, old, ALICE, subresource) == (
        NODE_WEBHOOK + 'user "alice" is not allowed to set the following annotations on node: '
        '"ovn-worker": [k8s.ovn.org/l3-gateway-config]')


def test_node_agent_may_not_write_another_node(registry: AdmissionRegistry) -> None:
    old = node(name="ovn-worker")
    forged = annotated(old, l3_gateway_config=GATEWAY)
    for subresource in ("", "status"):
        assert refusal(registry, NODES_RT, "UPDATE", forged, old, WORKER2, subresource) == (
            NODE_WEBHOOK + 'ovnkube-node on node: "ovn-worker2" is not allowed to modify '
            'nodes "ovn-worker" annotations')
    labelled = copy.deepcopy(old)
    labelled["metadata"]["labels"]["x"] = "y"
    assert refusal(registry, NODES_RT, "UPDATE", labelled, old, WORKER2) == (
        NODE_WEBHOOK + 'ovnkube-node on node: "ovn-worker2" is not allowed to modify nodes '
        '"ovn-worker" annotations')


def test_node_agent_may_change_only_its_annotations(registry: AdmissionRegistry) -> None:
    old = node({GATEWAY_CONFIG_ANNOTATION: GATEWAY})
    other_annotation = annotated(old, l3_gateway_config="{}")
    other_annotation["metadata"]["annotations"]["team"] = "a"
    assert refusal(registry, NODES_RT, "UPDATE", other_annotation, old, WORKER) == (
        NODE_WEBHOOK + 'ovnkube-node on node: "ovn-worker" is not allowed to set the following '
        "annotations: [team]")
    everything_else = "is not allowed to modify anything other than annotations"
    labelled = annotated(old, l3_gateway_config="{}")
    labelled["metadata"]["labels"]["x"] = "y"
    unschedulable = annotated(old, l3_gateway_config="{}")
    unschedulable["spec"]["unschedulable"] = True
    not_ready = annotated(old, l3_gateway_config="{}")
    not_ready["status"]["conditions"][0]["status"] = "False"
    for new, subresource in ((labelled, ""), (labelled, "status"), (unschedulable, ""),
                             (not_ready, "status")):
        assert refusal(registry, NODES_RT, "UPDATE", new, old, WORKER, subresource) == (
            NODE_WEBHOOK + f'ovnkube-node on node: "ovn-worker" {everything_else}')
    # a PUT without resourceVersion and managedFields bookkeeping are not "anything else"
    put = annotated(old, l3_gateway_config="{}")
    del put["metadata"]["resourceVersion"]
    put["metadata"]["managedFields"] = [{"manager": "ovnk-node", "operation": "Update"}]
    assert refusal(registry, NODES_RT, "UPDATE", put, old, WORKER) is None


def test_chassis_id_cannot_be_removed_or_changed(registry: AdmissionRegistry) -> None:
    old = node({CHASSIS_ID_ANNOTATION: "ovn-worker"})
    changed = annotated(old, node_chassis_id="other")
    removed = annotated(old, node_chassis_id=None)
    prefix = 'is not allowed to set k8s.ovn.org/node-chassis-id on node "ovn-worker": '
    for user in (WORKER, ADMIN):
        assert refusal(registry, NODES_RT, "UPDATE", changed, old, user, "status") == (
            NODE_WEBHOOK + f'user: "{user.name}" {prefix}'
            "k8s.ovn.org/node-chassis-id cannot be changed once set")
        assert refusal(registry, NODES_RT, "UPDATE", removed, old, user) == (
            NODE_WEBHOOK + f'user: "{user.name}" {prefix}'
            "k8s.ovn.org/node-chassis-id cannot be removed")
    # the value rules come before the node check, as upstream orders them
    assert refusal(registry, NODES_RT, "UPDATE", changed, old, WORKER2) == (
        NODE_WEBHOOK + f'user: "{WORKER2.name}" {prefix}'
        "k8s.ovn.org/node-chassis-id cannot be changed once set")
    assert refusal(registry, NODES_RT, "UPDATE", changed, old, None) is None


def test_zone_annotations_take_only_upstreams_values(registry: AdmissionRegistry) -> None:
    old = node({rules.ZONE_NAME: "global", rules.REMOTE_ZONE_MIGRATED: "ovn-worker"})
    elsewhere = annotated(old, zone_name="zone-b")
    assert refusal(registry, NODES_RT, "UPDATE", elsewhere, old, WORKER) == (
        NODE_WEBHOOK + 'user: "system:ovn-node:ovn-worker" is not allowed to set '
        'k8s.ovn.org/zone-name on node "ovn-worker": k8s.ovn.org/zone-name can only be set to '
        "global or ovn-worker, it cannot be removed")
    unzoned = annotated(old, zone_name=None)
    assert refusal(registry, NODES_RT, "UPDATE", unzoned, old, ADMIN) == (
        NODE_WEBHOOK + 'user: "kubernetes-admin" is not allowed to set k8s.ovn.org/zone-name '
        'on node "ovn-worker": k8s.ovn.org/zone-name can only be set to global or ovn-worker, '
        "it cannot be removed")
    migrated = annotated(old, remote_zone_migrated="ovn-worker2")
    assert refusal(registry, NODES_RT, "UPDATE", migrated, old, WORKER) == (
        NODE_WEBHOOK + 'user: "system:ovn-node:ovn-worker" is not allowed to set '
        'k8s.ovn.org/remote-zone-migrated on node "ovn-worker": '
        "k8s.ovn.org/remote-zone-migrated can only be set to ovn-worker, it cannot be removed")


def test_masters_and_the_server_write_anything_else(registry: AdmissionRegistry) -> None:
    old = node({CHASSIS_ID_ANNOTATION: "ovn-worker"})
    rewritten = annotated(old, node_subnets='{"default":["10.244.9.0/24"]}', node_id="9",
                          l3_gateway_config=GATEWAY, host_cidrs="[]")
    rewritten["metadata"]["labels"]["x"] = "y"
    for user in (ADMIN, None):
        for subresource in ("", "status"):
            assert refusal(registry, NODES_RT, "UPDATE", rewritten, old, user,
                           subresource) is None


def test_ovnk_local_creates_nodes_as_admin(registry: AdmissionRegistry) -> None:
    """``ovnk local up`` creates each Node with its gateway annotations (as the admin), and
    over kept state patches the same values again."""
    created = build_node("ovn-worker", 0)
    created.update(apiVersion="v1", kind="Node")
    assert refusal(registry, NODES_RT, "CREATE", created, None, ADMIN) is None
    assert refusal(registry, NODES_RT, "UPDATE", created, copy.deepcopy(created), ADMIN) is None
    assert refusal(registry, NODES_RT, "CREATE", created, None, ALICE) == (
        NODE_WEBHOOK + 'user "alice" is not allowed to set the following annotations on node: '
        '"ovn-worker": [k8s.ovn.org/l3-gateway-config k8s.ovn.org/node-chassis-id '
        "k8s.ovn.org/node-encap-ips k8s.ovn.org/node-primary-ifaddr]")
    forged = node({NODE_SUBNETS_ANNOTATION: "{}"}, name="ovn-worker9")
    assert refusal(registry, NODES_RT, "CREATE", forged, None, WORKER) == (
        NODE_WEBHOOK + 'ovnkube-node on node: "ovn-worker" is not allowed to modify nodes '
        '"ovn-worker9" annotations')


def test_unrelated_node_writes_are_not_checked(registry: AdmissionRegistry) -> None:
    old = node({NODE_SUBNETS_ANNOTATION: "{}", GATEWAY_CONFIG_ANNOTATION: GATEWAY})
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["x"] = "y"
    new["metadata"]["annotations"]["team"] = "a"
    for user in (ALICE, CLUSTER_MANAGER, CONTROLLER):
        assert refusal(registry, NODES_RT, "UPDATE", new, old, user) is None
        assert refusal(registry, NODES_RT, "DELETE", None, old, user) is None


def test_denial_status_and_go_formatting() -> None:
    error = denial(rules.denied(rules.POD_WEBHOOK, "no"))  # as the server returns it
    assert error.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": POD_WEBHOOK + "no", "reason": "Forbidden", "code": 403}
    assert rules.go_quote('a"b\\c\n\x00\x7fé\u00a0\u200b\U0001F600 ') == (
        '"a\\"b\\\\c\\n\\x00\\x7fé\\u00a0\\u200b\U0001F600 "')
    assert rules.go_list(["b", "a"]) == "[a b]" and rules.go_list([]) == "[]"


def test_registered_by_the_webhook_entry_point_not_in_process() -> None:
    """The rules are ``ovnk webhook``'s (``ovnk.webhook``): an API server that loads the
    in-process ``ovnk.admission`` hooks does not run them, a webhook configuration calls
    them."""
    assert load_rules().paths == [rules.NODE_PATH, rules.POD_PATH]
    registry = AdmissionRegistry()
    load_plugins(registry, use_entry_points=True)
    new = pod({POD_NETWORKS_ANNOTATION: NETWORKS})
    assert refusal(registry, PODS_RT, "CREATE", new, None, ALICE) is None


# -- against the local API server ------------------------------------------------------------
@pytest.fixture
def cluster(kube_apiserver: ServerHandle) -> KubeClient:
    """A server with the hooks, a namespace, a pod the cluster manager annotated, two nodes
    (``ovn-worker`` as ``ovnk local`` creates it)."""
    rules.register(kube_apiserver.admission)
    api = KubeClient(client_for(kube_apiserver))
    api.create(NAMESPACES, {"metadata": {"name": "blue"}})
    api.create(NODES, build_node("ovn-worker", 0))
    api.create(NODES, {"metadata": {"name": "ovn-worker2"}})
    created = api.create(PODS, {"metadata": {"name": "web"}, "spec": {
        "nodeName": "ovn-worker", "containers": [{"name": "c", "image": "agnhost"}]}}, "blue")
    kube_apiserver.api.patch(_rt(kube_apiserver, "pods"), "blue", "web", json.dumps(
        {"metadata": {"annotations": {POD_NETWORKS_ANNOTATION: NETWORKS}}}).encode(),
        "application/merge-patch+json", WriteOptions(user=CLUSTER_MANAGER))
    assert created["metadata"]["name"] == "web"
    return api


def _rt(handle: ServerHandle, plural: str) -> ResourceType:
    rt = handle.registry.get("", "v1", plural)
    assert rt is not None
    return rt


def _patch(handle: ServerHandle, plural: str, namespace: str, name: str, patch: Any,
           user: UserInfo | None, subresource: str = "") -> ApiStatusError | None:
    try:
        handle.api.patch(_rt(handle, plural), namespace, name, json.dumps(patch).encode(),
                         "application/merge-patch+json", WriteOptions(user=user), subresource)
    except ApiStatusError as err:
        return err
    return None


@pytest.mark.parametrize("subresource", ["", "status"])
def test_server_refused_pod_write_leaves_the_pod(kube_apiserver: ServerHandle,
                                                 cluster: KubeClient, subresource: str) -> None:
    before = cluster.get(PODS, "web", "blue")
    assert before["metadata"]["annotations"][POD_NETWORKS_ANNOTATION] == NETWORKS
    for user in (ALICE, WORKER):
        err = _patch(kube_apiserver, "pods", "blue", "web", {"metadata": {"annotations": {
            POD_NETWORKS_ANNOTATION: "{}", "team": "a"}}}, user, subresource)
        assert err is not None and (err.code, err.reason) == (403, "Forbidden")
        assert err.message.startswith(POD_WEBHOOK)
        assert cluster.get(PODS, "web", "blue") == before
    assert _patch(kube_apiserver, "pods", "blue", "web", {"metadata": {"annotations": {
        POD_NETWORKS_ANNOTATION: "{}"}}}, CLUSTER_MANAGER, subresource) is None
    after = cluster.get(PODS, "web", "blue")
    assert after["metadata"]["annotations"][POD_NETWORKS_ANNOTATION] == "{}"


def test_server_refuses_a_pod_created_with_forged_networks(kube_apiserver: ServerHandle,
                                                           cluster: KubeClient) -> None:
    body = {"metadata": {"name": "forged", "annotations": {POD_NETWORKS_ANNOTATION: NETWORKS}},
            "spec": {"containers": [{"name": "c", "image": "agnhost"}]}}
    with pytest.raises(ApiStatusError) as err:
        kube_apiserver.api.create(_rt(kube_apiserver, "pods"), "blue", copy.deepcopy(body),
                                  WriteOptions(user=ALICE))
    assert err.value.message == (
        POD_WEBHOOK + 'user "alice" is not allowed to set the following annotations on pod: '
        '"forged": [k8s.ovn.org/pod-networks]')
    assert kube_apiserver.store.get("/pods", "blue", "forged") is None
    assert [p["metadata"]["name"] for p in cluster.list(PODS, "blue")["items"]] == ["web"]


def test_server_node_annotations_by_owner(kube_apiserver: ServerHandle,
                                          cluster: KubeClient) -> None:
    before = cluster.get(NODES, "ovn-worker")
    # node agent of ovn-worker2 writing ovn-worker's gateway: refused, node unchanged
    err = _patch(kube_apiserver, "nodes", "", "ovn-worker", {"metadata": {"annotations": {
        GATEWAY_CONFIG_ANNOTATION: "{}"}}}, WORKER2, "status")
    assert err is not None and err.message == (
        NODE_WEBHOOK + 'ovnkube-node on node: "ovn-worker2" is not allowed to modify nodes '
        '"ovn-worker" annotations')
    # node agent writing the cluster manager's subnets: refused
    err = _patch(kube_apiserver, "nodes", "", "ovn-worker", {"metadata": {"annotations": {
        NODE_SUBNETS_ANNOTATION: '{"default":["10.244.9.0/24"]}'}}}, WORKER)
    assert err is not None and err.message == (
        NODE_WEBHOOK + 'ovnkube-node on node: "ovn-worker" is not allowed to set the following '
        "annotations: [k8s.ovn.org/node-subnets]")
    # changing the chassis id: refused
    err = _patch(kube_apiserver, "nodes", "", "ovn-worker", {"metadata": {"annotations": {
        CHASSIS_ID_ANNOTATION: "other"}}}, WORKER, "status")
    assert err is not None and err.message.endswith("cannot be changed once set")
    assert cluster.get(NODES, "ovn-worker") == before
    # the owners: the node agent publishes through nodes/status, the cluster manager
    # allocates through the main resource
    assert _patch(kube_apiserver, "nodes", "", "ovn-worker", {"metadata": {"annotations": {
        GATEWAY_CONFIG_ANNOTATION: GATEWAY}}}, WORKER, "status") is None
    assert _patch(kube_apiserver, "nodes", "", "ovn-worker", {"metadata": {"annotations": {
        NODE_SUBNETS_ANNOTATION: '{"default":["10.244.0.0/24"]}', NODE_ID_ANNOTATION: "2"}}},
        CLUSTER_MANAGER) is None
    annotations = cluster.get(NODES, "ovn-worker")["metadata"]["annotations"]
    assert annotations[GATEWAY_CONFIG_ANNOTATION] == GATEWAY
    assert (annotations[NODE_SUBNETS_ANNOTATION], annotations[NODE_ID_ANNOTATION]) == (
        '{"default":["10.244.0.0/24"]}', "2")


def test_official_client_sees_the_webhook_denial(kube_apiserver: ServerHandle,
                                                 cluster: KubeClient) -> None:
    """Over HTTPS, authenticated by client certificates: the node agents may patch nodes and
    pods (RBAC), and admission still refuses what is not theirs."""
    rbac = client.RbacAuthorizationV1Api(client_for(kube_apiserver))
    rbac.create_cluster_role({"metadata": {"name": "ovn-node"}, "rules": [
        {"apiGroups": [""], "resources": ["nodes", "nodes/status", "pods", "pods/status"],
         "verbs": ["get", "patch"]}]})
    rbac.create_cluster_role_binding({
        "metadata": {"name": "ovn-node"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "ovn-node"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                      "name": NODES_GROUP}]})
    before = cluster.get(NODES, "ovn-worker")
    worker2 = client.CoreV1Api(client_for(kube_apiserver, WORKER2.name, (NODES_GROUP,)))
    with pytest.raises(ApiException) as err:
        worker2.patch_node_status("ovn-worker", {"metadata": {"annotations": {
            GATEWAY_CONFIG_ANNOTATION: "{}"}}})
    assert err.value.status == 403
    assert json.loads(err.value.body) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "reason": "Forbidden", "code": 403,
        "message": NODE_WEBHOOK + 'ovnkube-node on node: "ovn-worker2" is not allowed to '
                                  'modify nodes "ovn-worker" annotations'}
    with pytest.raises(ApiException) as err:
        worker2.patch_namespaced_pod("web", "blue", {"metadata": {"annotations": {
            POD_NETWORKS_ANNOTATION: "{}"}}})
    assert json.loads(err.value.body)["message"] == (
        POD_WEBHOOK + 'ovnkube-node on node: "ovn-worker2" is not allowed to set the following '
        'annotations on pod: "web": [k8s.ovn.org/pod-networks]')
    assert cluster.get(NODES, "ovn-worker") == before
    assert cluster.get(PODS, "web", "blue")["metadata"]["annotations"][
        POD_NETWORKS_ANNOTATION] == NETWORKS
    # its own node's facts, through nodes/status: admitted
    worker = client.CoreV1Api(client_for(kube_apiserver, WORKER.name, (NODES_GROUP,)))
    patched = worker.patch_node_status("ovn-worker", {"metadata": {"annotations": {
        "k8s.ovn.org/host-cidrs": '["172.18.0.2/16"]'}}})
    assert patched.metadata.annotations["k8s.ovn.org/host-cidrs"] == '["172.18.0.2/16"]'


def test_cluster_manager_allocates_under_admission(kube_apiserver: ServerHandle) -> None:
    """The real cluster manager, authenticated as its service account and bound by its own
    RBAC manifest, writes node-id, node-subnets and pod-networks with the hooks active."""
    rules.register(kube_apiserver.admission)
    admin = with_crds(kube_apiserver)
    admin.create(NAMESPACES, {"metadata": {"name": OVN_NAMESPACE}})
    apply_documents(admin, yaml.safe_load_all(
        (RBAC_DIR / "ovnkube-cluster-manager.yaml").read_text()))
    admin.create(NODES, build_node("ovn-worker", 0))
    admin.create(NAMESPACES, {"metadata": {"name": "blue"}})
    admin.create(PODS, {"metadata": {"name": "web", "namespace": "blue"}, "spec": {
        "nodeName": "ovn-worker", "containers": [{"name": "c", "image": "agnhost"}]}})
    as_cluster_manager = KubeClient(client_for(kube_apiserver, CLUSTER_MANAGER_USER, (
        "system:serviceaccounts", f"system:serviceaccounts:{OVN_NAMESPACE}")))
    config = udn_config()
    manager = ClusterManager(config, as_cluster_manager, PluginHost.load(config), identity="t")
    manager.start_controllers()
    try:
        wait_until(lambda: POD_NETWORKS_ANNOTATION in (
            admin.get(PODS, "web", "blue")["metadata"].get("annotations") or {}))
    finally:
        manager.stop_controllers()
    annotations = admin.get(NODES, "ovn-worker")["metadata"]["annotations"]
    assert json.loads(annotations[NODE_SUBNETS_ANNOTATION])["default"]
    assert annotations[NODE_ID_ANNOTATION] and annotations[CHASSIS_ID_ANNOTATION] == "ovn-worker"
