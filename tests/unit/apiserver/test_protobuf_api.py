"""Protobuf over HTTP, as client-go speaks it: bodies of every built-in kind, replies and
watch streams when Accept prefers it, Status errors, and JSON for custom resources."""

from __future__ import annotations

import http.client
import struct
from typing import Any

from kubernetes import client
from ovnk_local.apiserver import protobuf
from ovnk_local.apiserver import protowire as wire
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import ssl_context_for

from .conftest import RawCall

PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO = {"Accept": f"{PROTOBUF},application/json", "Content-Type": PROTOBUF}
LEASES = "/apis/coordination.k8s.io/v1/namespaces/blue/leases"
WIDGETS = "/apis/example.org/v1/namespaces/blue/widgets"


def lease(name: str, holder: str, rv: str = "") -> dict[str, Any]:
    metadata = {"name": name, **({"resourceVersion": rv} if rv else {})}
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 137,
                     "renewTime": "2026-11-27T10:00:05.123456Z"}}


def test_a_lease_sent_and_read_as_protobuf(raw: RawCall, namespace: str) -> None:
    """The issue's refusal: ovnkube's leader election writes its Lease as protobuf."""
    created = raw("POST", LEASES, protobuf.encode(lease("ovn-kubernetes-master", "node1")),
                  CLIENT_GO)
    assert created.status == 201, created.body
    assert created.headers["Content-Type"] == PROTOBUF
    obj = protobuf.decode(created.body)
    assert obj["spec"]["holderIdentity"] == "node1"
    assert obj["spec"]["renewTime"] == "2026-11-27T10:00:05.123456Z"
    assert obj["metadata"]["uid"] and obj["metadata"]["creationTimestamp"]
    updated = raw("PUT", f"{LEASES}/ovn-kubernetes-master", protobuf.encode(
        lease("ovn-kubernetes-master", "node2", obj["metadata"]["resourceVersion"])), CLIENT_GO)
    assert updated.status == 200
    assert protobuf.decode(updated.body)["spec"]["holderIdentity"] == "node2"
    stale = raw("PUT", f"{LEASES}/ovn-kubernetes-master", protobuf.encode(
        lease("ovn-kubernetes-master", "node3", obj["metadata"]["resourceVersion"])), CLIENT_GO)
    assert stale.status == 409 and stale.headers["Content-Type"] == PROTOBUF
    status = protobuf.decode(stale.body)
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Conflict", 409)
    assert status["message"].startswith(
        'Operation cannot be fulfilled on leases.coordination.k8s.io "ovn-kubernetes-master"')
    as_json = raw("GET", f"{LEASES}/ovn-kubernetes-master").json()
    assert as_json["spec"]["holderIdentity"] == "node2"


def test_lists_gets_and_errors_follow_the_accept_header(raw: RawCall,
                                                        core: client.CoreV1Api,
                                                        namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"},
                                                  "data": {"k": "v"}})
    listed = raw("GET", "/api/v1/namespaces/blue/configmaps", headers=CLIENT_GO)
    assert listed.headers["Content-Type"] == PROTOBUF
    items = protobuf.decode(listed.body)
    assert items["kind"] == "ConfigMapList" and items["metadata"]["resourceVersion"]
    assert [(i["metadata"]["name"], i["data"]) for i in items["items"]] == [("a", {"k": "v"})]
    # JSON first, or no Accept at all: JSON
    for accept in ("application/json, application/vnd.kubernetes.protobuf", "*/*", ""):
        reply = raw("GET", "/api/v1/namespaces/blue/configmaps/a",
                    headers={"Accept": accept})
        assert reply.headers["Content-Type"] == "application/json", accept
    # a lower q loses
    reply = raw("GET", "/api/v1/namespaces/blue/configmaps/a",
                headers={"Accept": f"{PROTOBUF};q=0.5, application/json"})
    assert reply.headers["Content-Type"] == "application/json"
    missing = raw("GET", "/api/v1/namespaces/blue/configmaps/b", headers=CLIENT_GO)
    assert missing.status == 404 and missing.headers["Content-Type"] == PROTOBUF
    assert protobuf.decode(missing.body)["message"] == 'configmaps "b" not found'
    refused = raw("GET", "/api/v1/namespaces/blue/configmaps/a",
                  headers={"Accept": "text/html"})
    assert refused.status == 406
    assert refused.json()["message"] == (
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf")
    # a Table is never protobuf: that clause is skipped
    table = raw("GET", "/api/v1/namespaces/blue/configmaps", headers={
        "Accept": f"{PROTOBUF};as=Table;g=meta.k8s.io;v=v1,application/json"})
    assert table.headers["Content-Type"] == "application/json"
    assert table.json()["kind"] == "ConfigMapList"


def test_protobuf_delete_options(raw: RawCall, core: client.CoreV1Api,
                                 namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    options = protobuf.encode({"apiVersion": "v1", "kind": "DeleteOptions",
                               "preconditions": {"resourceVersion": "1"}})
    refused = raw("DELETE", "/api/v1/namespaces/blue/configmaps/a", options, CLIENT_GO)
    assert refused.status == 409
    assert "Precondition failed: ResourceVersion in precondition: 1" in \
        protobuf.decode(refused.body)["message"]
    options = protobuf.encode({"apiVersion": "v1", "kind": "DeleteOptions",
                               "propagationPolicy": "Foreground"})
    assert raw("DELETE", "/api/v1/namespaces/blue/configmaps/a", options,
               CLIENT_GO).status == 200


def test_bodies_that_are_not_protobuf_are_refused_in_kube_apiserver_s_words(
        raw: RawCall, namespace: str) -> None:
    not_protobuf = raw("POST", LEASES, b'{"kind":"Lease","apiVersion":"coordination.k8s.io'
                       b'/v1"}', CLIENT_GO)
    assert not_protobuf.status == 400
    assert protobuf.decode(not_protobuf.body)["message"] == (
        "the object provided is unrecognized (must be of type Lease): provided data does not "
        "appear to be a protobuf message, expected prefix [107 56 115 0] "
        '({"kind":"Lease","apiVersion":" ...)')
    truncated = raw("POST", LEASES, protobuf.encode(lease("l", "n"))[:-9], CLIENT_GO)
    assert truncated.status == 400
    assert protobuf.decode(truncated.body)["message"] == (
        "the object provided is unrecognized (must be of type Lease): unexpected EOF "
        "(6b3873000a1f0a16636f6f7264696e6174696f6e2e6b38732e696f2f7631 ...)")
    # a sound envelope around a cut message: the kind is known
    type_meta = wire.length_delimited(1, b"coordination.k8s.io/v1") + \
        wire.length_delimited(2, b"Lease")
    message = protobuf.from_json("k8s.io.api.coordination.v1.Lease", lease("l", "n"))[:-3]
    cut = raw("POST", LEASES, protobuf.MAGIC + wire.length_delimited(1, type_meta) +
              wire.length_delimited(2, message), CLIENT_GO)
    assert cut.status == 400
    assert protobuf.decode(cut.body)["message"] == (
        'Lease in version "v1" cannot be handled as a Lease: unexpected EOF')


def test_custom_resources_stay_json(raw: RawCall, namespace: str,
                                    widget_crd: dict[str, Any]) -> None:
    body = {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"topology": "Layer2"}}
    assert raw("POST", WIDGETS, body).status == 201
    reply = raw("GET", f"{WIDGETS}/w", headers=CLIENT_GO)
    assert reply.status == 200 and reply.headers["Content-Type"] == "application/json"
    only = raw("GET", f"{WIDGETS}/w", headers={"Accept": PROTOBUF})
    assert only.status == 406
    assert only.json()["message"] == (
        "only the following media types are accepted: application/json, application/yaml, "
        "application/vnd.kubernetes.protobuf")
    type_meta = wire.length_delimited(1, b"example.org/v1") + \
        wire.length_delimited(2, b"Widget")
    envelope = protobuf.MAGIC + wire.length_delimited(1, type_meta) + \
        wire.length_delimited(2, wire.length_delimited(1, wire.length_delimited(1, b"x")))
    sent = raw("POST", WIDGETS, envelope, CLIENT_GO)
    assert sent.status == 400
    assert sent.json()["message"] == (
        'Widget in version "v1" cannot be handled as a Widget: object '
        "*unstructured.Unstructured does not implement the protobuf marshalling interface "
        "and cannot be encoded to a protobuf message")


def read_frames(kube_apiserver: ServerHandle, path: str,
                accept: str = f"{PROTOBUF}, application/json") -> tuple[str, list[Any]]:
    """Content-Type and every ``(type, object)`` of a protobuf watch that ends by itself."""
    connection = http.client.HTTPSConnection(kube_apiserver.host, kube_apiserver.port,
                                             timeout=30,
                                             context=ssl_context_for(kube_apiserver))
    connection.request("GET", path, headers={"Accept": accept})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    events, pos = [], 0
    while pos < len(data):
        (size,) = struct.unpack(">I", data[pos:pos + 4])
        events.append(protobuf.read_watch_event(data[pos + 4:pos + 4 + size]))
        pos += 4 + size
    return response.getheader("Content-Type") or "", events


def test_watch_streams_length_prefixed_protobuf_events(kube_apiserver: ServerHandle,
                                                       core: client.CoreV1Api,
                                                       namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "v"}})
    core.delete_namespaced_config_map("a", namespace)
    content_type, events = read_frames(
        kube_apiserver, f"/api/v1/namespaces/blue/configmaps?watch=1&resourceVersion={start}"
        "&timeoutSeconds=1&allowWatchBookmarks=true")
    assert content_type == f"{PROTOBUF};stream=watch"
    assert [t for t, _ in events][:3] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[1][1]["data"] == {"k": "v"} and events[1][1]["kind"] == "ConfigMap"
    assert {t for t, _ in events[3:]} <= {"BOOKMARK"}
    expired = read_frames(kube_apiserver, "/api/v1/namespaces/blue/configmaps?watch=1"
                          "&resourceVersion=1&timeoutSeconds=1")[1]
    assert expired == [] or expired[0][0] in ("ADDED", "ERROR")


def test_watch_accepts_no_yaml(raw: RawCall, namespace: str) -> None:
    reply = raw("GET", "/api/v1/namespaces/blue/configmaps?watch=1",
                headers={"Accept": "application/yaml"})
    assert reply.status == 406
    assert reply.json()["message"] == (
        "only the following media types are accepted: application/json;stream=watch, "
        "application/vnd.kubernetes.protobuf;stream=watch")


def test_a_protobuf_service_without_target_port_gets_its_port(raw: RawCall,
                                                               namespace: str) -> None:
    """Go's client writes an unset targetPort as IntOrString 0, which kube-apiserver
    defaults to the port (as it does for an absent one in JSON)."""
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
               "spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}}
    created = raw("POST", "/api/v1/namespaces/blue/services", protobuf.encode(service),
                  CLIENT_GO)
    assert created.status == 201
    [port] = protobuf.decode(created.body)["spec"]["ports"]
    assert (port["port"], port["targetPort"], port["protocol"]) == (80, 80, "TCP")
