"""Status subresource rules and every patch type (merge, JSON, strategic, apply)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.builtins import POD_KEYS
from ovnk_local.apiserver.patch import json_patch, merge_patch
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.apiserver.strategic import strategic_merge

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
SMP = "application/strategic-merge-patch+json"
POD = {"metadata": {"name": "p", "labels": {"app": "web"}},
       "spec": {"containers": [
           {"name": "a", "image": "nginx", "env": [{"name": "X", "value": "1"}],
            "ports": [{"containerPort": 80}]},
           {"name": "b", "image": "busybox"}]}}


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def test_status_subresource_changes_status_and_metadata(core: client.CoreV1Api,
                                                       namespace: str) -> None:
    """As the real pod status strategy: the spec is kept, metadata (labels, annotations)
    is written, ownerReferences are kept."""
    core.create_namespaced_pod(namespace, POD)
    pod = core.read_namespaced_pod("p", namespace)
    pod.status.phase = "Running"
    pod.metadata.labels = {"changed": "yes"}
    pod.metadata.owner_references = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c",
                                      "uid": "u"}]
    pod.spec.node_name = "elsewhere"
    updated = core.replace_namespaced_pod_status("p", namespace, pod)
    assert updated.status.phase == "Running"
    assert updated.metadata.labels == {"changed": "yes"} and updated.spec.node_name is None
    assert updated.metadata.owner_references is None


def test_status_of_other_kinds_changes_status_only(core: client.CoreV1Api,
                                                   namespace: str) -> None:
    core.create_namespaced_service(namespace, {"metadata": {"name": "s"}, "spec": {
        "ports": [{"port": 80}]}})
    updated = core.patch_namespaced_service_status("s", namespace, {
        "metadata": {"labels": {"x": "y"}}, "status": {"conditions": [
            {"type": "T", "status": "True", "reason": "R", "message": "",
             "lastTransitionTime": "2024-01-01T00:00:00Z"}]}}, _content_type=MERGE)
    assert updated.metadata.labels is None and updated.status.conditions[0].type == "T"


def test_main_resource_ignores_status(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, POD)
    updated = core.patch_namespaced_pod("p", namespace, {
        "metadata": {"labels": {"x": "y"}}, "status": {"phase": "Failed"}},
        _content_type=MERGE)
    assert updated.status.phase == "Pending" and updated.metadata.labels["x"] == "y"


def test_status_patch_with_stale_resource_version_conflicts(core: client.CoreV1Api,
                                                            namespace: str) -> None:
    created = core.create_namespaced_pod(namespace, POD)
    core.patch_namespaced_pod("p", namespace, {"metadata": {"labels": {"x": "y"}}},
                              _content_type=MERGE)
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_pod_status("p", namespace, {
            "metadata": {"resourceVersion": created.metadata.resource_version},
            "status": {"phase": "Running"}}, _content_type=MERGE)
    assert err.value.status == 409


def test_custom_resource_status(custom: client.CustomObjectsApi, namespace: str,
                                widget_crd: dict[str, Any]) -> None:
    created = custom.create_namespaced_custom_object(
        "example.org", "v1", namespace, "widgets",
        {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
         "spec": {"topology": "Layer2"}, "status": {"conditions": [
             {"type": "Ready", "status": "True"}]}})
    assert "status" not in created  # dropped on create with a status subresource
    patched = custom.patch_namespaced_custom_object_status(
        "example.org", "v1", namespace, "widgets", "w",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]},
         "spec": {"topology": "Layer3"}})
    assert patched["status"]["conditions"][0]["status"] == "True"
    assert patched["spec"]["topology"] == "Layer2"
    assert patched["metadata"]["generation"] == 1
    spec = custom.patch_namespaced_custom_object("example.org", "v1", namespace, "widgets", "w",
                                                 {"spec": {"topology": "Layer3"},
                                                  "status": {"conditions": []}})
    assert spec["metadata"]["generation"] == 2
    assert spec["status"]["conditions"][0]["type"] == "Ready"


def test_merge_patch_deletes_with_null(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"},
                                                  "data": {"a": "1", "b": "2"}})
    patched = core.patch_namespaced_config_map("c", namespace, {"data": {"a": None, "c": "3"}},
                                               _content_type=MERGE)
    assert patched.data == {"b": "2", "c": "3"}


def test_json_patch_operations(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"},
                                                  "data": {"a": "1"}})
    patched = core.patch_namespaced_config_map("c", namespace, [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "add", "path": "/data/b", "value": "2"},
        {"op": "replace", "path": "/data/a", "value": "9"},
        {"op": "copy", "from": "/data/b", "path": "/data/c"},
        {"op": "move", "from": "/data/c", "path": "/data/d"},
        {"op": "add", "path": "/metadata/labels", "value": {}},
        {"op": "add", "path": "/metadata/labels/k8s.io~1x", "value": "y"},
    ], _content_type=JSON_PATCH)
    assert patched.data == {"a": "9", "b": "2", "d": "2"}
    assert patched.metadata.labels == {"k8s.io/x": "y"}
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("c", namespace, [
            {"op": "test", "path": "/data/a", "value": "1"}], _content_type=JSON_PATCH)
    status = status_of(err.value)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert "test failed" in status["details"]["causes"][0]["message"]


def test_strategic_merge_patch_merges_lists_by_key(core: client.CoreV1Api,
                                                   namespace: str) -> None:
    core.create_namespaced_pod(namespace, POD)
    patched = core.patch_namespaced_pod("p", namespace, {"spec": {"containers": [
        {"name": "a", "env": [{"name": "Y", "value": "2"}], "ports": [{"containerPort": 81}]},
        {"name": "c", "image": "redis"}]}}, _content_type=SMP)
    names = [c.name for c in patched.spec.containers]
    assert names == ["a", "b", "c"]
    first = patched.spec.containers[0]
    assert first.image == "nginx"
    assert [(e.name, e.value) for e in first.env] == [("X", "1"), ("Y", "2")]
    assert [p.container_port for p in first.ports] == [80, 81]


def test_strategic_merge_patch_directives(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_pod(namespace, POD)
    patched = core.patch_namespaced_pod("p", namespace, {
        "metadata": {"labels": {"$patch": "replace", "only": "this"}},
        "spec": {"containers": [{"name": "b", "$patch": "delete"}]}}, _content_type=SMP)
    assert patched.metadata.labels == {"only": "this"}
    assert [c.name for c in patched.spec.containers] == ["a"]


def test_strategic_merge_conditions_by_type(core: client.CoreV1Api, namespace: str) -> None:
    core.create_node({"metadata": {"name": "n1"}, "status": {"conditions": [
        {"type": "Ready", "status": "False"}, {"type": "DiskPressure", "status": "False"}]}})
    patched = core.patch_node_status("n1", {"status": {"conditions": [
        {"type": "Ready", "status": "True"}]}}, _content_type=SMP)
    assert [(c.type, c.status) for c in patched.status.conditions] == [
        ("Ready", "True"), ("DiskPressure", "False")]


def test_strategic_merge_owner_references_and_finalizers(core: client.CoreV1Api,
                                                         namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "c", "finalizers": ["a/one"], "ownerReferences": [ref]}})
    patched = core.patch_namespaced_config_map("c", namespace, {"metadata": {
        "finalizers": ["b/two"],
        "ownerReferences": [{**ref, "blockOwnerDeletion": True}]}}, _content_type=SMP)
    assert patched.metadata.finalizers == ["a/one", "b/two"]
    assert len(patched.metadata.owner_references) == 1
    assert patched.metadata.owner_references[0].block_owner_deletion is True
    removed = core.patch_namespaced_config_map("c", namespace, {"metadata": {
        "$deleteFromPrimitiveList/finalizers": ["a/one"]}}, _content_type=SMP)
    assert removed.metadata.finalizers == ["b/two"]


def test_strategic_merge_is_refused_for_custom_resources(custom: client.CustomObjectsApi,
                                                         namespace: str,
                                                         widget_crd: dict[str, Any]) -> None:
    custom.create_namespaced_custom_object("example.org", "v1", namespace, "widgets", {
        "apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"topology": "Layer2"}})
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object("example.org", "v1", namespace, "widgets", "w",
                                              {"spec": {"mtu": 1400}}, _content_type=SMP)
    assert (err.value.status, status_of(err.value)["reason"]) == (415, "UnsupportedMediaType")
    merged = custom.patch_namespaced_custom_object("example.org", "v1", namespace, "widgets",
                                                   "w", {"spec": {"mtu": 1400}})
    assert merged["spec"] == {"topology": "Layer2", "mtu": 1400, "role": "Secondary"}


def test_server_side_apply_creates_then_merges(core: client.CoreV1Api, namespace: str) -> None:
    created = core.patch_namespaced_config_map(
        "c", namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                         "data": {"a": "1"}},
        field_manager="tester", force=True, _content_type="application/apply-patch+yaml")
    assert created.data == {"a": "1"}
    updated = core.patch_namespaced_config_map(
        "c", namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                         "data": {"b": "2"}},
        field_manager="tester", force=True, _content_type="application/apply-patch+yaml")
    assert updated.data == {"a": "1", "b": "2"}
    core.patch_namespaced_config_map("c", namespace, {"data": {"c": "3"}},
                                     field_manager="controller", _content_type=MERGE)
    entries = {(e.manager, e.operation): e.fields_v1 for e in
               core.read_namespaced_config_map("c", namespace).metadata.managed_fields}
    assert entries == {("tester", "Apply"): {"f:data": {"f:b": {}}},
                       ("controller", "Update"): {"f:data": {"f:c": {}}}}


def test_patch_functions_directly() -> None:
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {
        "a": {"c": 2, "d": 3}}
    assert json_patch({"l": [1, 2]}, [{"op": "add", "path": "/l/-", "value": 3},
                                      {"op": "remove", "path": "/l/0"}]) == {"l": [2, 3]}
    pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}
    ordered = strategic_merge(pod, {"spec": {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
        "containers": [{"name": "a", "image": "z"}]}}, POD_KEYS)
    assert ordered["spec"]["containers"] == [{"name": "b", "image": "y"},
                                             {"name": "a", "image": "z"}]
    retained = strategic_merge({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}}, {
        "spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"],
                              "hostPath": {"path": "/x"}}]}}, POD_KEYS)
    assert retained["spec"]["volumes"] == [{"name": "v", "hostPath": {"path": "/x"}}]



def test_a_patch_without_a_resource_version_is_applied_to_a_concurrent_write(
        core: client.CoreV1Api, namespace: str, kube_apiserver: ServerHandle,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """As kube-apiserver: a patch that names no resourceVersion is applied again to the
    object another write changed while it was being admitted, never a Conflict; a patch that
    names a stale resourceVersion is one."""
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "busy"}})
    admission = kube_apiserver.app.admission
    validate = admission.validate
    interleaved: list[str] = []

    def validate_with_a_write_in_between(*args: Any, **kwargs: Any) -> None:
        if not interleaved:  # another client's write lands between load and commit
            interleaved.append("other")
            core.patch_namespaced_config_map("busy", namespace, {"metadata": {
                "annotations": {"other": "1"}}}, _content_type=MERGE)
        validate(*args, **kwargs)

    monkeypatch.setattr(admission, "validate", validate_with_a_write_in_between)
    core.patch_namespaced_config_map("busy", namespace, {"metadata": {
        "annotations": {"mine": "1"}}}, _content_type=MERGE)
    assert interleaved == ["other"]
    annotations = core.read_namespaced_config_map("busy", namespace).metadata.annotations
    assert annotations == {"other": "1", "mine": "1"}
    with pytest.raises(ApiException) as stale:
        core.patch_namespaced_config_map("busy", namespace, {"metadata": {
            "resourceVersion": "1", "annotations": {"late": "1"}}}, _content_type=MERGE)
    assert stale.value.status == 409
