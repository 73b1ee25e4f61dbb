"""Built-in objects as Kubernetes stores and serves them: through the kind's Go type.

Fields without ``omitempty`` are always there, zero ``omitempty`` fields and unknown fields
are not, and a value of the wrong JSON type does not decode (Go's message, 400)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from ovnk_local import pod_status
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.cluster import build_node
from ovnk_local.testing.apiserver_fixtures import ServerFactory, client_for

from .conftest import RawCall

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {}},
       "spec": {"containers": [{"name": "web", "image": "agnhost"}]}}


def _pod_with_kubelet_status(raw: RawCall, namespace: str) -> dict[str, Any]:
    raw("POST", f"/api/v1/namespaces/{namespace}/pods", POD)
    pod = raw("GET", f"/api/v1/namespaces/{namespace}/pods/web").json()
    status = pod_status.build_running_status(pod, ["10.244.0.5"], "172.18.0.2",
                                          "2026-01-02T03:04:05Z")
    answer = raw("PATCH", f"/api/v1/namespaces/{namespace}/pods/web/status",
                 {"status": status}, headers={"Content-Type": "application/merge-patch+json"})
    assert answer.status == 200, answer.body
    result: dict[str, Any] = raw("GET", f"/api/v1/namespaces/{namespace}/pods/web").json()
    return result


def test_a_pod_holds_every_field_its_go_type_always_serializes(
        raw: RawCall, namespace: str, core: client.CoreV1Api) -> None:
    pod = _pod_with_kubelet_status(raw, namespace)
    status = pod["status"]["containerStatuses"][0]
    assert status == {"name": "web", "state": {"running": {"startedAt": "2026-01-02T03:04:05Z"}},
                      "lastState": {}, "ready": True, "restartCount": 0, "image": "agnhost",
                      "imageID": "", "started": True}
    assert {c["type"]: c["lastProbeTime"] for c in pod["status"]["conditions"]} == {
        "PodScheduled": None, "Initialized": None, "ContainersReady": None, "Ready": None}
    assert pod["spec"]["containers"][0]["resources"] == {}
    assert "labels" not in pod["metadata"]  # omitempty and empty
    assert list(pod) == ["kind", "apiVersion", "metadata", "spec", "status"]  # Go's order
    typed = core.read_namespaced_pod("web", namespace).status.container_statuses[0]
    assert (typed.image_id, typed.ready, typed.restart_count) == ("", True, 0)


def test_a_node_holds_its_system_info(kube_client: client.ApiClient, core: client.CoreV1Api) \
        -> None:
    core.create_node(build_node("ovn-worker", 0))
    node = core.read_node("ovn-worker")
    assert node.status.node_info.kubelet_version == ""
    assert node.status.daemon_endpoints.kubelet_endpoint.port == 0


def test_zero_and_unknown_fields_are_dropped_and_reported(raw: RawCall, namespace: str) -> None:
    body = {"metadata": {"name": "settings", "labels": {}, "finalizers": []},
            "data": {"mtu": "1400"}, "colour": "red"}
    answer = raw("POST", f"/api/v1/namespaces/{namespace}/configmaps", body)
    assert answer.status == 201
    assert answer.headers["Warning"] == '299 - "unknown field \\"colour\\""'
    stored = answer.json()
    assert "colour" not in stored and "labels" not in stored["metadata"]
    assert "finalizers" not in stored["metadata"]
    strict = raw("POST", f"/api/v1/namespaces/{namespace}/configmaps?fieldValidation=Strict",
                 {**body, "metadata": {"name": "other"}})
    assert strict.status == 400
    assert strict.json()["message"] == ('ConfigMap in version "v1" cannot be handled as a '
                                        'ConfigMap: strict decoding error: unknown field '
                                        '"colour"')


@pytest.mark.parametrize(("change", "message"), [
    ({"spec": {"containers": [{"name": 5, "image": "agnhost"}]}},
     "json: cannot unmarshal number into Go struct field Container.spec.containers.name of "
     "type string"),
    ({"spec": {"containers": {"name": "web"}}},
     "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type "
     "[]v1.Container"),
    ({"spec": {"containers": [{"name": "web", "image": "a"}],
               "terminationGracePeriodSeconds": "30"}},
     "json: cannot unmarshal string into Go struct field PodSpec.spec."
     "terminationGracePeriodSeconds of type int64"),
    ({"spec": {"containers": [{"name": "web", "image": "a", "ports": [
        {"containerPort": 2 ** 40}]}]}},
     "json: cannot unmarshal number 1099511627776 into Go struct field ContainerPort.spec."
     "containers.ports.containerPort of type int32"),
])
def test_a_value_of_the_wrong_type_does_not_decode(raw: RawCall, namespace: str,
                                                   change: dict[str, Any], message: str) -> None:
    answer = raw("POST", f"/api/v1/namespaces/{namespace}/pods", {**POD, **change})
    assert answer.status == 400
    assert answer.json()["message"] == f'Pod in version "v1" cannot be handled as a Pod: {message}'


def test_secret_data_must_be_base64(raw: RawCall, namespace: str) -> None:
    answer = raw("POST", f"/api/v1/namespaces/{namespace}/secrets",
                 {"metadata": {"name": "s"}, "data": {"key": "not base64!"}})
    assert answer.status == 400
    assert answer.json()["message"] == ('Secret in version "v1" cannot be handled as a Secret: '
                                        "illegal base64 data at input byte 3")


def test_what_an_older_server_stored_is_served_complete(tmp_path: Path,
                                                        kube_apiserver_factory: ServerFactory) \
        -> None:
    """A snapshot written before the server went through the Go types (a pod status without
    ``imageID``, a label map left empty) is served as Kubernetes serves it."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                        "resourceVersion": "5", "labels": {},
                        "creationTimestamp": "2026-01-02T03:04:05Z"},
           "spec": {"containers": [{"name": "web", "image": "agnhost"}]},
           "status": {"phase": "Running", "containerStatuses": [
               {"name": "web", "image": "agnhost", "ready": True, "restartCount": 0,
                "state": {"running": {"startedAt": "2026-01-02T03:04:05Z"}}}]}}
    data = tmp_path / "state.json"
    data.write_text(json.dumps({"resourceVersion": 5, "objects": {"/pods": [pod]}}))
    server: ServerHandle = kube_apiserver_factory(data_file=data)
    served = client.CoreV1Api(client_for(server)).read_namespaced_pod("web", "default")
    assert served.status.container_statuses[0].image_id == ""
    assert served.metadata.labels is None
