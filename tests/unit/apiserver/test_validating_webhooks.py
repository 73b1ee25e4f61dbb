"""The local API server calls ValidatingWebhookConfigurations' webhooks as kube-apiserver does.

Configurations are stored, defaulted and validated in the real server's words; a write made
by an authenticated user is sent, over HTTPS trusting ``caBundle``, to ``ovnk webhook``'s
real server (``ovnk_core.webhook``) with the user's identity; a refusal reaches the client
in the webhook's words; a webhook that is down, slow or untrusted follows its
``failurePolicy``; rules, scopes and selectors pick the requests kube-apiserver would send.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.apiserver import webhook_calls
from ovnk_local.apiserver.authn import AUTHENTICATED
from ovnk_local.apiserver.pki import CertificateAuthority
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.apiserver.table import to_table
from ovnk_local.apiserver.webhook_matching import Attributes, rule_matches, webhook_matches
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.admission.annotations import NODE_PATH, POD_PATH
from ovnk_core.admission.contract import UserInfo
from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION
from ovnk_core.identities import CLUSTER_MANAGER_USER, NODES_GROUP, node_agent_user
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import ApiError
from ovnk_core.kube.resources import (
    CLUSTER_ROLE_BINDINGS,
    NAMESPACES,
    NODES,
    PODS,
    SERVICES,
    VALIDATING_WEBHOOK_CONFIGURATIONS,
)
from ovnk_core.webhook.endpoints import WebhookRules, load_rules
from ovnk_core.webhook.server import WebhookOptions, WebhookServer

pytestmark = pytest.mark.unit

POD_DENIAL = ('admission webhook "ovn-kubernetes-admission-webhook-pod.k8s.io" denied the '
              'request: user "alice" is not allowed to set the following annotations on '
              'pod: "web": [k8s.ovn.org/pod-networks]')
VWC = VALIDATING_WEBHOOK_CONFIGURATIONS


@pytest.fixture(scope="module")
def ca() -> CertificateAuthority:
    return CertificateAuthority.create("webhook-ca")


@pytest.fixture
def cert_dir(tmp_path: Path, ca: CertificateAuthority) -> Path:
    ca.issue_server(["localhost", "127.0.0.1", "ovnkube-webhook.ovn-kubernetes.svc"],
                    "ovnkube-webhook").write(tmp_path / "tls.crt", tmp_path / "tls.key")
    return tmp_path


@pytest.fixture
def webhook(cert_dir: Path) -> Iterator[WebhookServer]:
    with WebhookServer(WebhookOptions(cert_dir, "127.0.0.1", 0), load_rules()) as server:
        yield server


@pytest.fixture
def admin(kube_apiserver: ServerHandle) -> KubeClient:
    api = KubeClient(client_for(kube_apiserver))
    api.create(NAMESPACES, {"metadata": {"name": "blue", "labels": {"team": "blue"}}})
    api.create(NAMESPACES, {"metadata": {"name": "green"}})
    for namespace in ("blue", "green"):
        api.create(PODS, {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {
            "containers": [{"name": "c", "image": "agnhost"}]}}, namespace)
    api.create(NODES, {"metadata": {"name": "ovn-worker"}})
    # alice and the cluster manager may do anything RBAC allows (cluster-admin), without
    # being in system:masters
    api.create(CLUSTER_ROLE_BINDINGS, {
        "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}
                     for user in ("alice", CLUSTER_MANAGER_USER)]})
    return api


def as_user(handle: ServerHandle, user: str, *groups: str) -> KubeClient:
    return KubeClient(client_for(handle, user, (*groups, AUTHENTICATED)))


def configuration(name: str, url: str, ca: CertificateAuthority | None, **hook: Any) -> Any:
    client_config: dict[str, Any] = {"url": url}
    if ca is not None:
        client_config["caBundle"] = base64.b64encode(ca.cert_pem).decode()
    webhook = {"name": f"{name}.example.com", "clientConfig": client_config,
               "admissionReviewVersions": ["v1"], "sideEffects": "None",
               "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                          "apiVersions": ["v1"], "resources": ["pods", "pods/status"]}],
               **hook}
    return {"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration", "metadata": {"name": name},
            "webhooks": [webhook]}


def refusal(call: Any) -> ApiError:
    with pytest.raises(ApiError) as err:
        call()
    return err.value


def forge(api: KubeClient, namespace: str = "blue") -> Any:
    return api.patch(PODS, "web", {"metadata": {"annotations": {
        POD_NETWORKS_ANNOTATION: "{}"}}}, namespace)


# -- the configuration kind ---------------------------------------------------------------------
def test_a_configuration_is_stored_with_kube_apiservers_defaults(
        admin: KubeClient, ca: CertificateAuthority) -> None:
    admin.create(VWC, configuration("pods", "https://127.0.0.1:1/pod", ca))
    hook = admin.get(VWC, "pods")["webhooks"][0]
    assert {key: hook[key] for key in ("failurePolicy", "matchPolicy", "namespaceSelector",
                                       "objectSelector", "timeoutSeconds")} == {
        "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {},
        "objectSelector": {}, "timeoutSeconds": 10}
    assert hook["rules"][0]["scope"] == "*"
    assert hook["clientConfig"]["caBundle"] == base64.b64encode(ca.cert_pem).decode()
    listed = admin.list(VWC)
    assert [item["metadata"]["name"] for item in listed["items"]] == ["pods"]


@pytest.mark.parametrize(("change", "message"), [
    ({"sideEffects": None}, "webhooks[0].sideEffects: Required value: must specify one of "
                            "None, NoneOnDryRun"),
    ({"sideEffects": "Some"}, 'webhooks[0].sideEffects: Unsupported value: "Some": '
                              'supported values: "None", "NoneOnDryRun"'),
    ({"name": "short.com"}, 'webhooks[0].name: Invalid value: "short.com": should be a '
                            "domain with at least three segments separated by dots"),
    ({"clientConfig": {"url": "http://127.0.0.1/pod"}},
     "webhooks[0].clientConfig.url: Invalid value: \"http://127.0.0.1/pod\": 'https' is "
     "the only allowed URL scheme"),
    ({"clientConfig": {"url": "https://a/b", "service": {"name": "s", "namespace": "n"}}},
     "webhooks[0].clientConfig: Required value: exactly one of url or service is required"),
    ({"timeoutSeconds": 31}, "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout "
                             "value must be between 1 and 30 seconds"),
    ({"failurePolicy": "Sometimes"}, 'webhooks[0].failurePolicy: Unsupported value: '
                                     '"Sometimes": supported values: "Fail", "Ignore"'),
    ({"admissionReviewVersions": ["v2"]}, "webhooks[0].admissionReviewVersions: Invalid "
                                          "value: "),
])
def test_an_invalid_configuration_is_refused_in_the_real_words(
        admin: KubeClient, change: dict[str, Any], message: str) -> None:
    body = configuration("bad", "https://127.0.0.1:1/pod", None)
    body["webhooks"][0].update(change)
    body["webhooks"][0] = {k: v for k, v in body["webhooks"][0].items() if v is not None}
    err = refusal(lambda: admin.create(VWC, body))
    assert err.code == 422
    assert message in str(err)


# -- calling ovnk webhook -----------------------------------------------------------------------
def test_the_webhook_refuses_a_forged_annotation_in_its_words(
        kube_apiserver: ServerHandle, admin: KubeClient, webhook: WebhookServer,
        ca: CertificateAuthority) -> None:
    body = configuration("pods", f"{webhook.url}{POD_PATH}", ca)
    body["webhooks"][0]["name"] = "ovn-kubernetes-admission-webhook-pod.k8s.io"
    admin.create(VWC, body)
    alice = as_user(kube_apiserver, "alice")
    before = admin.get(PODS, "web", "blue")
    err = refusal(lambda: forge(alice))
    assert (err.code, err.reason) == (403, "Forbidden")
    assert str(err) == POD_DENIAL
    assert admin.get(PODS, "web", "blue") == before
    # the identity travels in userInfo: the cluster manager may write it, on /status too
    manager = as_user(kube_apiserver, CLUSTER_MANAGER_USER, "system:serviceaccounts")
    manager.patch_status(PODS, "web", {"metadata": {"annotations": {
        POD_NETWORKS_ANNOTATION: "{}"}}}, "blue")
    assert admin.get(PODS, "web", "blue")["metadata"]["annotations"][
        POD_NETWORKS_ANNOTATION] == "{}"


def test_node_identity_checks_through_the_webhook(kube_apiserver: ServerHandle,
                                                  admin: KubeClient, webhook: WebhookServer,
                                                  ca: CertificateAuthority) -> None:
    body = configuration("nodes", f"{webhook.url}{NODE_PATH}", ca)
    body["webhooks"][0]["rules"][0]["resources"] = ["nodes", "nodes/status"]
    admin.create(VWC, body)
    admin.create(NODES, {"metadata": {"name": "ovn-worker2"}})
    agent = as_user(kube_apiserver, node_agent_user("ovn-worker"), NODES_GROUP)
    admin.create(CLUSTER_ROLE_BINDINGS, {
        "metadata": {"name": "nodes-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                      "name": NODES_GROUP}]})
    agent.patch_status(NODES, "ovn-worker", {"metadata": {"annotations": {
        "k8s.ovn.org/host-cidrs": "[]"}}})
    err = refusal(lambda: agent.patch_status(NODES, "ovn-worker2", {"metadata": {
        "annotations": {"k8s.ovn.org/host-cidrs": "[]"}}}))
    assert str(err) == (
        'admission webhook "nodes.example.com" denied the request: ovnkube-node on node: '
        '"ovn-worker" is not allowed to modify nodes "ovn-worker2" annotations')


def test_a_service_reference_is_resolved_to_this_host(kube_apiserver: ServerHandle,
                                                      admin: KubeClient,
                                                      webhook: WebhookServer,
                                                      ca: CertificateAuthority) -> None:
    """``service: ovnkube-webhook.ovn-kubernetes:443`` reaches the webhook through the
    Service's targetPort, and its certificate is checked for ``name.namespace.svc``."""
    admin.create(NAMESPACES, {"metadata": {"name": "ovn-kubernetes"}})
    admin.create(SERVICES, {"metadata": {"name": "ovnkube-webhook"}, "spec": {
        "ports": [{"port": 443, "targetPort": webhook.port}]}}, "ovn-kubernetes")
    body = configuration("pods", "https://unused", ca)
    body["webhooks"][0]["clientConfig"] = {
        "service": {"name": "ovnkube-webhook", "namespace": "ovn-kubernetes",
                    "path": POD_PATH}, "caBundle": base64.b64encode(ca.cert_pem).decode()}
    admin.create(VWC, body)
    assert admin.get(VWC, "pods")["webhooks"][0]["clientConfig"]["service"]["port"] == 443
    err = refusal(lambda: forge(as_user(kube_apiserver, "alice")))
    assert str(err) == POD_DENIAL.replace("ovn-kubernetes-admission-webhook-pod.k8s.io",
                                             "pods.example.com")


# -- failure policy and timeouts ----------------------------------------------------------------
def test_fail_refuses_and_ignore_admits_when_the_webhook_is_down(
        kube_apiserver: ServerHandle, admin: KubeClient, cert_dir: Path,
        ca: CertificateAuthority) -> None:
    with WebhookServer(WebhookOptions(cert_dir, "127.0.0.1", 0), load_rules()) as stopped:
        url = f"{stopped.url}{POD_PATH}"
    admin.create(VWC, configuration("pods", url, ca))
    alice = as_user(kube_apiserver, "alice")
    before = admin.get(PODS, "web", "blue")
    err = refusal(lambda: alice.patch(PODS, "web", {"metadata": {"labels": {"x": "y"}}},
                                      "blue"))
    assert (err.code, err.reason) == (500, "InternalError")
    assert str(err) == (
        'Internal error occurred: failed calling webhook "pods.example.com": failed to call '
        f'webhook: Post "{url}?timeout=10s": dial tcp 127.0.0.1:{url.split(":")[2][:-4]}: '
        "connect: connection refused")
    assert admin.get(PODS, "web", "blue") == before
    current = admin.get(VWC, "pods")
    current["webhooks"][0]["failurePolicy"] = "Ignore"
    admin.update(VWC, current)  # the configuration itself never goes through a webhook
    alice.patch(PODS, "web", {"metadata": {"labels": {"x": "y"}}}, "blue")
    assert admin.get(PODS, "web", "blue")["metadata"]["labels"]["x"] == "y"


def test_a_slow_webhook_times_out_after_timeout_seconds(
        kube_apiserver: ServerHandle, admin: KubeClient, cert_dir: Path,
        ca: CertificateAuthority) -> None:
    def slow(*_args: Any) -> None:
        time.sleep(3)

    rules = WebhookRules()
    rules.register_validating("", "pods", slow, name="slow", path="/slow",
                              subresources=("",), operations=("UPDATE",))
    with WebhookServer(WebhookOptions(cert_dir, "127.0.0.1", 0), rules) as server:
        admin.create(VWC, configuration("slow", f"{server.url}/slow", ca, timeoutSeconds=1))
        alice = as_user(kube_apiserver, "alice")
        started = time.monotonic()
        err = refusal(lambda: alice.patch(PODS, "web", {"metadata": {"labels": {"x": "1"}}},
                                          "blue"))
        assert time.monotonic() - started < 2.5
        assert str(err).endswith(f'Post "{server.url}/slow?timeout=1s": context deadline '
                                    "exceeded")
        current = admin.get(VWC, "slow")
        current["webhooks"][0]["failurePolicy"] = "Ignore"
        admin.update(VWC, current)
        alice.patch(PODS, "web", {"metadata": {"labels": {"x": "2"}}}, "blue")
        assert admin.get(PODS, "web", "blue")["metadata"]["labels"]["x"] == "2"


def test_an_untrusted_webhook_certificate_is_a_failed_call(
        kube_apiserver: ServerHandle, admin: KubeClient, webhook: WebhookServer) -> None:
    other = CertificateAuthority.create("someone-else")
    admin.create(VWC, configuration("pods", f"{webhook.url}{POD_PATH}", other))
    err = refusal(lambda: forge(as_user(kube_apiserver, "alice")))
    assert err.code == 500
    assert "tls: failed to verify certificate: x509: certificate signed by unknown " \
           "authority" in str(err)


# -- which requests are sent --------------------------------------------------------------------
class Recorder:
    """A webhook that admits everything and remembers what it was asked."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []

    def __call__(self, operation: str, new: Any, old: Any, user: UserInfo) -> None:
        meta = (new or old)["metadata"]
        self.seen.append((operation, meta.get("namespace", ""), user.name))


@pytest.fixture
def recorder(cert_dir: Path) -> Iterator[tuple[Recorder, WebhookServer]]:
    record = Recorder()
    rules = WebhookRules()
    for resource in ("pods", "namespaces"):
        rules.register_validating("", resource, record, name="recorder", path="/record",
                                  subresources=("", "status"),
                                  operations=("CREATE", "UPDATE", "DELETE"), with_user=True)
    with WebhookServer(WebhookOptions(cert_dir, "127.0.0.1", 0), rules) as server:
        yield record, server


def test_namespace_and_object_selectors(kube_apiserver: ServerHandle, admin: KubeClient,
                                        recorder: tuple[Recorder, WebhookServer],
                                        ca: CertificateAuthority) -> None:
    record, server = recorder
    admin.create(VWC, configuration(
        "record", f"{server.url}/record", ca,
        namespaceSelector={"matchLabels": {"team": "blue"}},
        objectSelector={"matchExpressions": [{"key": "app", "operator": "In",
                                              "values": ["web"]}]}))
    alice = as_user(kube_apiserver, "alice")
    for namespace in ("blue", "green"):
        alice.patch(PODS, "web", {"metadata": {"annotations": {"a": "1"}}}, namespace)
    alice.create(PODS, {"metadata": {"name": "db", "labels": {"app": "db"}}, "spec": {
        "containers": [{"name": "c", "image": "agnhost"}]}}, "blue")
    assert record.seen == [("UPDATE", "blue", "alice")]
    # the old object's labels count too: removing the label is still seen
    alice.patch(PODS, "web", {"metadata": {"labels": {"app": None}}}, "blue")
    assert record.seen[-1] == ("UPDATE", "blue", "alice")
    assert len(record.seen) == 2


def test_the_servers_own_writes_and_the_configurations_are_not_sent(
        kube_apiserver: ServerHandle, admin: KubeClient,
        recorder: tuple[Recorder, WebhookServer], ca: CertificateAuthority) -> None:
    record, server = recorder
    body = configuration("record", f"{server.url}/record", ca)
    body["webhooks"][0]["rules"] = [{"operations": ["*"], "apiGroups": ["*"],
                                     "apiVersions": ["*"], "resources": ["*/*"]}]
    admin.create(VWC, body)
    admin.patch(VWC, "record", {"metadata": {"labels": {"a": "b"}}})
    assert record.seen == []
    admin.patch(PODS, "web", {"metadata": {"labels": {"a": "b"}}}, "blue")
    assert record.seen == [("UPDATE", "blue", "kubernetes-admin")]


def attrs(resource: str = "pods", subresource: str = "", operation: str = "UPDATE",
          namespace: str = "blue", group: str = "") -> Attributes:
    obj = {"metadata": {"name": "x", "namespace": namespace}}
    return Attributes(group, "v1", resource, subresource, operation, namespace, "x", "Pod",
                      obj, obj, UserInfo("alice"))


@pytest.mark.parametrize(("resources", "subresource", "matches"), [
    (["pods"], "", True), (["pods"], "status", False), (["pods/status"], "status", True),
    (["pods/status"], "", False), (["pods/*"], "status", True), (["pods/*"], "", True),
    (["*"], "", True), (["*"], "status", False), (["*/status"], "status", True),
    (["*/*"], "exec", True), (["nodes"], "", False),
])
def test_resource_entries_match_as_kube_apiservers(resources: list[str], subresource: str,
                                                   matches: bool) -> None:
    rule = {"operations": ["UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": resources, "scope": "*"}
    assert rule_matches(rule, attrs(subresource=subresource)) is matches


def test_operations_groups_versions_and_scope() -> None:
    rule: dict[str, Any] = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                            "resources": ["*"], "scope": "Namespaced"}
    assert rule_matches(rule, attrs()) and not rule_matches(rule, attrs("nodes", namespace=""))
    assert not rule_matches(rule, attrs("namespaces", namespace="blue"))
    rule["scope"] = "Cluster"
    assert rule_matches(rule, attrs("namespaces", namespace="blue"))
    assert not rule_matches(rule, attrs())
    assert not rule_matches({**rule, "scope": "*", "operations": ["CREATE"]}, attrs())
    assert not rule_matches({**rule, "scope": "*", "apiGroups": ["apps"]}, attrs())
    assert not rule_matches({**rule, "scope": "*", "apiVersions": ["v2"]}, attrs())
    hook = {"rules": [{**rule, "scope": "*"}], "namespaceSelector": {
        "matchLabels": {"team": "blue"}}}
    # a cluster-scoped object that is not a namespace always passes the namespace selector
    assert webhook_matches(hook, attrs("nodes", namespace=""), lambda _ns: {})
    assert not webhook_matches(hook, attrs(), lambda _ns: {})
    assert webhook_matches(hook, attrs(), lambda _ns: {"team": "blue"})
    assert not webhook_matches(hook, attrs("validatingwebhookconfigurations", namespace="",
                                           group="admissionregistration.k8s.io"),
                               lambda _ns: {})


def test_kubectl_style_json_roundtrip_of_ca_bundle(admin: KubeClient,
                                                   ca: CertificateAuthority) -> None:
    """``caBundle`` is bytes in Go: not base64 is refused as the real server refuses it."""
    body = configuration("pods", "https://127.0.0.1:1/pod", None)
    body["webhooks"][0]["clientConfig"]["caBundle"] = "not base64!"
    err = refusal(lambda: admin.create(VWC, json.loads(json.dumps(body))))
    assert err.code == 400


def test_kubectl_get_prints_the_number_of_webhooks(kube_apiserver: ServerHandle,
                                                   admin: KubeClient,
                                                   ca: CertificateAuthority) -> None:
    admin.create(VWC, configuration("pods", "https://127.0.0.1:1/pod", ca))
    rt = kube_apiserver.registry.get("admissionregistration.k8s.io", "v1",
                                     "validatingwebhookconfigurations")
    assert rt is not None and rt.short_names == ("vwc",)
    table = to_table(rt, [admin.get(VWC, "pods")], {}, "None")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Webhooks", "Age"]
    assert table["rows"][0]["cells"][:2] == ["pods", 1]


def test_a_ca_bundle_is_loaded_once_not_per_call(ca: CertificateAuthority) -> None:
    """Building a context (with the system's CAs for an empty bundle) costs more than the
    call: one per bundle, however many writes."""
    bundle = base64.b64encode(ca.cert_pem).decode()
    assert webhook_calls._trust(bundle) is webhook_calls._trust(bundle)
    assert webhook_calls._trust("") is webhook_calls._trust(None)
