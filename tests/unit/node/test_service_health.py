"""Which services get a health-check port, what it counts and what it answers (pure)."""

from __future__ import annotations

import pytest

from ovnk_core.node.health_server import health_response
from ovnk_core.node.service_health import health_check_port, local_ready_endpoints

pytestmark = pytest.mark.unit


def test_only_etp_local_load_balancers_with_a_port_get_a_health_check() -> None:
    def service(**spec: object) -> dict[str, object]:
        return {"spec": {"type": "LoadBalancer", "externalTrafficPolicy": "Local",
                         "healthCheckNodePort": 30100, **spec}}
    assert health_check_port(service()) == 30100
    assert health_check_port(service(externalTrafficPolicy="Cluster")) is None
    assert health_check_port(service(type="NodePort")) is None
    for bad in (0, -1, 70000, "30100", True, None):
        assert health_check_port(service(healthCheckNodePort=bad)) is None
    assert health_check_port(None) is None
    assert health_check_port({"spec": "junk"}) is None


def test_local_ready_endpoints_counts_distinct_ready_addresses_on_the_node() -> None:
    slices = [
        {"endpoints": [
            {"addresses": ["10.244.0.5"], "nodeName": "a"},  # no conditions: ready
            {"addresses": ["10.244.0.6"], "nodeName": "a", "conditions": {"ready": False}},
            {"addresses": ["10.244.0.7"], "nodeName": "a", "conditions": {"ready": None}},
            {"addresses": ["10.244.1.5"], "nodeName": "b"},
            {"addresses": ["10.244.0.8"]},  # no node
            {"addresses": ["not-an-ip", "10.244.0.5"], "nodeName": "a"}]},
        {"endpoints": [{"addresses": ["fd00::5"], "nodeName": "a"}]},
        {"endpoints": "junk"}, {}]
    assert local_ready_endpoints(slices, "a") == 3  # .5 (twice), .7, fd00::5
    assert local_ready_endpoints(slices, "b") == 1
    assert local_ready_endpoints(slices, "c") == 0


def test_the_answer_is_upstreams() -> None:
    assert health_response("shop", "web", 2) == (
        200, b'{ "service": { "namespace": "shop", "name": "web" }, "localEndpoints": 2 }')
    assert health_response("shop", "web", 0)[0] == 503
