"""Health-check node ports, served in a throwaway namespace by the node agent's controller
(as ``ovnk node`` builds it) from a local API server's Services and EndpointSlices, and asked
over real HTTP: the count of ready local endpoints follows the slices within a second, a port
in use is a Warning event on its Service that holds no other service up, and a listener goes
with its service's Local policy, port or existence."""

from __future__ import annotations

import http.client
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for, component_client

from ovnk_core.identities import NODES_GROUP, node_agent_user
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import ENDPOINTSLICES, EVENTS, NAMESPACES, SERVICES
from ovnk_core.node.netns import run_in_netns
from ovnk_core.node.service_health import ServiceHealthChecks
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.netns
NODE, NS = "ovn-worker", "shop"
Answer = tuple[int, dict[str, str], bytes]


@pytest.fixture
def admin(kube_apiserver: ServerHandle) -> KubeClient:
    """The admin, with the namespace of the test's services (no Node is needed)."""
    client = KubeClient(client_for(kube_apiserver))
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    return client


@pytest.fixture
def health(admin: KubeClient, kube_apiserver: ServerHandle,
           netns: str) -> Iterator[ServiceHealthChecks]:
    client = component_client(kube_apiserver, node_agent_user(NODE), (NODES_GROUP,))
    informers = InformerFactory(client)
    checks = ServiceHealthChecks(informers, NODE, netns,
                                 EventRecorder(client, "ovnkube-node", NODE))
    informers.start()
    informers.wait_for_sync(30)
    checks.start()
    yield checks
    checks.stop()
    informers.stop()


def lb(admin: KubeClient, name: str, **spec: Any) -> int:
    """A LoadBalancer service with ETP=Local; its health-check node port."""
    created = admin.create(SERVICES, {"metadata": {"name": name, "namespace": NS}, "spec": {
        "type": "LoadBalancer", "externalTrafficPolicy": "Local", "selector": {"app": name},
        "ports": [{"port": 80}], **spec}}, NS)
    return int(created["spec"]["healthCheckNodePort"])


def endpoint(ip: str, node: str, ready: bool = True) -> dict[str, Any]:
    return {"addresses": [ip], "nodeName": node,
            "conditions": {"ready": ready, "serving": ready, "terminating": False}}


def slice_of(admin: KubeClient, service: str, name: str, *endpoints: dict[str, Any],
             label: str = "kubernetes.io/service-name") -> None:
    body = {"metadata": {"name": name, "namespace": NS, "labels": {label: service}},
            "addressType": "IPv4", "ports": [{"port": 8080, "protocol": "TCP"}],
            "endpoints": list(endpoints)}
    try:
        current = admin.get(ENDPOINTSLICES, name, NS)
    except NotFound:
        admin.create(ENDPOINTSLICES, body, NS)
        return
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
    admin.update(ENDPOINTSLICES, body)


def ask(netns: str, port: int, method: str = "GET", path: str = "/") -> Answer | None:
    """The answer on ``port`` in the node's namespace; ``None`` when nothing listens."""
    def request() -> Answer | None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        try:
            connection.request(method, path)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        except (ConnectionRefusedError, ConnectionResetError):  # (reset: while closing)
            return None
        finally:
            connection.close()
    return run_in_netns(netns, request)


def body(count: int, name: str = "web") -> bytes:
    return (f'{{ "service": {{ "namespace": "{NS}", "name": "{name}" }}, '
            f'"localEndpoints": {count} }}').encode()


def test_the_health_check_answers_the_ready_local_endpoints_and_follows_them(
        admin: KubeClient, health: ServiceHealthChecks, netns: str) -> None:
    port = lb(admin, "web")
    wait_until(lambda: ask(netns, port) is not None, timeout=10, what="the listener")
    assert ask(netns, port) == (503, ask(netns, port)[1], body(0))  # type: ignore[index]
    # ready local endpoints, by distinct address, in every default slice of the service;
    # other nodes' endpoints, not-ready ones and mirrored slices do not count
    slice_of(admin, "web", "web-a", endpoint("10.244.0.5", NODE), endpoint("10.244.1.5",
                                                                           "ovn-worker2"),
             endpoint("10.244.0.6", NODE, ready=False))
    slice_of(admin, "web", "web-b", endpoint("10.244.0.7", NODE), endpoint("10.244.0.5", NODE))
    slice_of(admin, "web", "web-udn", endpoint("107.107.0.5", NODE),
             label="k8s.ovn.org/service-name")
    wait_until(lambda: ask(netns, port) == (200, ask(netns, port)[1], body(2)),  # type: ignore[index]
               timeout=5, what="two local endpoints")
    status, headers, _ = ask(netns, port, path="/anything?at=all")  # type: ignore[misc]
    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert int(headers["Content-Length"]) == len(body(2)) and "Date" in headers
    head = ask(netns, port, method="HEAD")
    assert head is not None and head[0] == 200 and head[2] == b""
    assert ask(netns, port, method="POST") is not None

    # an endpoint change is answered within a second
    slice_of(admin, "web", "web-b")
    changed = time.monotonic()
    wait_until(lambda: ask(netns, port) == (200, ask(netns, port)[1], body(1)),  # type: ignore[index]
               timeout=5, what="one local endpoint")
    assert time.monotonic() - changed < 1.0
    admin.delete(ENDPOINTSLICES, "web-a", NS)
    wait_until(lambda: (ask(netns, port) or (0,))[0] == 503, timeout=5)

    # the listener goes with the Local policy, and with the service
    admin.patch(SERVICES, "web", {"spec": {"externalTrafficPolicy": "Cluster"}}, NS)
    wait_until(lambda: ask(netns, port) is None, timeout=10, what="the listener closed")
    port = int(admin.patch(SERVICES, "web", {"spec": {"externalTrafficPolicy": "Local"}},
                           NS)["spec"]["healthCheckNodePort"])
    wait_until(lambda: ask(netns, port) is not None, timeout=10)
    admin.delete(SERVICES, "web", NS)
    wait_until(lambda: ask(netns, port) is None, timeout=10, what="the listener closed")
    assert health.server.served() == {}


def test_a_port_in_use_is_reported_on_its_service_and_holds_no_other_up(
        admin: KubeClient, health: ServiceHealthChecks, netns: str) -> None:
    def occupy() -> socket.socket:
        sock = socket.socket()
        sock.bind(("0.0.0.0", 31999))
        sock.listen()
        return sock
    squatter = run_in_netns(netns, occupy)
    try:
        lb(admin, "blocked", healthCheckNodePort=31999)
        other = lb(admin, "other")
        wait_until(lambda: ask(netns, other) is not None, timeout=10,
                   what="the other service's listener")
        wait_until(lambda: [e for e in admin.list(EVENTS, NS)["items"]
                            if e["reason"] == "FailedToStartServiceHealthcheck"], timeout=10)
        [event] = [e for e in admin.list(EVENTS, NS)["items"]
                   if e["reason"] == "FailedToStartServiceHealthcheck"]
        assert event["type"] == "Warning"
        assert event["involvedObject"]["name"] == "blocked"
        assert event["message"] == (f'node {NODE} failed to start healthcheck "{NS}/blocked" '
                                    "on port 31999: listen tcp :31999: bind: address already "
                                    "in use")
    finally:
        squatter.close()
    # retried: served once the port is free
    wait_until(lambda: ask(netns, 31999) is not None, timeout=30, what="the freed port served")
    assert ask(netns, 31999)[2] == body(0, "blocked")  # type: ignore[index]


def test_a_new_port_moves_the_listener(admin: KubeClient, health: ServiceHealthChecks,
                                       netns: str) -> None:
    port = lb(admin, "web")
    wait_until(lambda: ask(netns, port) is not None, timeout=10)
    admin.patch(SERVICES, "web", {"spec": {"healthCheckNodePort": 31888}}, NS)
    wait_until(lambda: ask(netns, 31888) is not None, timeout=10, what="the new port")
    assert ask(netns, port) is None
