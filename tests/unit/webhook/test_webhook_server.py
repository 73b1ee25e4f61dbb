"""``ovnk webhook``: AdmissionReviews over HTTPS answered by the annotation rules (allowed,
denied in the rules' words), and every malformed or hostile request answered without the
server going down."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.apiserver.pki import CertificateAuthority

from ovnk_core.admission.annotations import NODE_PATH, POD_PATH
from ovnk_core.annotations.node_id import NODE_ID_ANNOTATION
from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION
from ovnk_core.identities import CLUSTER_MANAGER_USER, NODES_GROUP, node_agent_user
from ovnk_core.webhook import server as webhook_server
from ovnk_core.webhook.endpoints import WebhookRules, load_rules
from ovnk_core.webhook.review import MAX_REQUEST_BYTES, BadReview, parse_request
from ovnk_core.webhook.server import WebhookOptions, WebhookServer

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.create("webhook-test-ca")


@pytest.fixture
def cert_dir(tmp_path: Path, ca: CertificateAuthority) -> Path:
    ca.issue_server(["localhost", "127.0.0.1"], "ovnkube-webhook").write(
        tmp_path / "tls.crt", tmp_path / "tls.key")
    return tmp_path


@pytest.fixture
def webhook(cert_dir: Path) -> Iterator[WebhookServer]:
    with WebhookServer(WebhookOptions(cert_dir, "127.0.0.1", 0), load_rules()) as server:
        yield server


def connection(server: WebhookServer, ca: CertificateAuthority,
               timeout: float = 10.0) -> http.client.HTTPSConnection:
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    return http.client.HTTPSConnection("127.0.0.1", server.port, context=context,
                                       timeout=timeout)


def post(server: WebhookServer, ca: CertificateAuthority, path: str, body: bytes | Any,
         content_type: str = "application/json") -> tuple[int, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    conn = connection(server, ca)
    conn.request("POST", path, data, {"Content-Type": content_type})
    response = conn.getresponse()
    raw = response.read()
    conn.close()
    return response.status, json.loads(raw) if raw.startswith(b"{") else raw


def review(resource: str, operation: str, new: Any, old: Any, user: str,
           groups: tuple[str, ...] = (), subresource: str = "", uid: str = "u-1") -> Any:
    request: dict[str, Any] = {
        "uid": uid, "kind": {"group": "", "version": "v1", "kind": resource.title()[:-1]},
        "resource": {"group": "", "version": "v1", "resource": resource},
        "operation": operation, "name": (new or old)["metadata"]["name"],
        "userInfo": {"username": user, "groups": list(groups)},
        "object": new, "oldObject": old, "dryRun": False}
    if subresource:
        request["subResource"] = subresource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": request}


def pod(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "blue", "annotations": annotations or {}},
            "spec": {"containers": [{"name": "c", "image": "agnhost"}]}}


def node(name: str = "ovn-worker", annotations: dict[str, str] | None = None) -> Any:
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "annotations": annotations or {}}}


# -- answers ------------------------------------------------------------------------------------
def test_the_cluster_manager_may_write_pod_networks(webhook: WebhookServer,
                                                    ca: CertificateAuthority) -> None:
    code, answer = post(webhook, ca, POD_PATH, review(
        "pods", "UPDATE", pod({POD_NETWORKS_ANNOTATION: "{}"}), pod(), CLUSTER_MANAGER_USER,
        subresource="status"))
    assert code == 200
    assert answer == {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                      "response": {"uid": "u-1", "allowed": True}}


def test_anyone_else_is_denied_in_the_rules_words(webhook: WebhookServer,
                                                  ca: CertificateAuthority) -> None:
    code, answer = post(webhook, ca, POD_PATH, review(
        "pods", "CREATE", pod({POD_NETWORKS_ANNOTATION: "{}"}), None, "alice", uid="u-2"))
    assert code == 200
    assert answer["response"] == {
        "uid": "u-2", "allowed": False,
        "status": {"metadata": {}, "status": "Failure", "code": 403, "reason": "Forbidden",
                   "message": 'user "alice" is not allowed to set the following annotations '
                              'on pod: "web": [k8s.ovn.org/pod-networks]'}}


def test_node_identity_comes_from_the_reviews_user_info(webhook: WebhookServer,
                                                        ca: CertificateAuthority) -> None:
    """``system:ovn-node:<node>`` may write its own node's facts, not another node's, and
    not the annotations the cluster manager allocates."""
    worker = node_agent_user("ovn-worker")
    own = node(annotations={"k8s.ovn.org/host-cidrs": '["172.18.0.2/16"]'})
    code, answer = post(webhook, ca, NODE_PATH, review(
        "nodes", "UPDATE", own, node(), worker, (NODES_GROUP,), "status"))
    assert (code, answer["response"]["allowed"]) == (200, True)
    other = node("ovn-worker2", {"k8s.ovn.org/host-cidrs": "[]"})
    _, answer = post(webhook, ca, NODE_PATH, review(
        "nodes", "UPDATE", other, node("ovn-worker2"), worker, (NODES_GROUP,), "status"))
    assert answer["response"]["status"]["message"] == (
        'ovnkube-node on node: "ovn-worker" is not allowed to modify nodes "ovn-worker2" '
        "annotations")
    _, answer = post(webhook, ca, NODE_PATH, review(
        "nodes", "UPDATE", node(annotations={NODE_ID_ANNOTATION: "7"}), node(), worker,
        (NODES_GROUP,), "status"))
    assert answer["response"]["status"]["message"] == (
        'ovnkube-node on node: "ovn-worker" is not allowed to set the following annotations: '
        f"[{NODE_ID_ANNOTATION}]")


def test_requests_the_rules_do_not_cover_are_allowed(webhook: WebhookServer,
                                                     ca: CertificateAuthority) -> None:
    for body in (review("pods", "DELETE", None, pod({POD_NETWORKS_ANNOTATION: "{}"}), "alice"),
                 review("services", "CREATE", pod({POD_NETWORKS_ANNOTATION: "{}"}), None,
                        "alice")):
        code, answer = post(webhook, ca, POD_PATH, body)
        assert (code, answer["response"]["allowed"]) == (200, True)


def test_a_hook_that_fails_is_a_refusal_not_a_crash(cert_dir: Path,
                                                    ca: CertificateAuthority) -> None:
    def broken(*_args: Any) -> None:
        raise KeyError("boom")

    rules = WebhookRules()
    rules.register_validating("", "pods", broken, name="broken.example.com", path="/pod")
    with WebhookServer(WebhookOptions(cert_dir, "127.0.0.1", 0), rules) as server:
        code, answer = post(server, ca, "/pod", review("pods", "CREATE", pod(), None, "a"))
        assert code == 200
        assert answer["response"]["status"]["code"] == 500
        assert "internal error in broken.example.com" in answer["response"]["status"]["message"]
        # still serving
        assert post(server, ca, "/pod", review("pods", "CREATE", pod(), None, "a"))[0] == 200


# -- malformed and hostile requests -------------------------------------------------------------
@pytest.mark.parametrize(("body", "says"), [
    (b"not json", "couldn't decode the body as JSON"),
    (b"[" * 100000, "nested deeper than"),
    ({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview", "request": {}},
     "expected apiVersion 'admission.k8s.io/v1'"),
    ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
     "the AdmissionReview has no request"),
    ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "resource": {"version": "v1", "resource": "pods"}, "operation": "CREATE"}},
     "request.uid must be a non-empty string"),
    ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-9", "resource": {"version": "v1", "resource": "pods"},
        "operation": "PATCH"}}, "request.operation 'PATCH' is not one of"),
    ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-9", "resource": {"version": "v1", "resource": "pods"},
        "operation": "CREATE", "object": "x"}}, "request.object must be an object or null"),
    ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-9", "resource": {"version": "v1", "resource": "pods"},
        "operation": "CREATE", "userInfo": {"username": "a", "groups": "g"}}},
     "groups a list of strings"),
])
def test_a_malformed_review_is_a_400_that_says_why(webhook: WebhookServer,
                                                   ca: CertificateAuthority, body: Any,
                                                   says: str) -> None:
    code, answer = post(webhook, ca, POD_PATH, body)
    assert code == 400
    assert answer["kind"] == "AdmissionReview"
    assert answer["response"]["allowed"] is False
    assert answer["response"]["status"]["code"] == 400
    assert says in answer["response"]["status"]["message"]
    if isinstance(body, dict) and body.get("request", {}).get("uid"):
        assert answer["response"]["uid"] == "u-9"


def test_parse_request_refuses_what_is_not_a_review() -> None:
    with pytest.raises(BadReview, match="the body is not a JSON object"):
        parse_request([1])


def test_wrong_content_type_path_method_and_size(webhook: WebhookServer,
                                                 ca: CertificateAuthority) -> None:
    body = review("pods", "CREATE", pod(), None, "a")
    code, answer = post(webhook, ca, POD_PATH, body, content_type="text/plain")
    assert code == 415 and "expected application/json" in answer["response"]["status"][
        "message"]
    assert post(webhook, ca, "/nowhere", body)[0] == 404
    conn = connection(webhook, ca)
    conn.request("PUT", POD_PATH, b"{}")
    assert conn.getresponse().status == 405
    conn.close()
    # a declared size over the limit is refused before a byte of it is read
    conn = connection(webhook, ca)
    conn.putrequest("POST", POD_PATH)
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(MAX_REQUEST_BYTES + 1))
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413
    assert "request entity is too large" in json.loads(response.read())["response"][
        "status"]["message"]
    conn.close()
    conn = connection(webhook, ca)
    conn.request("GET", "/readyz")
    assert conn.getresponse().read() == b"ok"
    conn.close()


def test_a_stalled_client_times_out_and_blocks_no_one(webhook: WebhookServer,
                                                      ca: CertificateAuthority,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(webhook_server, "READ_TIMEOUT", 0.5)
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    # one client that never completes its TLS handshake, one that stops mid-body
    silent = socket.create_connection(("127.0.0.1", webhook.port))
    stalled = context.wrap_socket(socket.create_connection(("127.0.0.1", webhook.port)),
                                  server_hostname="127.0.0.1")
    stalled.sendall(b"POST /pod HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 1000\r\n\r\n{\"apiVersion\"")
    try:
        started = time.monotonic()
        code, _ = post(webhook, ca, POD_PATH, review("pods", "CREATE", pod(), None, "a"))
        assert code == 200 and time.monotonic() - started < 5
        stalled.settimeout(10)
        assert stalled.recv(100) == b""  # the server gave up on it
    finally:
        silent.close()
        stalled.close()


def test_a_renewed_certificate_is_served_without_a_restart(
        webhook: WebhookServer, cert_dir: Path, ca: CertificateAuthority) -> None:
    other = CertificateAuthority.create("renewed-ca")
    time.sleep(0.01)  # a later mtime than the first files'
    other.issue_server(["127.0.0.1"], "ovnkube-webhook").write(
        cert_dir / "tls.crt", cert_dir / "tls.key")
    with pytest.raises(ssl.SSLCertVerificationError):
        post(webhook, ca, POD_PATH, review("pods", "CREATE", pod(), None, "a"))
    code, _ = post(webhook, other, POD_PATH, review("pods", "CREATE", pod(), None, "a"))
    assert code == 200


def test_a_mutating_hook_is_refused_at_registration() -> None:
    with pytest.raises(ValueError, match="validating hooks only"):
        WebhookRules().register_mutating("", "pods", lambda *_: None, name="m")
    with pytest.raises(ValueError, match="needs a path"):
        WebhookRules().register_validating("", "pods", lambda *_: None, name="v")
