"""A pod's port joins the groups of the policies selecting it (those already in NB), and
what a pod contributes to policies (its primary network's port and addresses)."""

from __future__ import annotations

from typing import Any

import pytest
from ovnk_networkpolicy.membership import PolicyCache, pod_port_links
from ovnk_networkpolicy.pod_facts import pod_facts
from ovnk_networkpolicy.policy_kinds import NetworkPolicyKind, Placement
from ovnk_networkpolicy.rows import NetworkScope

from ovnk_core.annotations.pod_networks import PodNetwork, serialize
from ovnk_core.errors import NotReady
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.render_state import PodAttachment

pytestmark = pytest.mark.unit

CTRL = "default-network-controller"
KIND = NetworkPolicyKind(lambda _ns: None, lambda: [])
DEFAULT = NetInfo(name="default", topology="layer3", role="default", mtu=1400)


class Policies:
    """The informer surface the cache reads (objects by namespace)."""

    def __init__(self, *objects: dict[str, Any], synced: bool = True) -> None:
        self.objects = list(objects)
        self.synced = synced

    def has_synced(self) -> bool:
        return self.synced

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self.synced

    def peek_by_index(self, _name: str, namespace: str) -> list[dict[str, Any]]:
        return [o for o in self.objects if o["metadata"]["namespace"] == namespace]


def netpol(name: str, rv: str = "1", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": "ns1", "name": name, "resourceVersion": rv},
            "spec": {"podSelector": {"matchLabels": {"app": "db"}}, **spec}}


def attachment(role: str = "primary") -> PodAttachment:
    return PodAttachment("ns1", "db-0", "uid", "node1", "default", "0a:58:0a:f4:00:05",
                         ("10.244.0.5/24",), role=role)


POD = {"metadata": {"namespace": "ns1", "name": "db-0", "labels": {"app": "db"}}}


def test_port_joins_existing_groups_of_selecting_policies() -> None:
    cache = PolicyCache(Policies(netpol("a", policyTypes=["Ingress", "Egress"]),
                                 netpol("b", podSelector={"matchLabels": {"app": "web"}}),
                                 netpol("bad", ingress=[{"from": [{"ipBlock": {"cidr": "x"}}]}])),
                        KIND)
    existing = {f"{CTRL}:NetworkPolicy:ns1:a", f"{CTRL}:NetpolNamespace:ns1:Ingress"}
    # (clusterPortGroup not in NB here: not joined)
    extras = pod_port_links(cache, lambda _t, pid: pid in existing, POD, attachment(), DEFAULT)
    assert extras is not None
    # the egress default-deny group is not in NB yet: joined once it is (reconcile_pods)
    assert [(link.parent.primary_id, link.column) for link in extras.links] == [
        (f"{CTRL}:NetworkPolicy:ns1:a", "ports"), (f"{CTRL}:NetpolNamespace:ns1:Ingress", "ports")]


def test_ports_of_a_network_without_management_ports_join_its_cluster_port_group() -> None:
    """Whatever the policies, a port on a primary Layer2 network (no management port on its
    switch) joins its network's ``clusterPortGroup``: its allow-hairpinning ACLs
    (allow-related) are then on the switch, so conntrack runs there (on a switch without a
    stateful ACL, the reply to a connection a pod in a default-deny group opened is
    dropped); on the default network (management ports) it does not."""
    layer2 = NetInfo(name="l2", topology="layer2", role="primary", mtu=1400)
    extras = pod_port_links(PolicyCache(Policies(), KIND), lambda *_: True, POD, attachment(),
                            layer2)
    assert extras is not None
    assert [(link.parent.primary_id, link.column) for link in extras.links] == [
        ("l2-network-controller:Cluster:clusterPortGroup", "ports")]
    assert pod_port_links(PolicyCache(Policies(), KIND), lambda *_: True, POD, attachment(),
                          DEFAULT) is None


def test_only_primary_attachments_and_never_before_policies_are_listed() -> None:
    cache = PolicyCache(Policies(netpol("a")), KIND)
    assert pod_port_links(cache, lambda *_: True, POD, attachment("infrastructure-locked"),
                          DEFAULT) is None
    with pytest.raises(NotReady):
        pod_port_links(PolicyCache(Policies(netpol("a"), synced=False), KIND), lambda *_: True, POD,
                       attachment(), DEFAULT)


def test_pod_facts_read_the_primary_entry_and_named_ports() -> None:
    udn = PodNetwork(ip_addresses=("106.0.0.5/24",), mac_address="0a:58:6a:00:00:05",
                     role="primary")
    locked = PodNetwork(ip_addresses=("10.244.0.5/24",), mac_address="0a:58:0a:f4:00:05",
                        role="infrastructure-locked")
    pod = {"metadata": {"namespace": "ns1", "name": "p", "labels": {"a": "b"}, "annotations": {
        "k8s.ovn.org/pod-networks": serialize({"default": locked, "ns1/blue": udn})}},
        "spec": {"containers": [{"ports": [{"name": "http", "containerPort": 80},
                                           {"containerPort": 81},
                                           {"name": "dns", "containerPort": 53,
                                            "protocol": "UDP"}]}]}}
    facts = pod_facts(pod)
    assert (facts.ips, facts.port, facts.named_ports) == (
        ("106.0.0.5",), "ns1.blue_ns1_p", (("http", "tcp", 80), ("dns", "udp", 53)))
    finished = {**pod, "status": {"phase": "Succeeded"}}
    assert (pod_facts(finished).ips, pod_facts(finished).port) == ((), "")
    broken = {"metadata": {**pod["metadata"], "annotations": {
        "k8s.ovn.org/pod-networks": "{not json"}}}
    assert pod_facts(broken).ips == ()


def test_cache_follows_new_versions_and_deletions() -> None:
    policies = Policies(netpol("a", rv="1"))
    cache = PolicyCache(policies, KIND)  # type: ignore[arg-type]
    assert [p.pod_selector for p in cache.in_namespace("ns1")] == [
        {"matchLabels": {"app": "db"}}]
    policies.objects = [netpol("a", rv="2", podSelector={"matchLabels": {"app": "web"}})]
    assert [p.pod_selector for p in cache.in_namespace("ns1")] == [
        {"matchLabels": {"app": "web"}}]
    policies.objects = []
    assert cache.in_namespace("ns1") == [] and cache._parsed == {}


class OnSecondary(NetworkPolicyKind):
    """MultiNetworkPolicy's placement, as a stand-in: policy ``a`` is on network ``sec``."""

    feature = "multinetworkpolicy"
    pod_role = "secondary"
    network_rows = False

    def place(self, obj: dict[str, Any]) -> Placement:
        return Placement([NetworkScope("sec")] if obj["metadata"]["name"] == "a" else [])


def test_secondary_attachments_join_the_groups_of_policies_on_their_network() -> None:
    """A MultiNetworkPolicy's groups are joined by the pod's port on the networks the policy
    is placed on, never by its primary port (nor NetworkPolicy's by its secondary one)."""
    cache = PolicyCache(Policies(netpol("a"), netpol("b")),  # type: ignore[arg-type]
                        OnSecondary(lambda _ns: None, lambda: []))
    sec = NetInfo(name="sec", topology="layer2", role="secondary", mtu=1400)
    extras = pod_port_links(cache, lambda *_: True, POD, attachment("secondary"), sec)
    assert extras is not None
    assert [link.parent.primary_id for link in extras.links] == [
        "sec-network-controller:NetworkPolicy:ns1:a",
        "sec-network-controller:NetpolNamespace:ns1:Ingress",
        "sec-network-controller:Cluster:clusterPortGroup"]
    assert pod_port_links(cache, lambda *_: True, POD, attachment(), DEFAULT) is None
    assert pod_port_links(PolicyCache(Policies(netpol("a")), KIND),  # type: ignore[arg-type]
                          lambda *_: True, POD, attachment("secondary"), sec) is None
