"""Deletion: finalizers, ownerReference garbage collection, namespace and CRD cascades."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

MERGE = "application/merge-patch+json"


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def exists(core: client.CoreV1Api, name: str, namespace: str) -> bool:
    try:
        core.read_namespaced_config_map(name, namespace)
        return True
    except ApiException as exc:
        assert exc.status == 404
        return False


def owner_ref(obj: Any, block: bool = False) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": obj.metadata.name,
            "uid": obj.metadata.uid, "blockOwnerDeletion": block}


def test_finalizer_keeps_object_until_removed(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "a", "finalizers": ["example.org/keep"]}})
    deleted = core.delete_namespaced_config_map("a", namespace)
    assert deleted["metadata"]["deletionTimestamp"]
    current = core.read_namespaced_config_map("a", namespace)
    assert current.metadata.deletion_grace_period_seconds == 0
    assert current.metadata.generation == 2
    updated = core.patch_namespaced_config_map("a", namespace, {"data": {"still": "ok"}},
                                               _content_type=MERGE)
    assert updated.data == {"still": "ok"}
    with pytest.raises(ApiException) as err:
        core.patch_namespaced_config_map("a", namespace, {"metadata": {
            "finalizers": ["example.org/keep", "example.org/new"]}}, _content_type=MERGE)
    assert status_of(err.value)["message"] == (
        'ConfigMap "a" is invalid: metadata.finalizers: Forbidden: no new finalizers can be '
        'added if the object is being deleted, found new finalizers []string{"example.org/new"}')
    core.patch_namespaced_config_map("a", namespace, {"metadata": {"finalizers": None}},
                                     _content_type=MERGE)
    assert not exists(core, "a", namespace)


def test_background_gc_deletes_dependents(core: client.CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    other = core.create_namespaced_config_map(namespace, {"metadata": {"name": "other"}})
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "dep", "ownerReferences": [owner_ref(owner)]}})
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "shared", "ownerReferences": [owner_ref(owner), owner_ref(other)]}})
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "grandchild", "ownerReferences": [owner_ref(core.read_namespaced_config_map(
            "dep", namespace))]}})
    core.delete_namespaced_config_map("owner", namespace)
    assert not exists(core, "dep", namespace) and not exists(core, "grandchild", namespace)
    shared = core.read_namespaced_config_map("shared", namespace)
    assert [r.name for r in shared.metadata.owner_references] == ["other"]


def test_dependent_created_with_missing_owner_is_collected(core: client.CoreV1Api,
                                                           namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "orphaned", "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                 "name": "gone", "uid": "no-such-uid"}]}})
    assert not exists(core, "orphaned", namespace)
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "foreign", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                                "name": "rs", "uid": "unknown-kind"}]}})
    assert exists(core, "foreign", namespace)


def test_orphan_policy_keeps_dependents(core: client.CoreV1Api, namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "dep", "ownerReferences": [owner_ref(owner)]}})
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Orphan")
    assert not exists(core, "owner", namespace)
    assert core.read_namespaced_config_map("dep", namespace).metadata.owner_references in (
        None, [])


def test_foreground_waits_for_blocking_dependents(core: client.CoreV1Api,
                                                  namespace: str) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "dep", "finalizers": ["example.org/hold"],
        "ownerReferences": [owner_ref(owner, block=True)]}})
    deleted = core.delete_namespaced_config_map("owner", namespace,
                                                propagation_policy="Foreground")
    assert "foregroundDeletion" in deleted["metadata"]["finalizers"]
    assert core.read_namespaced_config_map("dep", namespace).metadata.deletion_timestamp
    assert exists(core, "owner", namespace)
    core.patch_namespaced_config_map("dep", namespace, {"metadata": {"finalizers": []}},
                                     _content_type=MERGE)
    assert not exists(core, "dep", namespace) and not exists(core, "owner", namespace)


def test_namespace_deletion_cascades(core: client.CoreV1Api, custom: client.CustomObjectsApi,
                                     namespace: str, widget_crd: dict[str, Any]) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "plain"}})
    core.create_namespaced_config_map(namespace, {"metadata": {
        "name": "held", "finalizers": ["example.org/hold"]}})
    custom.create_namespaced_custom_object("example.org", "v1", namespace, "widgets", {
        "apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"topology": "Layer2"}})
    ns = core.delete_namespace(namespace)
    assert ns["status"]["phase"] == "Terminating"
    current = core.read_namespace(namespace)
    assert current.status.phase == "Terminating" and current.metadata.deletion_timestamp
    assert current.spec.finalizers == ["kubernetes"]
    reasons = {c.type: c.message for c in current.status.conditions}
    assert "NamespaceContentRemaining" in reasons
    assert "example.org/hold" in reasons["NamespaceFinalizersRemaining"]
    assert [c.metadata.name for c in core.list_namespaced_config_map(namespace).items] == [
        "held"]
    assert custom.list_namespaced_custom_object("example.org", "v1", namespace,
                                                "widgets")["items"] == []
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "late"}})
    status = status_of(err.value)
    assert (status["code"], status["reason"]) == (403, "Forbidden")
    assert status["message"] == (
        f'configmaps "late" is forbidden: unable to create new content in namespace '
        f"{namespace} because it is being terminated")
    assert status["details"]["causes"][0]["reason"] == "NamespaceTerminating"
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}},
                                     _content_type=MERGE)
    with pytest.raises(ApiException) as err:
        core.read_namespace(namespace)
    assert err.value.status == 404


def test_crd_deletion_removes_instances_and_kind(kube_client: client.ApiClient,
                                                 custom: client.CustomObjectsApi,
                                                 namespace: str,
                                                 widget_crd: dict[str, Any]) -> None:
    custom.create_namespaced_custom_object("example.org", "v1", namespace, "widgets", {
        "apiVersion": "example.org/v1", "kind": "Widget", "metadata": {
            "name": "w", "finalizers": ["example.org/hold"]}, "spec": {"topology": "Layer2"}})
    ext = client.ApiextensionsV1Api(kube_client)
    ext.delete_custom_resource_definition("widgets.example.org")
    crd = ext.read_custom_resource_definition("widgets.example.org")
    assert any(c.type == "Terminating" for c in crd.status.conditions)
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object("example.org", "v1", namespace, "widgets", {
            "apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "x"},
            "spec": {"topology": "Layer2"}})
    assert err.value.status == 405
    custom.patch_namespaced_custom_object("example.org", "v1", namespace, "widgets", "w",
                                          {"metadata": {"finalizers": None}})
    with pytest.raises(ApiException) as err:
        ext.read_custom_resource_definition("widgets.example.org")
    assert err.value.status == 404
    with pytest.raises(ApiException) as err:
        custom.list_namespaced_custom_object("example.org", "v1", namespace, "widgets")
    assert err.value.status == 404


def test_namespace_waits_for_extra_spec_finalizers(core: client.CoreV1Api, raw: Any) -> None:
    created = core.create_namespace({"metadata": {"name": "held"},
                                     "spec": {"finalizers": ["example.org/net"]}})
    assert created.spec.finalizers == ["example.org/net", "kubernetes"]
    core.delete_namespace("held")
    current = core.read_namespace("held")
    assert current.status.phase == "Terminating"
    assert current.spec.finalizers == ["example.org/net"]
    body = core.api_client.sanitize_for_serialization(current)
    body["spec"]["finalizers"] = []
    response = raw("PUT", "/api/v1/namespaces/held/finalize", body)
    assert response.status == 200
    with pytest.raises(ApiException) as err:
        core.read_namespace("held")
    assert err.value.status == 404
