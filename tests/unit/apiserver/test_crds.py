"""CRDs: registration, discovery, structural-schema validation, pruning and defaults."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.validation import check_custom_resource


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def widget(object_name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.org/v1", "kind": "Widget",
            "metadata": {"name": object_name}, "spec": spec}


def create(custom: client.CustomObjectsApi, namespace: str, body: dict[str, Any],
           **kwargs: Any) -> Any:
    return custom.create_namespaced_custom_object("example.org", "v1", namespace, "widgets",
                                                  body, **kwargs)


def test_crd_is_established_and_discoverable(kube_client: client.ApiClient,
                                             widget_crd: dict[str, Any]) -> None:
    crd = client.ApiextensionsV1Api(kube_client).read_custom_resource_definition(
        "widgets.example.org")
    assert {c.type: c.status for c in crd.status.conditions} == {
        "NamesAccepted": "True", "Established": "True"}
    assert crd.status.accepted_names.short_names == ["wd"]
    assert crd.status.stored_versions == ["v1"]
    assert "customresourcecleanup.apiextensions.k8s.io" in crd.metadata.finalizers
    resources = client.CustomObjectsApi(kube_client).get_api_resources("example.org", "v1")
    by_name = {r.name: r for r in resources.resources}
    assert by_name["widgets"].short_names == ["wd"] and by_name["widgets"].namespaced
    assert by_name["widgets"].singular_name == "widget"
    assert by_name["widgets/status"].verbs == ["get", "patch", "update"]
    groups = client.ApisApi(kube_client).get_api_versions()
    assert "example.org" in [g.name for g in groups.groups]


def test_schema_violations_are_reported_with_causes(custom: client.CustomObjectsApi,
                                                    namespace: str,
                                                    widget_crd: dict[str, Any]) -> None:
    with pytest.raises(ApiException) as err:
        create(custom, namespace, widget("w", topology="Foo"))
    status = status_of(err.value)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'Widget.example.org "w" is invalid: spec.topology: Unsupported value: "Foo": '
        'supported values: "Layer2", "Layer3"')
    assert status["details"] == {"name": "w", "group": "example.org", "kind": "Widget",
                                 "causes": [{"reason": "FieldValueNotSupported",
                                             "message": 'Unsupported value: "Foo": supported '
                                                        'values: "Layer2", "Layer3"',
                                             "field": "spec.topology"}]}


@pytest.mark.parametrize(("spec", "expected"), [
    ({}, 'spec.topology: Required value'),
    ({"topology": "Layer2", "mtu": "big"},
     'spec.mtu: Invalid value: "string": spec.mtu in body must be of type integer: "string"'),
    ({"topology": "Layer2", "mtu": 100},
     "spec.mtu: Invalid value: 100: spec.mtu in body should be greater than or equal to 576"),
    ({"topology": "Layer2", "mtu": 70000},
     "spec.mtu: Invalid value: 70000: spec.mtu in body should be less than or equal to 65536"),
    ({"topology": "Layer2", "name": ""},
     '[spec.name: Invalid value: "": spec.name in body should be at least 1 chars long, '
     "spec.name: Invalid value: \"\": spec.name in body should match '^[a-z]+$']"),
    ({"topology": "Layer2", "name": "abcdefghij"},
     "spec.name: Too long: may not be more than 8 bytes"),
    ({"topology": "Layer2", "name": "ABC"},
     "spec.name: Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'"),
    ({"topology": "Layer2", "subnets": []},
     "spec.subnets: Invalid value: 0: spec.subnets in body should have at least 1 items"),
    ({"topology": "Layer2", "subnets": ["10.0.0.0/8", "10.1.0.0/16", "10.2.0.0/16"]},
     "spec.subnets: Too many: 3: must have at most 2 items"),
    ({"topology": "Layer2", "subnets": ["10.0.0.0"]},
     'spec.subnets[0]: Invalid value: "10.0.0.0": spec.subnets[0] in body must be of type '
     'cidr: "10.0.0.0"'),
    ({"topology": "Layer2", "labels": {"a": 1}},
     'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: '
     '"integer"'),
])
def test_schema_keyword_messages(custom: client.CustomObjectsApi, namespace: str,
                                 widget_crd: dict[str, Any], spec: dict[str, Any],
                                 expected: str) -> None:
    with pytest.raises(ApiException) as err:
        create(custom, namespace, widget("w", **spec))
    assert status_of(err.value)["message"] == f'Widget.example.org "w" is invalid: {expected}'


def test_unknown_fields_pruned_warned_or_refused(custom: client.CustomObjectsApi,
                                                 namespace: str,
                                                 widget_crd: dict[str, Any]) -> None:
    body = widget("w", topology="Layer2", colour="red", extra={"any": {"thing": 1}})
    body["metadata"]["bogus"] = 1
    with pytest.raises(ApiException) as err:
        create(custom, namespace, copy.deepcopy(body), field_validation="Strict")
    assert err.value.status == 400
    assert status_of(err.value)["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
        'unknown field "metadata.bogus", unknown field "spec.colour"')
    _, code, headers = custom.create_namespaced_custom_object_with_http_info(
        "example.org", "v1", namespace, "widgets", copy.deepcopy(body))
    assert code == 201
    assert 'unknown field \\"spec.colour\\"' in headers["Warning"]
    stored = custom.get_namespaced_custom_object("example.org", "v1", namespace, "widgets", "w")
    assert "colour" not in stored["spec"] and "bogus" not in stored["metadata"]
    assert stored["spec"]["extra"] == {"any": {"thing": 1}}


def test_defaults_and_nulls(custom: client.CustomObjectsApi, namespace: str,
                            widget_crd: dict[str, Any]) -> None:
    created = create(custom, namespace, widget("w", topology="Layer2", mtu=None, note=None))
    assert created["spec"] == {"topology": "Layer2", "role": "Secondary", "note": None}


def test_invalid_crd_is_rejected(kube_client: client.ApiClient) -> None:
    api = client.ApiextensionsV1Api(kube_client)
    with pytest.raises(ApiException) as err:
        api.create_custom_resource_definition({
            "metadata": {"name": "things.example.org"},
            "spec": {"group": "example.org", "scope": "Everywhere",
                     "names": {"kind": "Gizmo", "plural": "gizmos"},
                     "versions": [{"name": "v1", "served": True, "storage": True}]}})
    status = status_of(err.value)
    assert status["code"] == 422
    assert {c["field"] for c in status["details"]["causes"]} == {
        "spec.scope", "metadata.name", "spec.versions[0].schema.openAPIV3Schema"}


def test_cluster_scoped_and_multi_version(kube_client: client.ApiClient) -> None:
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}
    client.ApiextensionsV1Api(kube_client).create_custom_resource_definition({
        "metadata": {"name": "gizmos.example.org"},
        "spec": {"group": "example.org", "scope": "Cluster",
                 "names": {"kind": "Gizmo", "plural": "gizmos", "shortNames": ["gz"]},
                 "versions": [
                     {"name": "v1beta1", "served": True, "storage": False, "schema": schema},
                     {"name": "v1", "served": True, "storage": True, "schema": schema}]}})
    custom = client.CustomObjectsApi(kube_client)
    custom.create_cluster_custom_object("example.org", "v1", "gizmos", {
        "apiVersion": "example.org/v1", "kind": "Gizmo", "metadata": {"name": "g"},
        "spec": {"anything": ["goes"]}})
    old = custom.get_cluster_custom_object("example.org", "v1beta1", "gizmos", "g")
    assert old["apiVersion"] == "example.org/v1beta1"
    assert old["spec"] == {"anything": ["goes"]}
    group = client.ApisApi(kube_client).get_api_versions()
    versions = next(g for g in group.groups if g.name == "example.org")
    assert versions.preferred_version.version == "v1"


def test_validation_module_directly() -> None:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer", "default": 3},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "ip": {"type": "string", "format": "ipv4"},
        "uniq": {"type": "array", "x-kubernetes-list-type": "set",
                 "items": {"type": "string"}},
        "choice": {"x-kubernetes-int-or-string": True}}}}}
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "x"},
           "spec": {"mode": "c", "ip": "1.2.3", "uniq": ["a", "a"], "choice": True, "z": 1}}
    errors, unknown = check_custom_resource(obj, schema)
    assert unknown == ["spec.z"]
    assert obj["spec"]["size"] == 3
    assert [e.field for e in errors] == ["spec.mode", "spec.ip", "spec.uniq[1]", "spec.choice"]


def test_counts_and_values_are_printed_as_kube_apiserver_1_32_does() -> None:
    """minItems/minProperties print the count found; value checks the value; types the type."""
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "ipam": {"type": "object", "minProperties": 1,
                 "properties": {"mode": {"type": "string"}}},
        "subnets": {"type": "array", "minItems": 2, "items": {"type": "string"}},
        "name": {"type": "string", "minLength": 3},
        "mtu": {"type": "integer"}}}}}
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "x"},
           "spec": {"ipam": {}, "subnets": ["10.0.0.0/8"], "name": "ab", "mtu": "big"}}
    errors, _ = check_custom_resource(obj, schema)
    assert sorted(map(str, errors)) == [
        'spec.ipam: Invalid value: 0: spec.ipam in body should have at least 1 properties',
        'spec.mtu: Invalid value: "string": spec.mtu in body must be of type integer: "string"',
        'spec.name: Invalid value: "ab": spec.name in body should be at least 3 chars long',
        "spec.subnets: Invalid value: 1: spec.subnets in body should have at least 2 items"]


def test_crd_update_changes_the_schema(kube_client: client.ApiClient,
                                       custom: client.CustomObjectsApi, namespace: str,
                                       widget_crd: dict[str, Any]) -> None:
    api = client.ApiextensionsV1Api(kube_client)
    crd = api.read_custom_resource_definition("widgets.example.org")
    body = kube_client.sanitize_for_serialization(crd)
    body["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"]["topology"]["enum"].append("Localnet")
    api.replace_custom_resource_definition("widgets.example.org", body)
    created = create(custom, namespace, widget("w", topology="Localnet"))
    assert created["spec"]["topology"] == "Localnet"
    body["metadata"].pop("resourceVersion")
    body["spec"]["scope"] = "Cluster"
    with pytest.raises(ApiException) as err:
        api.replace_custom_resource_definition("widgets.example.org", body)
    assert "spec.scope: Invalid value: \"Cluster\": field is immutable" in status_of(
        err.value)["message"]
