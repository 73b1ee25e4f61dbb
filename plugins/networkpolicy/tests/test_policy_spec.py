"""Reading a NetworkPolicy: Kubernetes' defaults, every port form, and clear errors."""

from __future__ import annotations

from typing import Any

import pytest
from ovnk_networkpolicy.policy_spec import (
    EGRESS,
    INGRESS,
    IPBlock,
    PolicyError,
    PolicyPort,
    parse_policy,
)

pytestmark = pytest.mark.unit


def policy(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns1", "name": "p"}, "spec": {"podSelector": {}, **spec}}


def test_policy_types_implicit_ingress_only_without_egress_rules() -> None:
    parsed = parse_policy(policy(ingress=[{}]))
    assert (parsed.is_ingress, parsed.is_egress) == (True, False)


def test_policy_types_implicit_egress_when_egress_rules() -> None:
    parsed = parse_policy(policy(egress=[{"to": [{"podSelector": {}}]}]))
    assert (parsed.is_ingress, parsed.is_egress) == (True, True)


def test_policy_types_explicit_egress_only() -> None:
    parsed = parse_policy(policy(policyTypes=["Egress"]))
    assert (parsed.is_ingress, parsed.is_egress) == (False, True)
    assert parsed.rules == ()


def test_ports_numeric_named_range_and_protocol_default() -> None:
    parsed = parse_policy(policy(ingress=[{"ports": [
        {"port": 80}, {"port": "http", "protocol": "UDP"}, {"port": 1000, "endPort": 2000,
                                                          "protocol": "SCTP"},
        {"protocol": "TCP"}, {"port": "8080"}]}]))
    assert parsed.ingress[0].ports == (
        PolicyPort("tcp", 80), PolicyPort("udp", name="http"), PolicyPort("sctp", 1000, 2000),
        PolicyPort("tcp"), PolicyPort("tcp", 8080))
    assert parsed.ingress[0].named_ports == (PolicyPort("udp", name="http"),)


def test_peers_and_ip_block_except() -> None:
    parsed = parse_policy(policy(egress=[{"to": [
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}},
        {"namespaceSelector": {"matchLabels": {"team": "a"}}},
        {"podSelector": {}, "namespaceSelector": {}}]}]))
    rule = parsed.egress[0]
    assert rule.direction == EGRESS and rule.index == 0
    assert rule.ip_blocks == (IPBlock("10.0.0.0/8", ("10.1.0.0/16",)),)
    assert len(rule.selector_peers) == 2
    assert not rule.allows_all_peers


def test_rule_without_peers_allows_all() -> None:
    rule = parse_policy(policy(ingress=[{"ports": [{"port": 80}]}])).ingress[0]
    assert rule.direction == INGRESS and rule.allows_all_peers


@pytest.mark.parametrize(("spec", "message"), [
    ({"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}]},
     "spec.ingress[0].from[0].ipBlock.cidr: Invalid value: '10.0.0.0/33': must be a valid CIDR"),
    ({"egress": [{"to": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.2.0.0/24"]}}]}]},
     "spec.egress[0].to[0].ipBlock.except[0]: Invalid value: '10.2.0.0/24': must be a strict"),
    ({"ingress": [{"ports": [{"port": 70000}]}]},
     "spec.ingress[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535"),
    ({"ingress": [{"ports": [{"port": 90, "endPort": 80}]}]},
     "spec.ingress[0].ports[0].endPort: Invalid value: 80: must be greater than or equal"),
    ({"ingress": [{"ports": [{"port": 80, "protocol": "ICMP"}]}]},
     "spec.ingress[0].ports[0].protocol: Unsupported value: 'ICMP'"),
    ({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}},
     'spec.podSelector: "Near" is not a valid label selector operator'),
    ({"policyTypes": ["Sideways"]}, "spec.policyTypes[0]: Unsupported value: 'Sideways'"),
])
def test_unrenderable_policy_names_the_field(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(PolicyError, match="^" + __import__("re").escape(message)):
        parse_policy(policy(**spec))
