"""Discovery (plain and aggregated), OpenAPI v3, Table output, version and health endpoints,
and core/events.k8s.io Events sharing storage."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from ovnk_local.apiserver.table import human_duration

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json")


def test_health_and_version(raw: Any) -> None:
    for path in ("/healthz", "/livez", "/readyz", "/readyz/ping"):
        response = raw("GET", path)
        assert (response.status, response.body) == (200, b"ok")
    assert raw("GET", "/version").json()["major"] == "1"


def test_plain_discovery(kube_client: client.ApiClient) -> None:
    core = client.CoreV1Api(kube_client).get_api_resources()
    by_name = {r.name: r for r in core.resources}
    assert by_name["pods"].short_names == ["po"] and by_name["pods"].namespaced
    assert by_name["pods/status"].verbs == ["get", "patch", "update"]
    assert by_name["namespaces"].namespaced is False
    assert "deletecollection" not in by_name["namespaces"].verbs
    groups = {g.name for g in client.ApisApi(kube_client).get_api_versions().groups}
    assert {"discovery.k8s.io", "events.k8s.io", "coordination.k8s.io",
            "apiextensions.k8s.io"} <= groups
    slices = client.DiscoveryV1Api(kube_client).get_api_resources()
    assert [r.kind for r in slices.resources] == ["EndpointSlice"]


def test_aggregated_discovery(raw: Any, widget_crd: dict[str, Any]) -> None:
    response = raw("GET", "/apis", headers={"Accept": AGGREGATED})
    assert response.headers["Content-Type"] == (
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    document = response.json()
    assert document["kind"] == "APIGroupDiscoveryList"
    groups = {item["metadata"]["name"]: item for item in document["items"]}
    widgets = groups["example.org"]["versions"][0]["resources"][0]
    assert widgets["resource"] == "widgets" and widgets["shortNames"] == ["wd"]
    assert widgets["scope"] == "Namespaced"
    assert widgets["subresources"][0]["subresource"] == "status"
    legacy = raw("GET", "/api", headers={"Accept": AGGREGATED}).json()
    resources = {r["resource"] for r in legacy["items"][0]["versions"][0]["resources"]}
    assert {"pods", "nodes", "namespaces", "services", "events", "configmaps"} <= resources


def test_openapi_v3_advertises_field_validation(raw: Any, widget_crd: dict[str, Any]) -> None:
    root = raw("GET", "/openapi/v3").json()["paths"]
    assert {"api/v1", "apis/example.org/v1", "apis/apiextensions.k8s.io/v1"} <= set(root)
    document = raw("GET", root["apis/example.org/v1"]["serverRelativeURL"]).json()
    patch = document["paths"]["/apis/example.org/v1/namespaces/{namespace}/widgets/{name}"][
        "patch"]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "example.org",
                                                        "version": "v1", "kind": "Widget"}
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    schema = document["components"]["schemas"]["org.example.v1.Widget"]
    assert schema["properties"]["spec"]["required"] == ["topology"]
    core = raw("GET", root["api/v1"]["serverRelativeURL"]).json()
    assert "/api/v1/namespaces/{name}" in core["paths"]
    assert raw("GET", "/openapi/v2").status == 404


def test_table_for_pods_and_custom_resources(raw: Any, core: client.CoreV1Api,
                                             custom: client.CustomObjectsApi, namespace: str,
                                             widget_crd: dict[str, Any]) -> None:
    core.create_namespaced_pod(namespace, {"metadata": {"name": "p"}, "spec": {
        "containers": [{"name": "c", "image": "i"}], "nodeName": "n1"}})
    table = raw("GET", f"/api/v1/namespaces/{namespace}/pods",
                headers={"Accept": TABLE}).json()
    assert table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]][:6] == [
        "Name", "Ready", "Status", "Restarts", "Age", "IP"]
    cells = table["rows"][0]["cells"]
    assert cells[:4] == ["p", "0/1", "Pending", "0"] and cells[6] == "n1"
    assert table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    custom.create_namespaced_custom_object("example.org", "v1", namespace, "widgets", {
        "apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"topology": "Layer3", "mtu": 1400}})
    custom.patch_namespaced_custom_object_status("example.org", "v1", namespace, "widgets",
                                                 "w", {"status": {"conditions": [
                                                     {"type": "Ready", "status": "True"}]}})
    table = raw("GET", f"/apis/example.org/v1/namespaces/{namespace}/widgets/w",
                headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Topology", "MTU",
                                                               "Ready"]
    assert table["rows"][0]["cells"] == ["w", "Layer3", 1400, "True"]


def test_plain_json_when_table_not_asked(raw: Any, namespace: str) -> None:
    listing = raw("GET", "/api/v1/namespaces").json()
    assert listing["kind"] == "NamespaceList"


def test_events_share_storage_across_apis(kube_client: client.ApiClient,
                                          namespace: str) -> None:
    events = client.EventsV1Api(kube_client)
    events.create_namespaced_event(namespace, client.EventsV1Event(
        metadata=client.V1ObjectMeta(generate_name="blue."), event_time=datetime.now(UTC),
        reporting_controller="example.org/controller", reporting_instance="node1",
        action="Reconcile", reason="NetworkCreated", type="Normal", note="created",
        regarding=client.V1ObjectReference(api_version="k8s.ovn.org/v1",
                                           kind="UserDefinedNetwork", name="blue",
                                           namespace=namespace)))
    core_events = client.CoreV1Api(kube_client).list_namespaced_event(namespace).items
    assert len(core_events) == 1
    event = core_events[0]
    assert (event.message, event.involved_object.name, event.reporting_component) == (
        "created", "blue", "example.org/controller")
    again = events.list_namespaced_event(namespace).items[0]
    assert (again.note, again.regarding.kind) == ("created", "UserDefinedNetwork")


def test_human_duration() -> None:
    assert [human_duration(s) for s in (5, 119, 150, 600, 3600 * 5 + 60 * 7, 3600 * 30,
                                        86400 * 3 + 3600 * 4, 86400 * 400)] == [
        "5s", "119s", "2m30s", "10m", "5h7m", "30h", "3d4h", "400d"]
