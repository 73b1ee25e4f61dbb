"""The built-in kinds clients expect besides the core ones: NetworkPolicies, Endpoints,
Secrets, Deployments and DaemonSets (discovery, OpenAPI, defaults, validation messages,
tables, the default roles, persistence)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import ServerFactory, client_for

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import ApiError
from ovnk_core.kube.resources import NAMESPACES, Resource
from ovnk_core.testing.waiting import wait_until

from .conftest import RawCall

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
AGGREGATED = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
              "application/json")
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
DAEMONSETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True)
ENDPOINTS = Resource("", "v1", "endpoints", "Endpoints", True)
SECRETS = Resource("", "v1", "secrets", "Secret", True)
TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "agnhost:2.53"}]}}


def workload(name: str = "web", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE, **spec}}


@pytest.fixture
def api(kube_client: client.ApiClient, namespace: str) -> KubeClient:
    return KubeClient(kube_client)


def invalid(call: Any) -> str:
    with pytest.raises(ApiError) as err:
        call()
    assert err.value.code == 422, err.value.status
    message: str = err.value.status["message"]
    return message


def test_discovery_names_them_as_kubernetes_does(kube_client: client.ApiClient,
                                                 raw: RawCall) -> None:
    core = {r.name: r for r in client.CoreV1Api(kube_client).get_api_resources().resources}
    assert core["endpoints"].short_names == ["ep"] and core["endpoints"].singular_name == \
        "endpoints"
    assert core["secrets"].short_names is None and len(core["secrets"].verbs) == 8
    apps = {r.name: r for r in client.AppsV1Api(kube_client).get_api_resources().resources}
    assert (apps["deployments"].short_names, apps["deployments"].categories) == (
        ["deploy"], ["all"])
    assert apps["daemonsets"].short_names == ["ds"]
    assert apps["deployments/status"].verbs == ["get", "patch", "update"]
    networking = client.NetworkingV1Api(kube_client).get_api_resources().resources
    assert [(r.name, r.kind, r.short_names) for r in networking] == [
        ("networkpolicies", "NetworkPolicy", ["netpol"])]
    aggregated = raw("GET", "/apis", headers={"Accept": AGGREGATED}).json()
    groups = {item["metadata"]["name"]: item for item in aggregated["items"]}
    assert {"apps", "networking.k8s.io"} <= set(groups)
    paths = raw("GET", "/openapi/v3").json()["paths"]
    assert {"apis/apps/v1", "apis/networking.k8s.io/v1"} <= set(paths)
    document = raw("GET", "/openapi/v3/apis/apps/v1").json()
    patch = document["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Deployment"


def test_deployments_and_daemonsets_are_checked_as_kube_apiserver_checks_them(
        api: KubeClient, namespace: str) -> None:
    assert invalid(lambda: api.create(DEPLOYMENTS, {"metadata": {"name": "a"}, "spec": {
        "template": TEMPLATE}}, namespace)) == (
        'Deployment.apps "a" is invalid: spec.selector: Required value')
    assert invalid(lambda: api.create(DEPLOYMENTS, workload(
        selector={"matchLabels": {"app": "db"}}), namespace)) == (
        'Deployment.apps "web" is invalid: spec.template.metadata.labels: Invalid value: '
        '{"app":"web"}: `selector` does not match template `labels`')
    never = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}
    assert invalid(lambda: api.create(DEPLOYMENTS, workload(template=never), namespace)) == (
        'Deployment.apps "web" is invalid: spec.template.spec.restartPolicy: Unsupported '
        'value: "Never": supported values: "Always"')
    assert invalid(lambda: api.create(DEPLOYMENTS, workload(replicas=-1), namespace)) == (
        'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater '
        "than or equal to 0")
    no_image = {**TEMPLATE, "spec": {"containers": [{"name": "web"}]}}
    assert invalid(lambda: api.create(DAEMONSETS, workload("ds", template=no_image),
                                      namespace)) == (
        'DaemonSet.apps "ds" is invalid: spec.template.spec.containers[0].image: Required '
        "value")
    assert invalid(lambda: api.create(DAEMONSETS, workload("ds", updateStrategy={
        "type": "Sometimes"}), namespace)) == (
        'DaemonSet.apps "ds" is invalid: spec.updateStrategy.type: Unsupported value: '
        '"Sometimes": supported values: "OnDelete", "RollingUpdate"')
    created = api.create(DEPLOYMENTS, {**workload(), "status": {"replicas": 9}}, namespace)
    assert created["status"] == {} and created["spec"]["progressDeadlineSeconds"] == 600
    created["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "a"}}
    assert invalid(lambda: api.update(DEPLOYMENTS, created)) == (
        'Deployment.apps "web" is invalid: [spec.template.metadata.labels: Invalid value: '
        '{"app":"web"}: `selector` does not match template `labels`, spec.selector: Invalid '
        'value: {"matchLabels":{"app":"web","tier":"a"}}: field is immutable]')
    status = api.patch_status(DEPLOYMENTS, "web", {"status": {"readyReplicas": 1,
                                                             "replicas": 1}}, namespace)
    assert status["status"] == {"replicas": 1, "readyReplicas": 1}


def test_network_policies_are_defaulted_and_checked(api: KubeClient, namespace: str) -> None:
    policy = api.create(POLICIES, {"metadata": {"name": "p"}, "spec": {
        "podSelector": {}, "egress": [{"ports": [{"port": "http"}]}]}}, namespace)
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    assert policy["spec"]["egress"][0]["ports"][0] == {"protocol": "TCP", "port": "http"}
    message = invalid(lambda: api.create(POLICIES, {"metadata": {"name": "q"}, "spec": {
        "podSelector": {}, "policyTypes": ["Sideways"], "ingress": [{
            "ports": [{"port": 0, "protocol": "ICMP"}],
            "from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]},
                      "podSelector": {}}, {}]}]}}, namespace))
    assert message == (
        'NetworkPolicy.networking.k8s.io "q" is invalid: ['
        'spec.ingress[0].ports[0].protocol: Unsupported value: "ICMP": supported values: '
        '"TCP", "UDP", "SCTP", '
        "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, "
        "inclusive, "
        'spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "192.168.0.0/16": must be '
        "a strict subset of `cidr`, "
        "spec.ingress[0].from[0]: Forbidden: may not specify both ipBlock and another peer, "
        "spec.ingress[0].from[1]: Required value: must specify a peer, "
        'spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", '
        '"Egress"]')


def test_endpoints_and_secrets_are_checked(api: KubeClient, namespace: str) -> None:
    endpoints = api.create(ENDPOINTS, {"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": "10.244.0.5"}], "ports": [{"port": 8080}]}]}, namespace)
    assert endpoints["subsets"][0]["ports"] == [{"port": 8080, "protocol": "TCP"}]
    assert invalid(lambda: api.create(ENDPOINTS, {"metadata": {"name": "bad"}, "subsets": [
        {"addresses": [{"ip": "127.0.0.1"}, {"ip": "10.0.0.256"}]}]}, namespace)) == (
        'Endpoints "bad" is invalid: [subsets[0].addresses[0].ip: Invalid value: '
        '"127.0.0.1": may not be in the loopback range (127.0.0.0/8, ::1/128), '
        'subsets[0].addresses[1].ip: Invalid value: "10.0.0.256": must be a valid IP address, '
        "(e.g. 10.9.8.7 or 2001:db8::ffff)]")
    assert invalid(lambda: api.create(SECRETS, {"metadata": {"name": "tls"},
                                                "type": "kubernetes.io/tls",
                                                "stringData": {"bad key": "x"}},
                                      namespace)).startswith(
        'Secret "tls" is invalid: [data[bad key]: Invalid value: "bad key": a valid config key '
        "must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
        "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+'), "
        "data[tls.crt]: Required value, data[tls.key]: Required value]")
    secret = api.create(SECRETS, {"metadata": {"name": "s"}, "immutable": True,
                                  "data": {"a": "YQ=="}, "stringData": {"b": "b"}}, namespace)
    assert (secret["data"], secret["type"]) == ({"a": "YQ==", "b": "Yg=="}, "Opaque")
    secret["data"] = {"a": "Yg=="}
    secret["type"] = "example.org/other"
    assert invalid(lambda: api.update(SECRETS, secret)) == (
        'Secret "s" is invalid: [type: Invalid value: "example.org/other": field is '
        "immutable, data: Forbidden: field is immutable when `immutable` is set]")


def test_kubectl_tables(raw: RawCall, api: KubeClient, namespace: str) -> None:
    api.create(DEPLOYMENTS, workload(), namespace)
    api.create(POLICIES, {"metadata": {"name": "p"}, "spec": {
        "podSelector": {"matchLabels": {"app": "web"}}}}, namespace)
    api.create(SECRETS, {"metadata": {"name": "s"}, "stringData": {"a": "b"}}, namespace)
    api.create(ENDPOINTS, {"metadata": {"name": "web"}, "subsets": [
        {"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 5)],
         "ports": [{"port": 80}]}]}, namespace)

    def table(plural: str, group: str = "") -> tuple[list[str], list[Any]]:
        prefix = f"/apis/{group}/v1" if group else "/api/v1"
        body = raw("GET", f"{prefix}/namespaces/{namespace}/{plural}",
                   headers={"Accept": TABLE}).json()
        return [c["name"] for c in body["columnDefinitions"]], body["rows"][0]["cells"]

    columns, cells = table("deployments", "apps")
    assert columns == ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers",
                       "Images", "Selector"]
    assert cells[:4] + cells[5:] == ["web", "0/1", 0, 0, "web", "agnhost:2.53", "app=web"]
    assert table("networkpolicies", "networking.k8s.io")[1][:2] == ["p", "app=web"]
    assert table("secrets")[1][:3] == ["s", "Opaque", 1]
    assert table("endpoints")[1][:2] == [
        "web", "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 1 more..."]


def test_default_roles_cover_them(kube_apiserver: ServerHandle, api: KubeClient,
                                  namespace: str) -> None:
    """``edit`` writes workloads, policies and secrets but not endpoints (CVE-2021-25740);
    ``view`` reads workloads and policies but never secrets."""
    rbac = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True)
    for role in ("edit", "view"):
        api.create(rbac, {"metadata": {"name": role}, "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "name": role}]}, namespace)
    editor = KubeClient(client_for(kube_apiserver, "edit"))
    viewer = KubeClient(client_for(kube_apiserver, "view"))

    def can(user: KubeClient, call: Any) -> bool:
        try:
            call(user)
        except ApiError as exc:
            assert exc.code == 403
            return False
        return True

    wait_until(lambda: can(editor, lambda u: u.create(DEPLOYMENTS, workload(), namespace)))
    assert can(editor, lambda u: u.create(POLICIES, {"metadata": {"name": "p"},
                                                     "spec": {"podSelector": {}}}, namespace))
    assert can(editor, lambda u: u.create(SECRETS, {"metadata": {"name": "s"}}, namespace))
    assert not can(editor, lambda u: u.create(ENDPOINTS, {"metadata": {"name": "e"}},
                                              namespace))
    assert can(viewer, lambda u: u.list(DEPLOYMENTS, namespace))
    assert can(viewer, lambda u: u.list(POLICIES, namespace))
    assert not can(viewer, lambda u: u.list(SECRETS, namespace))


def test_they_are_kept_across_restarts(tmp_path: Path,
                                       kube_apiserver_factory: ServerFactory) -> None:
    data = tmp_path / "state.json"
    server = kube_apiserver_factory(data_file=data)
    api = KubeClient(client_for(server))
    api.create(NAMESPACES, {"metadata": {"name": "blue"}})
    api.create(DEPLOYMENTS, workload(), "blue")
    api.create(POLICIES, {"metadata": {"name": "p"}, "spec": {"podSelector": {}}}, "blue")
    server.stop()
    again = KubeClient(client_for(kube_apiserver_factory(data_file=data)))
    assert again.get(DEPLOYMENTS, "web", "blue")["spec"]["replicas"] == 1
    assert again.get(POLICIES, "p", "blue")["spec"]["policyTypes"] == ["Ingress"]
