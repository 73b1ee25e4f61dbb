"""The probe matrix's oracle (``ovnk_local.testing.netpol_model``) on the API's corner
cases: a peer with both selectors is one peer (AND), two peers are either (OR), a named
port is the target's, ``endPort`` is a range, ``policyTypes`` is implicit."""

from __future__ import annotations

from typing import Any

from ovnk_local.testing.netpol_model import Model, ModelPod

NS = {"x": {"ns": "x"}, "y": {"ns": "y"}}
XA = ModelPod("x", "a", "10.0.0.1", {"pod": "a"}, {("serve-81-tcp", "TCP"): 81})
XB = ModelPod("x", "b", "10.0.0.2", {"pod": "b"})
YB = ModelPod("y", "b", "10.0.0.3", {"pod": "b"})
YC = ModelPod("y", "c", "10.0.0.4", {"pod": "c"})


def to_a(*rules: dict[str, Any], types: list[str] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {"matchLabels": {"pod": "a"}}, "ingress": list(rules)}
    if types:
        spec["policyTypes"] = types
    return {"metadata": {"namespace": "x", "name": "p"}, "spec": spec}


def test_no_policy_allows_everything() -> None:
    assert Model([], NS).allows(YB, XA, "udp", 80)


def test_both_selectors_in_one_peer_are_and_two_peers_are_or() -> None:
    y_b = {"namespaceSelector": {"matchLabels": {"ns": "y"}},
           "podSelector": {"matchLabels": {"pod": "b"}}}
    model = Model([to_a({"from": [y_b]})], NS)
    assert model.allows(YB, XA, "tcp", 80)
    assert not model.allows(YC, XA, "tcp", 80) and not model.allows(XB, XA, "tcp", 80)
    either = Model([to_a({"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}},
                                   {"podSelector": {"matchLabels": {"pod": "b"}}}]})], NS)
    assert either.allows(YC, XA, "tcp", 80) and either.allows(XB, XA, "tcp", 80)
    # a podSelector alone is the policy's namespace's
    assert not either.allows(ModelPod("z", "b", "10.0.0.5", {"pod": "b"}), XA, "tcp", 80)


def test_named_ports_end_ports_and_protocols() -> None:
    named = Model([to_a({"ports": [{"port": "serve-81-tcp"}]})], NS)
    assert named.allows(YB, XA, "tcp", 81)
    assert not named.allows(YB, XA, "tcp", 80) and not named.allows(YB, XA, "udp", 81)
    ranged = Model([to_a({"ports": [{"protocol": "TCP", "port": 79, "endPort": 80}]})], NS)
    assert ranged.allows(YB, XA, "tcp", 80) and not ranged.allows(YB, XA, "tcp", 81)
    whole = Model([to_a({"ports": [{"protocol": "UDP"}]})], NS)
    assert whole.allows(YB, XA, "udp", 81) and not whole.allows(YB, XA, "tcp", 81)


def test_ip_block_except() -> None:
    model = Model([to_a({"from": [{"ipBlock": {"cidr": "10.0.0.0/24",
                                               "except": ["10.0.0.3/32"]}}]})], NS)
    assert model.allows(YC, XA, "tcp", 80) and not model.allows(YB, XA, "tcp", 80)


def test_policy_types_implicit_from_egress_rules() -> None:
    egress_only = {"metadata": {"namespace": "x", "name": "e"},
                   "spec": {"podSelector": {"matchLabels": {"pod": "a"}},
                            "egress": [{"to": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]}}
    model = Model([egress_only], NS)
    assert model.allows(XA, XB, "tcp", 80) and not model.allows(XA, YB, "tcp", 80)
    # Ingress is implied too, with no rule: nothing gets in
    assert not model.allows(XB, XA, "tcp", 80)
    assert Model([to_a({}, types=["Egress"])], NS).allows(YB, XA, "tcp", 80)
