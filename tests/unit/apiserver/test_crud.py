"""Create/get/list/update/delete semantics over real HTTP with the official client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def test_create_assigns_uid_rv_timestamp_and_generation(core: client.CoreV1Api,
                                                         namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"},
                                                       "data": {"k": "v"}})
    assert cm.metadata.uid and cm.metadata.creation_timestamp is not None
    assert cm.metadata.generation == 1
    assert int(cm.metadata.resource_version) > 0
    again = core.read_namespaced_config_map("a", namespace)
    assert again.metadata.resource_version == cm.metadata.resource_version
    assert again.data == {"k": "v"}


def test_resource_version_is_cluster_wide_and_monotonic(core: client.CoreV1Api,
                                                         namespace: str) -> None:
    versions = []
    for i in range(5):
        cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": f"c{i}"}})
        versions.append(int(cm.metadata.resource_version))
        node = core.create_node({"metadata": {"name": f"n{i}"}})
        versions.append(int(node.metadata.resource_version))
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    listed = core.list_namespaced_config_map(namespace)
    assert int(listed.metadata.resource_version) >= versions[-1]


def test_generate_name_appends_five_random_characters(core: client.CoreV1Api,
                                                       namespace: str) -> None:
    names = {core.create_namespaced_config_map(
        namespace, {"metadata": {"generateName": "web-"}}).metadata.name for _ in range(5)}
    assert len(names) == 5
    for name in names:
        assert name.startswith("web-") and len(name) == len("web-") + 5


def test_missing_name_is_invalid(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {}})
    status = status_of(err.value)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"] == ('ConfigMap "" is invalid: metadata.name: Required value: '
                                 "name or generateName is required")


def test_invalid_name_and_label_messages(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {
            "name": "Bad_Name", "labels": {"ok": "bad value"}}})
    status = status_of(err.value)
    assert status["message"].startswith('ConfigMap "Bad_Name" is invalid: [metadata.name: '
                                        'Invalid value: "Bad_Name": a lowercase RFC 1123 '
                                        "subdomain must consist of")
    fields = [c["field"] for c in status["details"]["causes"]]
    assert fields == ["metadata.name", "metadata.labels"]


def test_already_exists(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    assert status_of(err.value) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'configmaps "a" already exists', "reason": "AlreadyExists",
        "details": {"name": "a", "kind": "configmaps"}, "code": 409}
    with pytest.raises(ApiException) as err:
        core.create_namespace({"metadata": {"name": namespace}})
    assert status_of(err.value)["message"] == f'namespaces "{namespace}" already exists'


def test_not_found_shapes(core: client.CoreV1Api, custom: client.CustomObjectsApi,
                          namespace: str, widget_crd: dict[str, Any]) -> None:
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod("x", namespace)
    assert status_of(err.value)["message"] == 'pods "x" not found'
    assert (err.value.status, status_of(err.value)["reason"]) == (404, "NotFound")
    with pytest.raises(ApiException) as err:
        custom.get_namespaced_custom_object("example.org", "v1", namespace, "widgets", "w")
    assert status_of(err.value)["message"] == 'widgets.example.org "w" not found'
    assert status_of(err.value)["details"] == {"name": "w", "group": "example.org",
                                               "kind": "widgets"}


def test_missing_namespace_is_404(core: client.CoreV1Api) -> None:
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("nowhere", {"metadata": {"name": "a"}})
    assert err.value.status == 404
    assert status_of(err.value)["message"] == 'namespaces "nowhere" not found'


def test_update_with_stale_resource_version_conflicts(core: client.CoreV1Api,
                                                      namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"},
                                                       "data": {"v": "1"}})
    cm.data = {"v": "2"}
    updated = core.replace_namespaced_config_map("a", namespace, cm)
    assert int(updated.metadata.resource_version) > int(cm.metadata.resource_version)
    cm.data = {"v": "3"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("a", namespace, cm)
    status = status_of(err.value)
    assert (status["code"], status["reason"]) == (409, "Conflict")
    assert status["message"] == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again")
    assert core.read_namespaced_config_map("a", namespace).data == {"v": "2"}


def test_update_without_resource_version_is_unconditional(core: client.CoreV1Api,
                                                          namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    updated = core.replace_namespaced_config_map("a", namespace, {
        "metadata": {"name": "a"}, "data": {"x": "y"}})
    assert updated.data == {"x": "y"}


def test_noop_update_keeps_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"},
                                                       "data": {"v": "1"}})
    same = core.replace_namespaced_config_map("a", namespace, cm)
    assert same.metadata.resource_version == cm.metadata.resource_version


def test_name_mismatch_is_bad_request(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("a", namespace, {"metadata": {"name": "b"}})
    assert status_of(err.value)["reason"] == "BadRequest"
    assert status_of(err.value)["message"] == (
        "the name of the object (b) does not match the name on the URL (a)")


def test_generation_moves_only_with_spec(core: client.CoreV1Api, namespace: str) -> None:
    svc = core.create_namespaced_service(namespace, {
        "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}], "selector": {"a": "b"}}})
    assert svc.metadata.generation == 1
    labelled = core.patch_namespaced_service(
        "s", namespace, {"metadata": {"labels": {"x": "y"}}},
        _content_type="application/merge-patch+json")
    assert labelled.metadata.generation == 1
    status = core.patch_namespaced_service_status(
        "s", namespace, {"status": {"conditions": [{"type": "T", "status": "True",
                                                    "reason": "R", "message": "",
                                                    "lastTransitionTime":
                                                        "2024-01-01T00:00:00Z"}]}},
        _content_type="application/merge-patch+json")
    assert status.metadata.generation == 1
    changed = core.patch_namespaced_service(
        "s", namespace, {"spec": {"selector": {"a": "c"}}},
        _content_type="application/merge-patch+json")
    assert changed.metadata.generation == 2


def test_service_gets_cluster_ip_and_keeps_it(core: client.CoreV1Api, namespace: str) -> None:
    a = core.create_namespaced_service(namespace, {"metadata": {"name": "a"},
                                                   "spec": {"ports": [{"port": 80}]}})
    b = core.create_namespaced_service(namespace, {
        "metadata": {"name": "b"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
    assert a.spec.cluster_ip.startswith("10.96.") and a.spec.cluster_ip != b.spec.cluster_ip
    assert a.spec.cluster_ips == [a.spec.cluster_ip] and a.spec.ip_families == ["IPv4"]
    assert a.spec.ports[0].target_port == 80 and a.spec.ports[0].protocol == "TCP"
    assert 30000 <= b.spec.ports[0].node_port <= 32767
    replaced = core.replace_namespaced_service("a", namespace, {
        "metadata": {"name": "a"}, "spec": {"ports": [{"port": 81}]}})
    assert replaced.spec.cluster_ip == a.spec.cluster_ip
    with pytest.raises(ApiException) as err:
        core.create_namespaced_service(namespace, {"metadata": {"name": "c"}, "spec": {
            "clusterIP": a.spec.cluster_ip, "ports": [{"port": 80}]}})
    assert status_of(err.value)["message"] == (
        f'Service "c" is invalid: spec.clusterIPs[0]: Invalid value: "{a.spec.cluster_ip}": '
        "provided IP is already allocated")


def test_list_limit_and_continue(core: client.CoreV1Api, namespace: str) -> None:
    for i in range(7):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": f"c{i}"}})
    first = core.list_namespaced_config_map(namespace, limit=3)
    assert [c.metadata.name for c in first.items] == ["c0", "c1", "c2"]
    assert first.metadata.remaining_item_count == 4
    second = core.list_namespaced_config_map(namespace, limit=3,
                                             _continue=first.metadata.var_continue)
    third = core.list_namespaced_config_map(namespace, limit=3,
                                            _continue=second.metadata.var_continue)
    assert [c.metadata.name for c in second.items + third.items] == [
        "c3", "c4", "c5", "c6"]
    assert third.metadata.var_continue is None
    assert second.metadata.resource_version == first.metadata.resource_version


def test_list_all_namespaces(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespace({"metadata": {"name": "red"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    core.create_namespaced_config_map("red", {"metadata": {"name": "a"}})
    everything = core.list_config_map_for_all_namespaces()
    assert [(c.metadata.namespace, c.metadata.name) for c in everything.items] == [
        ("blue", "a"), ("red", "a")]


def test_dry_run_does_not_persist(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}},
                                                dry_run="All")
    assert created.metadata.name == "a"
    with pytest.raises(ApiException):
        core.read_namespaced_config_map("a", namespace)


def test_delete_returns_object_and_preconditions(core: client.CoreV1Api, namespace: str) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map("a", namespace, body=client.V1DeleteOptions(
            preconditions=client.V1Preconditions(uid="other")))
    assert status_of(err.value)["message"] == (
        'Operation cannot be fulfilled on configmaps "a": Precondition failed: UID in '
        f"precondition: other, UID in object meta: {cm.metadata.uid}")
    core.delete_namespaced_config_map("a", namespace, body=client.V1DeleteOptions(
        preconditions=client.V1Preconditions(uid=cm.metadata.uid)))
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map("a", namespace)
    assert err.value.status == 404


def test_delete_collection_with_selector(core: client.CoreV1Api, namespace: str) -> None:
    for name, team in (("a", "x"), ("b", "x"), ("c", "y")):
        core.create_namespaced_config_map(namespace, {"metadata": {
            "name": name, "labels": {"team": team}}})
    core.delete_collection_namespaced_config_map(namespace, label_selector="team=x")
    assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == ["c"]


def test_method_not_allowed(raw: Any) -> None:
    response = raw("DELETE", "/api/v1/namespaces")
    assert response.status == 405
    assert response.json()["reason"] == "MethodNotAllowed"


def test_unknown_path_is_404(raw: Any) -> None:
    response = raw("GET", "/apis/nothing.example.org/v1/things")
    assert response.status == 404
    assert response.json()["message"] == "the server could not find the requested resource"


def test_pod_requires_containers_and_starts_pending(core: client.CoreV1Api, raw: Any,
                                                    namespace: str) -> None:
    response = raw("POST", f"/api/v1/namespaces/{namespace}/pods",
                   {"metadata": {"name": "p"}, "spec": {}})
    assert response.status == 422
    assert response.json()["message"] == 'Pod "p" is invalid: spec.containers: Required value'
    pod = core.create_namespaced_pod(namespace, {
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Running"}})
    assert pod.status.phase == "Pending" and pod.status.qos_class == "BestEffort"
    assert pod.spec.restart_policy == "Always"


def test_pod_binding_sets_node(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "nginx"}]}})
    # the real server answers a Binding with a Status, which the typed client cannot load
    # into V1Binding: read the raw reply
    reply = core.create_namespaced_pod_binding("p", namespace, {
        "metadata": {"name": "p"}, "target": {"apiVersion": "v1", "kind": "Node",
                                              "name": "node1"}}, _preload_content=False)
    assert json.loads(reply.data)["status"] == "Success"
    assert core.read_namespaced_pod("p", namespace).spec.node_name == "node1"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod_binding("p", namespace, {
            "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "node2"}},
            _preload_content=False)
    assert status_of(err.value)["message"] == (
        'Operation cannot be fulfilled on pods "p": pod p is already assigned to node "node1"')


def test_leases_and_endpoint_slices(kube_client: client.ApiClient, namespace: str) -> None:
    leases = client.CoordinationV1Api(kube_client)
    lease = leases.create_namespaced_lease(namespace, client.V1Lease(
        metadata=client.V1ObjectMeta(name="leader"),
        spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15)))
    lease.spec.holder_identity = "b"
    renewed = leases.replace_namespaced_lease("leader", namespace, lease)
    assert renewed.spec.holder_identity == "b"
    with pytest.raises(ApiException) as err:
        leases.replace_namespaced_lease("leader", namespace, lease)
    assert err.value.status == 409
    slices = client.DiscoveryV1Api(kube_client)
    created = slices.create_namespaced_endpoint_slice(namespace, client.V1EndpointSlice(
        metadata=client.V1ObjectMeta(generate_name="svc1-", labels={
            "kubernetes.io/service-name": "svc1"}),
        address_type="IPv4",
        endpoints=[client.V1Endpoint(addresses=["10.100.0.5"],
                                     conditions=client.V1EndpointConditions(ready=True))],
        ports=[client.DiscoveryV1EndpointPort(name="http", port=8080, protocol="TCP")]))
    assert created.metadata.name.startswith("svc1-")
    listed = slices.list_namespaced_endpoint_slice(
        namespace, label_selector="kubernetes.io/service-name=svc1")
    assert [s.endpoints[0].addresses for s in listed.items] == [["10.100.0.5"]]
