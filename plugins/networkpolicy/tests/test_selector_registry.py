"""An event enqueues only the address sets and policies it can affect: the registry's
indexes (namespace → selectors, selector → users) answer by lookup, whatever the number
of namespaces and policies."""

from __future__ import annotations

from typing import Any

import pytest
from ovnk_networkpolicy.policy_spec import parse_policy
from ovnk_networkpolicy.rows import policy_named_port_selectors, policy_peer_selectors
from ovnk_networkpolicy.selector_registry import SelectorRegistry

pytestmark = pytest.mark.unit

NAMESPACES = 200
NET = "default"


def netpol(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name}, "spec": {"podSelector": {}, **spec}}


def register(registry: SelectorRegistry, obj: dict[str, Any]) -> None:
    policy = parse_policy(obj)
    registry.set_policy(policy.key, [(NET, s) for s in policy_peer_selectors(policy)],
                        [(NET, s) for s in policy_named_port_selectors(policy)])


def crowded_registry() -> SelectorRegistry:
    """200 namespaces (every tenth labelled ``team=a``), each with a policy whose peer is
    its own ``app=web`` pods, and one named-port policy per namespace on its ``app=db``
    pods."""
    labels = {f"ns{i}": {"team": "a"} if i % 10 == 0 else {} for i in range(NAMESPACES)}
    listed: list[int] = []

    def list_namespaces() -> list[tuple[str, dict[str, str]]]:
        listed.append(1)
        return list(labels.items())
    registry = SelectorRegistry(list_namespaces)
    for ns in labels:
        registry.namespace_changed(ns, labels[ns])
    for i in range(NAMESPACES):
        register(registry, netpol(f"ns{i}", "from-web", ingress=[
            {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}]}]))
        register(registry, netpol(f"ns{i}", "db-named", podSelector={
            "matchLabels": {"app": "db"}}, ingress=[{"ports": [{"port": "sql"}]}]))
    register(registry, netpol("ns0", "from-team-a", ingress=[
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]))
    register(registry, netpol("ns1", "egress-named", egress=[
        {"to": [{"namespaceSelector": {"matchLabels": {"team": "a"}},
                 "podSelector": {"matchLabels": {"app": "api"}}}],
         "ports": [{"port": "grpc"}]}]))
    assert not listed  # namespace events filled the index: no list needed
    return registry


TEAM_A = "addrset:default:LS{ML:{team: a,},}_LS{}_LNM"
# the egress policy's peer: an address set, and where its named port resolves
TEAM_A_API = {"addrset:default:LS{ML:{team: a,},}_LS{ML:{app: api,},}", "policy:ns1/egress-named"}


def test_a_pod_event_enqueues_only_what_selects_the_pod() -> None:
    registry = crowded_registry()
    # a web pod of ns5 (not team a): its namespace's set only
    assert registry.pod_keys("ns5", {"app": "web"}) == {
        "addrset:default:ns5_LS{ML:{app: web,},}"}
    # a db pod of ns5: the named-port policy selecting it, no set
    assert registry.pod_keys("ns5", {"app": "db"}) == {"policy:ns5/db-named"}
    # a pod of ns20 (team a): the namespace-selector set too, and the egress policy's peer
    # set and the policy itself, whose named port resolves on team a's api pods
    assert registry.pod_keys("ns20", {"app": "api"}) == {TEAM_A, *TEAM_A_API}
    assert registry.pod_keys("ns20", {"app": "web"}) == {
        "addrset:default:ns20_LS{ML:{app: web,},}", TEAM_A}
    assert registry.pod_keys("ns7", {"app": "other"}) == set()


def test_a_namespace_event_enqueues_only_selectors_whose_verdict_changed() -> None:
    registry = crowded_registry()
    assert registry.namespaces_of(("default", TEAM_A[len("addrset:default:"):])) == {
        f"ns{i}" for i in range(0, NAMESPACES, 10)}
    # ns5 joins team a: the team-a sets and the named-port policy watching team a
    assert registry.namespace_changed("ns5", {"team": "a"}) == {TEAM_A, *TEAM_A_API}
    assert "ns5" in registry.namespaces_of(("default", TEAM_A[len("addrset:default:"):]))
    # another label on it changes no verdict: nothing
    assert registry.namespace_changed("ns5", {"team": "a", "x": "y"}) == set()
    # it leaves: the same two again
    assert registry.namespace_changed("ns5", {}) == {TEAM_A, *TEAM_A_API}
    # a new namespace of team a: the selectors naming it or selecting it
    assert registry.namespace_changed("new", {"team": "a"}) == {TEAM_A, *TEAM_A_API}
    # a namespace deleted: its own sets and policies, and those selecting it
    assert registry.namespace_changed("ns30", None) == {
        TEAM_A, *TEAM_A_API, "addrset:default:ns30_LS{ML:{app: web,},}",
        "policy:ns30/db-named"}


def test_a_selector_no_policy_uses_leaves_the_indexes() -> None:
    registry = crowded_registry()
    registry.set_policy("ns0/from-team-a", [])
    registry.set_policy("ns1/egress-named", [])
    assert registry.pod_keys("ns20", {"app": "api"}) == set()
    assert registry.namespace_changed("ns5", {"team": "a"}) == set()
    assert registry.set_selector(("default", TEAM_A[len("addrset:default:"):])) is None


def test_a_named_port_selector_is_no_address_set() -> None:
    """The selector a named port resolves on is watched, never written as a set; the same
    selector named by a peer too is both."""
    registry = SelectorRegistry()
    register(registry, netpol("ns1", "named", ingress=[{"ports": [{"port": "http"}]}]))
    assert registry.set_selector(("default", "ns1_LS{}")) is None
    register(registry, netpol("ns1", "peer", ingress=[{"from": [{"podSelector": {}}]}]))
    assert registry.set_selector(("default", "ns1_LS{}")) is not None
    assert registry.pod_keys("ns1", {}) == {"addrset:default:ns1_LS{}", "policy:ns1/named"}


def test_a_namespace_selector_first_used_before_any_namespace_event_reads_the_cache() -> None:
    registry = SelectorRegistry(lambda: [("a", {"team": "a"}), ("b", {})])
    register(registry, netpol("a", "p", ingress=[
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]))
    assert registry.namespaces_of(("default", "LS{ML:{team: a,},}_LS{}_LNM")) == {"a"}
