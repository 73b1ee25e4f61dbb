"""The local API server allocates ``healthCheckNodePort`` as kube-apiserver does."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.unit


def lb(name: str, policy: str = "Local", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"type": "LoadBalancer", "externalTrafficPolicy": policy,
                     "ports": [{"port": 80}], **spec}}


def message(exc: ApiException) -> str:
    return str(json.loads(exc.body)["message"])


def test_an_etp_local_load_balancer_gets_a_health_check_node_port_of_its_own(
        core: client.CoreV1Api, namespace: str) -> None:
    web = core.create_namespaced_service(namespace, lb("web"))
    port = web.spec.health_check_node_port
    assert 30000 <= port <= 32767 and port != web.spec.ports[0].node_port
    # kept across an update that leaves it out
    replaced = core.replace_namespaced_service("web", namespace, lb("web"))
    assert replaced.spec.health_check_node_port == port
    # no other service gets it, as a NodePort or a health-check port
    other = core.create_namespaced_service(namespace, lb("other"))
    assert other.spec.health_check_node_port not in (port, web.spec.ports[0].node_port)
    for body in (lb("taken", healthCheckNodePort=port),
                 {"metadata": {"name": "taken"}, "spec": {
                     "type": "NodePort", "ports": [{"port": 80, "nodePort": port}]}}):
        with pytest.raises(ApiException) as err:
            core.create_namespaced_service(namespace, body)
        assert "provided port is already allocated" in message(err.value)
    # the one asked for is reserved
    asked = core.create_namespaced_service(namespace, lb("asked", healthCheckNodePort=32000))
    assert asked.spec.health_check_node_port == 32000


def test_the_health_check_node_port_goes_with_the_local_policy(
        core: client.CoreV1Api, namespace: str) -> None:
    web = core.create_namespaced_service(namespace, lb("web"))
    port = web.spec.health_check_node_port
    cluster = core.patch_namespaced_service("web", namespace, {
        "spec": {"externalTrafficPolicy": "Cluster"}})
    assert cluster.spec.health_check_node_port is None
    # released: another service may take it
    taken = core.create_namespaced_service(namespace, {"metadata": {"name": "next"}, "spec": {
        "type": "NodePort", "ports": [{"port": 80, "nodePort": port}]}})
    assert taken.spec.ports[0].node_port == port
    # back to Local: a new one
    local = core.patch_namespaced_service("web", namespace, {
        "spec": {"externalTrafficPolicy": "Local"}})
    assert local.spec.health_check_node_port not in (None, port)


def test_a_health_check_node_port_is_refused_where_it_does_not_belong(
        core: client.CoreV1Api, namespace: str) -> None:
    for body in (lb("cluster", policy="Cluster", healthCheckNodePort=31000),
                 {"metadata": {"name": "nodeport"}, "spec": {
                     "type": "NodePort", "healthCheckNodePort": 31000,
                     "ports": [{"port": 80}]}}):
        with pytest.raises(ApiException) as err:
            core.create_namespaced_service(namespace, body)
        assert message(err.value) == (
            f'Service "{body["metadata"]["name"]}" is invalid: spec.healthCheckNodePort: '
            "Invalid value: 31000: may only be set when `type` is 'LoadBalancer' and "
            "`externalTrafficPolicy` is 'Local'")
    with pytest.raises(ApiException) as err:
        core.create_namespaced_service(namespace, lb("outside", healthCheckNodePort=80))
    assert "provided port is not in the valid range" in message(err.value)
