"""The API server's front door: TLS, 401s, RBAC decisions and 403 wording, impersonation,
reviews, service-account tokens and escalation checks, against a running server."""

from __future__ import annotations

import dataclasses
import ssl
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.apiserver.security import SecurityOptions
from ovnk_local.apiserver.server import ServerHandle, ServerOptions
from ovnk_local.testing.apiserver_fixtures import ServerFactory, client_for, ssl_context_for

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import ApiError
from ovnk_core.kube.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    NAMESPACES,
    PODS,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
)
from ovnk_core.testing.waiting import wait_until

from .conftest import RawCall

pytestmark = pytest.mark.unit

UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def as_user(server: ServerHandle, user: str, groups: tuple[str, ...] = ()) -> KubeClient:
    return KubeClient(client_for(server, user, groups))


def status_of(call: Any) -> tuple[int, dict[str, Any]]:
    with pytest.raises(ApiError) as err:
        call()
    return err.value.code, err.value.status


def grant(admin: KubeClient, namespace: str, name: str, rules: list[dict[str, Any]],
          user: str) -> None:
    admin.create(ROLES, {"metadata": {"name": name, "namespace": namespace}, "rules": rules},
                 namespace)
    admin.create(ROLE_BINDINGS, {
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [{"kind": "User", "name": user}]}, namespace)


@pytest.fixture
def admin(kube_apiserver: ServerHandle) -> KubeClient:
    client = KubeClient(client_for(kube_apiserver))
    client.create(NAMESPACES, {"metadata": {"name": "blue"}})
    return client


def test_no_credentials_is_401_except_health(raw: RawCall, kube_apiserver: ServerHandle) -> None:
    anonymous = ssl_context_for(kube_apiserver, None)
    for path in ("/api/v1/pods", "/api", "/version", "/openapi/v3"):
        reply = raw("GET", path, context=anonymous)
        assert reply.status == 401 and reply.json() == UNAUTHORIZED, path
    assert raw("GET", "/healthz", context=anonymous).status == 200
    assert raw("GET", "/readyz", context=anonymous).body == b"ok"
    bad = raw("GET", "/api/v1/pods", headers={"Authorization": "Bearer nope"},
              context=anonymous)
    assert bad.status == 401 and bad.json() == UNAUTHORIZED
    basic = raw("GET", "/api/v1/pods", headers={"Authorization": "Basic YTpi"},
                context=anonymous)
    assert basic.status == 401


def test_plain_http_and_untrusted_certificates_are_refused(kube_apiserver: ServerHandle,
                                                           tmp_path: Path) -> None:
    import http.client

    plain = http.client.HTTPConnection(kube_apiserver.host, kube_apiserver.port, timeout=5)
    with pytest.raises((OSError, http.client.HTTPException)):
        plain.request("GET", "/healthz")
        plain.getresponse()
    # a client certificate from another CA does not authenticate anyone
    other = SecurityOptions.in_directory(tmp_path / "other")
    context = ssl.create_default_context(cafile=str(kube_apiserver.security.options
                                                    .client_ca_file))
    pair = kube_apiserver.security.certificate_authority().issue_client("x")
    from ovnk_local.apiserver.pki import CertificateAuthority

    forged = CertificateAuthority.load(other.client_ca_file.parent).issue_client(
        "kubernetes-admin", ("system:masters",))
    forged.write(tmp_path / "f.crt", tmp_path / "f.key")
    context.load_cert_chain(tmp_path / "f.crt", tmp_path / "f.key")
    assert pair.cert_pem != forged.cert_pem
    connection = http.client.HTTPSConnection(kube_apiserver.host, kube_apiserver.port,
                                             timeout=5, context=context)
    with pytest.raises((OSError, ssl.SSLError, http.client.HTTPException)):
        connection.request("GET", "/api/v1/pods")
        response = connection.getresponse()
        assert response.status == 401  # never reached with a rejected certificate


def test_forbidden_messages_are_worded_as_kube_apiserver(admin: KubeClient,
                                                         kube_apiserver: ServerHandle,
                                                         raw: RawCall) -> None:
    alice = as_user(kube_apiserver, "alice", ("devs",))
    code, body = status_of(lambda: alice.list(PODS, namespace="blue"))
    assert code == 403 and body["reason"] == "Forbidden"
    assert body["message"] == ('pods is forbidden: User "alice" cannot list resource "pods" '
                               'in API group "" in the namespace "blue"')
    assert body["details"] == {"kind": "pods"}
    code, body = status_of(lambda: alice.get(PODS, "web", "blue"))
    assert body["message"] == ('pods "web" is forbidden: User "alice" cannot get resource '
                               '"pods" in API group "" in the namespace "blue"')
    code, body = status_of(lambda: alice.list(NAMESPACES))
    assert body["message"] == ('namespaces is forbidden: User "alice" cannot list resource '
                               '"namespaces" in API group "" at the cluster scope')
    code, body = status_of(lambda: alice.list(CLUSTER_ROLES))
    assert body["message"].startswith('clusterroles.rbac.authorization.k8s.io is forbidden: '
                                      'User "alice" cannot list resource "clusterroles" in '
                                      'API group "rbac.authorization.k8s.io"')
    reply = raw("GET", "/metrics", context=ssl_context_for(kube_apiserver, "alice"))
    assert reply.status == 403
    assert reply.json()["message"] == 'forbidden: User "alice" cannot get path "/metrics"'
    # discovery is open to every authenticated user
    assert raw("GET", "/api/v1", context=ssl_context_for(kube_apiserver, "alice")).status == 200


def test_role_bindings_grant_only_inside_their_namespace(admin: KubeClient,
                                                         kube_apiserver: ServerHandle) -> None:
    admin.create(NAMESPACES, {"metadata": {"name": "green"}})
    grant(admin, "blue", "cm-reader", [{"apiGroups": [""], "resources": ["configmaps"],
                                        "verbs": ["get", "list"]}], "alice")
    alice = as_user(kube_apiserver, "alice")
    assert alice.list(CONFIGMAPS, namespace="blue")["items"] == []
    assert status_of(lambda: alice.list(CONFIGMAPS, namespace="green"))[0] == 403
    assert status_of(lambda: alice.list(CONFIGMAPS))[0] == 403  # all namespaces
    # list does not imply watch, get does not imply create
    assert status_of(lambda: list(alice.watch(CONFIGMAPS, "blue", timeout_seconds=1)))[0] == 403
    assert status_of(lambda: alice.create(CONFIGMAPS, {"metadata": {"name": "x"}},
                                          "blue"))[0] == 403


def test_resource_names_subresources_and_wildcards(admin: KubeClient,
                                                   kube_apiserver: ServerHandle) -> None:
    admin.create(CONFIGMAPS, {"metadata": {"name": "one"}}, "blue")
    admin.create(CONFIGMAPS, {"metadata": {"name": "two"}}, "blue")
    grant(admin, "blue", "only-one", [
        {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"],
         "verbs": ["get", "list"]},
        {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]}], "bob")
    bob = as_user(kube_apiserver, "bob")
    assert bob.get(CONFIGMAPS, "one", "blue")["metadata"]["name"] == "one"
    assert status_of(lambda: bob.get(CONFIGMAPS, "two", "blue"))[0] == 403
    # resourceNames never match a request without a name (list)
    assert status_of(lambda: bob.list(CONFIGMAPS, namespace="blue"))[0] == 403
    admin.create(PODS, {"metadata": {"name": "web"},
                        "spec": {"containers": [{"name": "c", "image": "i"}]}}, "blue")
    status = bob._json("GET", PODS.path("blue", "web", "status"))
    assert status["metadata"]["name"] == "web"
    assert status_of(lambda: bob.get(PODS, "web", "blue"))[0] == 403


def test_self_reviews_answer_can_i(admin: KubeClient, kube_apiserver: ServerHandle) -> None:
    grant(admin, "blue", "pod-reader", [{"apiGroups": [""], "resources": ["pods"],
                                         "verbs": ["get", "list"]}], "carol")
    carol = as_user(kube_apiserver, "carol", ("team",))

    def can(verb: str, resource: str, namespace: str) -> dict[str, Any]:
        return carol._json("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                           body={"apiVersion": "authorization.k8s.io/v1",
                                 "kind": "SelfSubjectAccessReview",
                                 "spec": {"resourceAttributes": {
                                     "verb": verb, "resource": resource,
                                     "namespace": namespace}}})["status"]

    assert can("list", "pods", "blue") == {
        "allowed": True, "reason": 'RBAC: allowed by RoleBinding "pod-reader/blue" of Role '
                                   '"pod-reader" to User "carol"'}
    assert can("delete", "pods", "blue") == {"allowed": False}
    assert can("list", "pods", "default") == {"allowed": False}
    rules = carol._json("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
                        body={"spec": {"namespace": "blue"}})["status"]
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in \
        rules["resourceRules"]
    assert rules["incomplete"] is False
    assert any("/healthz" in r["nonResourceURLs"] for r in rules["nonResourceRules"])
    who = carol._json("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body={})
    assert who["status"]["userInfo"] == {"username": "carol",
                                         "groups": ["team", "system:authenticated"]}


def test_impersonation_needs_the_impersonate_verb(admin: KubeClient,
                                                  kube_apiserver: ServerHandle,
                                                  raw: RawCall) -> None:
    grant(admin, "blue", "cm-reader", [{"apiGroups": [""], "resources": ["configmaps"],
                                        "verbs": ["list"]}], "dave")
    path = "/api/v1/namespaces/blue/configmaps"
    as_dave = {"Impersonate-User": "dave"}
    assert raw("GET", path, headers=as_dave).status == 200  # the admin may impersonate
    assert raw("GET", "/api/v1/namespaces/default/configmaps", headers=as_dave).status == 403
    alice = ssl_context_for(kube_apiserver, "alice")
    reply = raw("GET", path, headers=as_dave, context=alice)
    assert reply.status == 403
    assert reply.json()["message"] == ('users "dave" is forbidden: User "alice" cannot '
                                       'impersonate resource "users" in API group "" at the '
                                       'cluster scope')
    who = raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body={},
              headers={"Impersonate-User": "erin", "Impersonate-Group": "ops"})
    assert who.json()["status"]["userInfo"] == {
        "username": "erin", "groups": ["ops", "system:authenticated"]}
    group_only = raw("GET", path, headers={"Impersonate-Group": "ops"})
    assert group_only.status == 400


def test_service_account_tokens(admin: KubeClient, kube_apiserver: ServerHandle,
                                raw: RawCall) -> None:
    admin.create(SERVICE_ACCOUNTS, {"metadata": {"name": "robot"}}, "blue")
    grant(admin, "blue", "robot", [{"apiGroups": [""], "resources": ["configmaps"],
                                    "verbs": ["list"]}], "system:serviceaccount:blue:robot")

    def token(seconds: int | None = None) -> dict[str, Any]:
        spec = {} if seconds is None else {"expirationSeconds": seconds}
        return admin.create_subresource(SERVICE_ACCOUNTS, "robot", "token", {"spec": spec},
                                        "blue")

    issued = token()
    assert issued["kind"] == "TokenRequest" and issued["spec"]["expirationSeconds"] == 3600
    bearer = {"Authorization": f"Bearer {issued['status']['token']}"}
    anonymous = ssl_context_for(kube_apiserver, None)
    assert raw("GET", "/api/v1/namespaces/blue/configmaps", headers=bearer,
               context=anonymous).status == 200
    assert raw("GET", "/api/v1/namespaces/default/configmaps", headers=bearer,
               context=anonymous).json()["message"].startswith(
        'configmaps is forbidden: User "system:serviceaccount:blue:robot" cannot list')
    who = raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body={},
              headers=bearer, context=anonymous).json()["status"]["userInfo"]
    assert who["username"] == "system:serviceaccount:blue:robot"
    assert who["groups"] == ["system:serviceaccounts", "system:serviceaccounts:blue",
                             "system:authenticated"]
    code, body = status_of(lambda: token(60))
    assert code == 422 and "may not specify a duration less than 10 minutes" in body["message"]
    # a tampered token, or the token of a deleted account, authenticates nobody
    tampered = issued["status"]["token"][:-4] + "AAAA"
    assert raw("GET", "/api/v1/namespaces/blue/configmaps", context=anonymous,
               headers={"Authorization": f"Bearer {tampered}"}).status == 401
    admin.delete(SERVICE_ACCOUNTS, "robot", "blue")
    assert raw("GET", "/api/v1/namespaces/blue/configmaps", headers=bearer,
               context=anonymous).status == 401


def test_static_token_file(kube_apiserver_factory: ServerFactory, cluster_pki: SecurityOptions,
                           tmp_path: Path, raw: RawCall) -> None:
    tokens = tmp_path / "tokens.csv"
    tokens.write_text('secret-1,frank,1001,"ops,devs"\nbroken-line\n')
    server = kube_apiserver_factory(ServerOptions(security=dataclasses.replace(
        cluster_pki, token_auth_file=tokens)))
    import http.client

    def whoami(token: str) -> tuple[int, Any]:
        connection = http.client.HTTPSConnection(
            server.host, server.port, timeout=10, context=ssl_context_for(server, None))
        connection.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                           body=b"{}", headers={"Authorization": f"Bearer {token}",
                                                "Content-Type": "application/json"})
        response = connection.getresponse()
        import json
        return response.status, json.loads(response.read())

    code, body = whoami("secret-1")
    assert code == 201
    assert body["status"]["userInfo"] == {"username": "frank", "uid": "1001",
                                          "groups": ["ops", "devs", "system:authenticated"]}
    assert whoami("broken-line")[0] == 401
    tokens.write_text("secret-2,gina,1002\n")  # read again when it changes
    assert whoami("secret-1")[0] == 401
    assert whoami("secret-2")[1]["status"]["userInfo"]["username"] == "gina"


def test_nobody_grants_what_they_do_not_hold(admin: KubeClient,
                                             kube_apiserver: ServerHandle) -> None:
    grant(admin, "blue", "rbac-admin", [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"],
         "verbs": ["create", "get"]},
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}], "henry")
    henry = as_user(kube_apiserver, "henry")
    # what henry holds he may hand out
    henry.create(ROLES, {"metadata": {"name": "cm-get"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}, "blue")
    code, body = status_of(lambda: henry.create(ROLES, {"metadata": {"name": "exec"}, "rules": [
        {"apiGroups": [""], "resources": ["pods/exec"], "verbs": ["create"]}]}, "blue"))
    assert code == 403
    assert body["message"] == (
        'roles.rbac.authorization.k8s.io "exec" is forbidden: user "henry" (groups='
        '["system:authenticated"]) is attempting to grant RBAC permissions not currently '
        'held:\n{APIGroups:[""], Resources:["pods/exec"], Verbs:["create"]}')
    # binding cluster-admin inside the namespace is an escalation too
    code, body = status_of(lambda: henry.create(ROLE_BINDINGS, {
        "metadata": {"name": "grab"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "cluster-admin"},
        "subjects": [{"kind": "User", "name": "henry"}]}, "blue"))
    assert code == 403 and "is attempting to grant RBAC permissions" in body["message"]
    # with the bind verb on that role it is allowed, as in Kubernetes
    grant(admin, "blue", "may-bind", [{"apiGroups": ["rbac.authorization.k8s.io"],
                                       "resources": ["clusterroles"], "verbs": ["bind"],
                                       "resourceNames": ["view"]}], "henry")
    henry.create(ROLE_BINDINGS, {
        "metadata": {"name": "viewers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "view"},
        "subjects": [{"kind": "User", "name": "ivy"}]}, "blue")


def test_role_refs_are_validated_and_immutable(admin: KubeClient) -> None:
    code, body = status_of(lambda: admin.create(CLUSTER_ROLE_BINDINGS, {
        "metadata": {"name": "x"}, "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}))
    assert code == 422
    assert 'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"' in \
        body["message"]
    assert "subjects[0].namespace: Required value" in body["message"]
    binding = admin.create(ROLE_BINDINGS, {
        "metadata": {"name": "b"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "User", "name": "u"}]}, "blue")
    binding["roleRef"]["name"] = "edit"
    code, body = status_of(lambda: admin.update(ROLE_BINDINGS, binding))
    assert code == 422 and "roleRef: Invalid value" in body["message"] and \
        "cannot change roleRef" in body["message"]


def test_bootstrap_policy_is_served_and_restored(kube_apiserver_factory: ServerFactory,
                                                 tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    server = kube_apiserver_factory(data_file=data)
    admin = KubeClient(client_for(server))
    names = {r["metadata"]["name"] for r in admin.list(CLUSTER_ROLES)["items"]}
    assert {"cluster-admin", "system:discovery", "system:basic-user", "admin", "edit",
            "view"} <= names
    base = admin.get(CLUSTER_ROLES, "system:aggregate-to-view")
    base["rules"] = []
    admin.update(CLUSTER_ROLES, base)
    # the aggregation controller rewrites view's rules meanwhile: wait for it before the
    # label edit, or the edit meets its write (409 Conflict)
    wait_until(lambda: not admin.get(CLUSTER_ROLES, "view").get("rules"))
    view = admin.get(CLUSTER_ROLES, "view")  # as an older release stored it: no labels
    view["metadata"]["labels"] = {}
    admin.update(CLUSTER_ROLES, view)
    wait_until(lambda: not admin.get(CLUSTER_ROLES, "view").get("rules"))
    server.stop()
    again = KubeClient(client_for(kube_apiserver_factory(data_file=data)))
    assert again.get(CLUSTER_ROLES, "system:aggregate-to-view")["rules"] != []
    assert again.get(CLUSTER_ROLES, "view")["metadata"]["labels"][
        "rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    pods_read = {"apiGroups": [""], "resources": ["configmaps", "endpoints", "events",
                                                  "persistentvolumeclaims", "pods", "pods/log",
                                                  "pods/status", "replicationcontrollers",
                                                  "serviceaccounts", "services",
                                                  "services/status"],
                 "verbs": ["get", "list", "watch"]}
    wait_until(lambda: pods_read in (again.get(CLUSTER_ROLES, "edit").get("rules") or []))


def test_cluster_roles_aggregate_labelled_roles(admin: KubeClient) -> None:
    """admin/edit/view hold what labelled ClusterRoles add, as kube-controller-manager's
    aggregation controller keeps them; view feeds edit, edit feeds admin."""
    view = admin.get(CLUSTER_ROLES, "view")
    assert {"apiGroups": [""], "resources": ["configmaps", "endpoints", "events",
                                             "persistentvolumeclaims", "pods", "pods/log",
                                             "pods/status", "replicationcontrollers",
                                             "serviceaccounts", "services", "services/status"],
            "verbs": ["get", "list", "watch"]} in view["rules"]
    widget_rule = {"apiGroups": ["example.org"], "resources": ["widgets"],
                   "verbs": ["get", "list"]}
    admin.create(CLUSTER_ROLES, {
        "metadata": {"name": "widget-viewer",
                     "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [widget_rule]})

    def holds(name: str) -> bool:
        return widget_rule in (admin.get(CLUSTER_ROLES, name).get("rules") or [])

    wait_until(lambda: holds("view") and holds("edit") and holds("admin"))
    admin.delete(CLUSTER_ROLES, "widget-viewer")
    wait_until(lambda: not holds("view") and not holds("edit") and not holds("admin"))
