"""Service → load balancers (pure): upstream's split into cluster-wide and per-node ones."""

from __future__ import annotations

import ipaddress
from typing import Any

from ovnk_core.zone.services.endpoints import eligible, port_endpoints
from ovnk_core.zone.services.lb_config import (
    NodeAddresses,
    base_options,
    build_configs,
    cluster_load_balancers,
    node_load_balancers,
    parse_service,
)

SUBNETS = [ipaddress.ip_network("10.128.0.0/14"), ipaddress.ip_network("fd00:10:128::/48")]
OPTIONS = base_options(["169.254.0.5"], None)
WORKER = NodeAddresses("w1", ("172.18.0.2",), ("169.254.0.2",))


def svc(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                            "ports": [{"name": "http", "protocol": "TCP", "port": 80,
                                       "nodePort": 30080}]}
    return {"metadata": {"namespace": "ns", "name": "web"}, "spec": {**base, **spec}}


def slice_(*endpoints: tuple[str, str, dict[str, bool]], family: str = "IPv4"
           ) -> dict[str, Any]:
    return {"addressType": family, "ports": [{"name": "http", "protocol": "TCP", "port": 8080}],
            "endpoints": [{"addresses": [ip], "nodeName": node, "conditions": cond}
                          for ip, node, cond in endpoints]}


READY = {"ready": True}


def balancers(service: dict[str, Any], *slices: dict[str, Any]) -> dict[str, dict[str, str]]:
    spec = parse_service(service)
    assert spec is not None
    configs = build_configs(spec, slices, SUBNETS)
    found = cluster_load_balancers(spec, configs.cluster, "default", OPTIONS)
    found += node_load_balancers(spec, configs.per_node, "default", WORKER, OPTIONS)
    return {lb.name: dict(lb.vips) for lb in found}


def test_cluster_ip_is_cluster_wide_and_node_port_per_node() -> None:
    found = balancers(svc(type="NodePort"), slice_(("10.128.1.5", "w1", READY),
                                                   ("10.128.2.5", "w2", READY)))
    targets = "10.128.1.5:8080,10.128.2.5:8080"
    assert found == {"Service_ns/web_TCP_cluster": {"10.96.0.10:80": targets},
                     "Service_ns/web_TCP_node_router+switch_w1": {"172.18.0.2:30080": targets}}


def test_a_cluster_ip_service_has_no_node_ports_and_headless_none_at_all() -> None:
    assert list(balancers(svc())) == ["Service_ns/web_TCP_cluster"]
    assert parse_service(svc(clusterIP="None", clusterIPs=["None"])) is None
    assert parse_service(svc(type="ExternalName")) is None


def test_etp_local_keeps_the_client_ip_and_only_local_endpoints() -> None:
    found = balancers(svc(type="LoadBalancer", externalTrafficPolicy="Local",
                          externalIPs=["192.0.2.10"]),
                      slice_(("10.128.1.5", "w1", READY), ("10.128.2.5", "w2", READY)))
    both = "10.128.1.5:8080,10.128.2.5:8080"
    assert found["Service_ns/web_TCP_cluster"] == {"10.96.0.10:80": both}
    assert found["Service_ns/web_TCP_node_local_router_w1"] == {
        "172.18.0.2:30080": "10.128.1.5:8080", "192.0.2.10:80": "10.128.1.5:8080"}
    # from pods (the switch) a NodePort or external IP reaches every endpoint
    assert found["Service_ns/web_TCP_node_switch_w1"] == {
        "172.18.0.2:30080": both, "192.0.2.10:80": both}


def test_etp_local_without_a_local_endpoint_rejects_on_that_node() -> None:
    service = svc(type="NodePort", externalTrafficPolicy="Local")
    spec = parse_service(service)
    assert spec is not None
    configs = build_configs(spec, [slice_(("10.128.2.5", "w2", READY))], SUBNETS)
    [router, switch] = node_load_balancers(spec, configs.per_node, "default", WORKER, OPTIONS)
    assert (router.name, dict(router.vips)) == (
        "Service_ns/web_TCP_node_router_w1", {"172.18.0.2:30080": ""})
    assert dict(switch.vips) == {"172.18.0.2:30080": "10.128.2.5:8080"}
    assert router.options["skip_snat"] == "false"


def test_itp_local_makes_the_cluster_ip_per_node_with_local_switch_endpoints() -> None:
    found = balancers(svc(internalTrafficPolicy="Local"),
                      slice_(("10.128.1.5", "w1", READY), ("10.128.2.5", "w2", READY)))
    assert "Service_ns/web_TCP_cluster" not in found
    assert found["Service_ns/web_TCP_node_switch_w1"] == {"10.96.0.10:80": "10.128.1.5:8080"}
    assert found["Service_ns/web_TCP_node_router_w1"] == {
        "10.96.0.10:80": "10.128.1.5:8080,10.128.2.5:8080"}


def test_itp_local_on_a_switch_shared_by_nodes_gives_every_node_the_same_switch_rules() -> None:
    spec = parse_service(svc(internalTrafficPolicy="Local"))
    assert spec is not None
    configs = build_configs(spec, [slice_(("10.128.1.5", "w1", READY),
                                          ("10.128.2.5", "w2", READY))], SUBNETS)
    rules = {}
    for node in (WORKER, NodeAddresses("w2", ("172.18.0.3",), ("169.254.0.2",))):
        found = node_load_balancers(spec, configs.per_node, "default", node, OPTIONS,
                                    shared_switch=True)
        switch_lbs = [lb for lb in found if lb.on_switch]
        # the ClusterIP rule is the same on both nodes (every endpoint), NodePorts their own
        rules[node.name] = {vip: targets for lb in switch_lbs for vip, targets in lb.vips.items()
                            if vip.startswith("10.96.")}
    assert rules["w1"] == rules["w2"] == {"10.96.0.10:80": "10.128.1.5:8080,10.128.2.5:8080"}


def test_a_host_network_endpoint_on_the_node_is_reached_through_the_masquerade_ip() -> None:
    found = balancers(svc(), slice_(("172.18.0.2", "w1", READY), ("172.18.0.3", "w2", READY)))
    assert found["Service_ns/web_TCP_node_router_w1"] == {
        "10.96.0.10:80": "169.254.0.2:8080,172.18.0.3:8080"}
    assert found["Service_ns/web_TCP_node_switch_w1"] == {
        "10.96.0.10:80": "172.18.0.2:8080,172.18.0.3:8080"}


def test_terminating_endpoints_serve_only_when_none_is_ready() -> None:
    terminating = {"ready": False, "serving": True, "terminating": True}
    gone = {"ready": False, "serving": False, "terminating": True}
    eps = port_endpoints([slice_(("10.128.1.5", "w1", terminating),
                                 ("10.128.1.6", "w1", gone))], "http", "TCP")
    assert [e.ip for e in eligible(eps, False)] == ["10.128.1.5"]
    eps = port_endpoints([slice_(("10.128.1.5", "w1", terminating),
                                 ("10.128.1.7", "w1", READY))], "http", "TCP")
    assert [e.ip for e in eligible(eps, False)] == ["10.128.1.7"]
    assert len(eligible(eps, True)) == 2  # publishNotReadyAddresses


def test_dual_stack_vips_reach_endpoints_of_their_own_family() -> None:
    found = balancers(svc(clusterIPs=["10.96.0.10", "fd00:10:96::10"]),
                      slice_(("10.128.1.5", "w1", READY)),
                      slice_(("fd00:10:128::5", "w1", READY), family="IPv6"))
    assert found["Service_ns/web_TCP_cluster"] == {
        "10.96.0.10:80": "10.128.1.5:8080", "[fd00:10:96::10]:80": "[fd00:10:128::5]:8080"}


def test_session_affinity_sets_the_timeout() -> None:
    spec = parse_service(svc(sessionAffinity="ClientIP"))
    assert spec is not None and spec.affinity_timeout == 10800
    spec = parse_service(svc(sessionAffinity="ClientIP",
                             sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}}))
    assert spec is not None
    assert base_options([], spec.affinity_timeout)["affinity_timeout"] == "60"
    configs = build_configs(spec, [slice_(("10.128.1.5", "w1", READY))], SUBNETS)
    options = base_options([], spec.affinity_timeout)
    assert all(lb.selection_fields == () for lb in [
        *cluster_load_balancers(spec, configs.cluster, "default", options),
        *node_load_balancers(spec, configs.per_node, "default", WORKER, options)]
    )


def test_session_affinity_at_the_longest_timeout_hashes_on_addresses_without_a_timeout(
        ) -> None:
    """Upstream (``loadbalancer.go``): ClientIP affinity of 86400 s, the most Kubernetes
    allows, is ``selection_fields=[ip_src,ip_dst]`` and no ``affinity_timeout``."""
    spec = parse_service(svc(type="NodePort", sessionAffinity="ClientIP",
                             sessionAffinityConfig={"clientIP": {"timeoutSeconds": 86400}}))
    assert spec is not None and spec.affinity_timeout == 86400
    options = base_options(["169.254.0.5"], spec.affinity_timeout)
    assert "affinity_timeout" not in options
    configs = build_configs(spec, [slice_(("10.128.1.5", "w1", READY))], SUBNETS)
    found = [*cluster_load_balancers(spec, configs.cluster, "default", options),
             *node_load_balancers(spec, configs.per_node, "default", WORKER, options)]
    assert [(lb.name, lb.selection_fields) for lb in found] == [
        ("Service_ns/web_TCP_cluster", ("ip_src", "ip_dst")),
        ("Service_ns/web_TCP_node_router+switch_w1", ("ip_src", "ip_dst"))]


def test_garbage_in_slices_is_left_out_not_fatal() -> None:
    bad = {"addressType": "IPv4", "ports": [{"name": "http", "protocol": "TCP", "port": "x"}],
           "endpoints": [{"addresses": ["10.128.1.5"]}]}
    odd = slice_(("not-an-ip", "w1", READY), ("fd00::1", "w1", READY), ("10.128.1.9", "", {}))
    eps = port_endpoints([bad, odd, {"endpoints": 7}, "junk"], "http", "TCP")  # type: ignore[list-item]
    assert [e.ip for e in eps] == ["10.128.1.9"]


def test_problems_of_a_service_are_named() -> None:
    spec = parse_service(svc(externalIPs=["nope"], ports=[
        {"name": "a", "protocol": "TCP", "port": 80}, {"name": "b", "protocol": "ICMP", "port": 1},
        {"name": "c", "protocol": "UDP", "port": 70000}]))
    assert spec is not None
    assert [p.name for p in spec.ports] == ["a"]
    assert spec.problems == ("externalIP 'nope' is not an IP address",
                             "port b: protocol 'ICMP' is not one of TCP, UDP, SCTP",
                             "port c: 70000 is not a port number")
