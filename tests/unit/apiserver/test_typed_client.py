"""Every kind the server serves, listed and watched with the typed APIs of the ``kubernetes``
client (``ovnk_local.testing.typed_client``), over objects as the cluster's own writers make
them.

The client refuses an object whose required field (one without ``omitempty`` in the Go
type) is missing, so this is where "the server returns what Kubernetes returns" shows.  The
kinds come from the server's discovery: a kind served tomorrow is listed and watched here
too, and must have an object in ``cluster_objects`` (the test says so when it has none).
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client
from ovnk_local import pod_status
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.cluster import build_node, node_gateway_annotations
from ovnk_local.endpointslices import build_slices
from ovnk_local.testing.apiserver_fixtures import with_crds
from ovnk_local.testing.typed_client import list_and_watch, served_kinds, typed_api

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.leader import LeaderElector
from ovnk_core.kube.resources import NADS, NODES, PODS, UDNS, Resource
from ovnk_core.testing.waiting import wait_until

NS = "blue"
EVENTS_V1_NS = "recorded"
NOW = "2026-01-02T03:04:05Z"


def _create_pods(api: KubeClient) -> list[dict[str, Any]]:
    """Two pods on ovn-worker with the statuses the kubelet stand-in reports: Running as on
    a ``--no-dataplane`` cluster, and waiting on an image the real dataplane cannot run."""
    pods = []
    for name, image in (("web-0", "registry.k8s.io/e2e-test-images/agnhost:2.53"),
                        ("web-1", "nginx")):
        pod = api.create(PODS, {"metadata": {"name": name, "labels": {"app": "web"}},
                                "spec": {"containers": [{"name": "web", "image": image,
                                                         "ports": [{"containerPort": 8080}]}]}},
                         namespace=NS)
        api.bind(PODS, name, NS, "ovn-worker")
        pod = api.get(PODS, name, NS)
        if name == "web-0":
            status = pod_status.build_running_status(pod, ["10.244.0.5"], "172.18.0.2", NOW)
        else:
            waiting = {"waiting": {"reason": "UnsupportedImage", "message": "nginx"}}
            status = pod_status.build_pod_status(pod, ["10.244.0.6"], "172.18.0.2", NOW, [
                pod_status.container_status(pod["spec"]["containers"][0], waiting)])
        api.patch_status(PODS, name, {"status": status}, namespace=NS)
        pods.append(api.get(PODS, name, NS))
    return pods


def cluster_objects(handle: ServerHandle, api: KubeClient, typed: client.ApiClient) -> None:
    """One or more objects of every kind, written the way their writers write them."""
    crds = with_crds(handle)
    node = build_node("ovn-worker", 0)
    node["metadata"]["annotations"] = node_gateway_annotations("ovn-worker", "172.18.0.2")
    api.create(NODES, node)
    core = client.CoreV1Api(typed)
    for name in (NS, EVENTS_V1_NS):
        core.create_namespace({"metadata": {"name": name}})
    pods = _create_pods(api)
    service = core.create_namespaced_service(NS, {
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}})
    service_json = api.get(Resource("", "v1", "services", "Service", True), "web", NS)
    for endpoint_slice in build_slices(service_json, pods):
        endpoint_slice["metadata"]["generateName"] = "web-"
        client.DiscoveryV1Api(typed).create_namespaced_endpoint_slice(NS, endpoint_slice)
    core.create_namespaced_endpoints(NS, {
        "metadata": {"name": "web"},
        "subsets": [{"addresses": [{"ip": "10.244.0.5", "nodeName": "ovn-worker"}],
                     "ports": [{"port": 8080}]}]})
    EventRecorder(api, "kubelet", "ovn-worker").event(pods[0], "Normal", "Started",
                                                      "Started container web")
    client.EventsV1Api(typed).create_namespaced_event(EVENTS_V1_NS, {
        "metadata": {"generateName": "web."}, "eventTime": "2026-01-02T03:04:05.000000Z",
        "reportingController": "example.org/controller", "reportingInstance": "c-1",
        "action": "Sync", "reason": "Synced", "type": "Normal", "note": "in sync",
        "regarding": {"kind": "Service", "namespace": NS, "name": "web",
                      "uid": service.metadata.uid}})
    assert LeaderElector(api, "ovnkube-cluster-manager", NS, "cm-1").try_acquire_or_renew()
    core.create_namespaced_config_map(NS, {"metadata": {"name": "settings"},
                                           "data": {"mtu": "1400"}})
    core.create_namespaced_secret(NS, {"metadata": {"name": "token"},
                                       "stringData": {"password": "s3cret"}})
    template = {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "agnhost"}]}}
    apps = client.AppsV1Api(typed)
    apps.create_namespaced_deployment(NS, {"metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template}})
    apps.create_namespaced_daemon_set(NS, {"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template}})
    client.NetworkingV1Api(typed).create_namespaced_network_policy(NS, {
        "metadata": {"name": "web"},
        "spec": {"podSelector": {"matchLabels": {"app": "web"}},
                 "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}],
                              "ports": [{"port": 8080}]}]}})
    client.AdmissionregistrationV1Api(typed).create_validating_webhook_configuration({
        "metadata": {"name": "widgets"},
        "webhooks": [{"name": "widgets.example.com", "sideEffects": "None",
                      "admissionReviewVersions": ["v1"],
                      "clientConfig": {"url": "https://127.0.0.1:1/validate",
                                       "caBundle": "Y2E="},
                      "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"],
                                 "apiVersions": ["v1"], "resources": ["widgets"]}]}]})
    rbac = client.RbacAuthorizationV1Api(typed)
    rbac.create_namespaced_role(NS, {"metadata": {"name": "reader"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]})
    rbac.create_namespaced_role_binding(NS, {
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}]})
    crds.create(UDNS, {"metadata": {"name": "net", "namespace": NS}, "spec": {
        "topology": "Layer3", "layer3": {"role": "Secondary",
                                         "subnets": [{"cidr": "10.100.0.0/16"}]}}},
                namespace=NS)
    crds.create(NADS, {"metadata": {"name": "net", "namespace": NS}, "spec": {
        "config": '{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"blue_net"}'}},
                namespace=NS)
    wait_until(lambda: any(sa.metadata.name == "default" for sa in
                           core.list_namespaced_service_account(NS).items))


@pytest.fixture
def objects(kube_apiserver: ServerHandle, kube_client: client.ApiClient) -> client.ApiClient:
    cluster_objects(kube_apiserver, KubeClient(kube_client), kube_client)
    return kube_client


def test_every_served_kind_lists_and_watches_with_the_typed_client(
        objects: client.ApiClient) -> None:
    crd_groups = {crd.spec.group for crd in client.ApiextensionsV1Api(
        objects).list_custom_resource_definition().items}
    kinds = served_kinds(objects)
    builtin = [k for k in kinds if k.group not in crd_groups]
    assert len(builtin) >= 20 and len(builtin) < len(kinds)
    for kind in kinds:
        assert typed_api(objects, kind.group, kind.version) is not None or \
            kind.group in crd_groups, f"{kind}: the kubernetes client has no typed API"
        # events.k8s.io: see test_legacy_events_have_no_event_time
        namespace = EVENTS_V1_NS if kind.group == "events.k8s.io" else ""
        listed, watched = list_and_watch(objects, kind, namespace)
        if kind.group not in crd_groups or kind.plural in ("userdefinednetworks",
                                                           "network-attachment-definitions"):
            assert listed, f"{kind}: no object to decode; add one to cluster_objects"
        assert watched == listed, kind


def test_pods_decode_with_the_kubelet_stand_ins_statuses(objects: client.ApiClient) -> None:
    """The issue's crash: ``list_pod_for_all_namespaces`` over the stand-in's pods."""
    pods = {p.metadata.name: p for p in
            client.CoreV1Api(objects).list_pod_for_all_namespaces().items}
    running = pods["web-0"].status.container_statuses[0]
    assert (running.name, running.image_id, running.ready, running.restart_count) == (
        "web", "", True, 0)
    assert running.state.running is not None and running.last_state.running is None
    waiting = pods["web-1"].status.container_statuses[0]
    assert waiting.state.waiting.reason == "UnsupportedImage" and waiting.image == "nginx"
    ready = next(c for c in pods["web-0"].status.conditions if c.type == "Ready")
    assert ready.status == "True" and ready.last_probe_time is None


def test_new_kinds_decode_with_their_defaults(objects: client.ApiClient) -> None:
    apps = client.AppsV1Api(objects)
    deployment = apps.read_namespaced_deployment("web", NS)
    assert deployment.spec.replicas == 1 and deployment.spec.strategy.type == "RollingUpdate"
    assert deployment.spec.template.spec.containers[0].image_pull_policy == "Always"
    daemonset = apps.read_namespaced_daemon_set("agent", NS)
    assert daemonset.spec.update_strategy.rolling_update.max_unavailable == 1
    policy = client.NetworkingV1Api(objects).read_namespaced_network_policy("web", NS)
    assert policy.spec.policy_types == ["Ingress"]
    assert policy.spec.ingress[0].ports[0].protocol == "TCP"
    secret = client.CoreV1Api(objects).read_namespaced_secret("token", NS)
    assert secret.type == "Opaque" and secret.data == {"password": "czNjcmV0"}
    assert secret.string_data is None


def test_legacy_events_have_no_event_time(objects: client.ApiClient,
                                          kube_apiserver: ServerHandle) -> None:
    """A core Event recorded without ``eventTime`` (ovnk's recorder, client-go's legacy one)
    reads through events.k8s.io/v1 with ``eventTime: null``, as on a real cluster, where the
    kubernetes client refuses it (kubernetes-client/python#1616); so the typed listing of
    events.k8s.io above reads the namespace of events recorded through that API."""
    events = KubeClient(objects).list(Resource("events.k8s.io", "v1", "events", "Event",
                                               True), NS)["items"]
    assert events and all(e["eventTime"] is None for e in events)
    assert events[0]["deprecatedCount"] == 1
