"""The rows of NetworkPolicy, checked against upstream's (``pkg/ovn/policy_test.go``,
``gress_policy_test.go``, ``libovsdb/util/acl_test.go``): names, ids, priorities, matches.

Expected names are computed here from upstream's primary ids written out literally
(``<controller>:<owner type>:<ids...>``), never through the module under test's ids."""

from __future__ import annotations

from typing import Any

import pytest
from ovnk_networkpolicy.acl_logging import AclLogging, parse_acl_logging
from ovnk_networkpolicy.matches import NamedTarget
from ovnk_networkpolicy.peers import PodFacts, resolve_named_ports
from ovnk_networkpolicy.policy_spec import parse_policy
from ovnk_networkpolicy.rows import (
    NetworkScope,
    build_address_set_rows,
    build_namespace_rows,
    build_network_rows,
    build_node_rows,
    build_policy_rows,
    pod_groups,
    policy_peer_selectors,
)

from ovnk_core.ovn.declarative import DesiredRow, Ref
from ovnk_core.ovn.hashed_names import hash_for_ovn

pytestmark = pytest.mark.unit

DEFAULT = NetworkScope("default")
CTRL = "default-network-controller"


def policy(name: str = "p", namespace: str = "ns1", **spec: Any) -> Any:
    return parse_policy({"metadata": {"namespace": namespace, "name": name},
                         "spec": {"podSelector": {"matchLabels": {"app": "db"}}, **spec}})


def acls(rows: list[DesiredRow]) -> dict[str, dict[str, Any]]:
    """ACL rows by primary id, with their external_ids (ovnk's owner key left out)."""
    found = {}
    for row in rows:
        if row.table == "ACL":
            ext = {k: v for k, v in row.external_ids().items() if k != "k8s.ovn.org/owner"}
            found[row.ids.primary_id] = {**row.columns, "external_ids": ext,
                                         "parent": row.links[0].parent}
    return found


def test_port_policy_matches_upstream_get_port_network_policy() -> None:
    """``getPortNetworkPolicy``: ingress and egress on TCP port 80, no peers."""
    rows = build_policy_rows(DEFAULT, policy(
        "port-pol", ingress=[{"ports": [{"port": 80}]}],
        egress=[{"ports": [{"port": 80, "protocol": "TCP"}]}]))
    pg = hash_for_ovn(f"{CTRL}:NetworkPolicy:ns1:port-pol")
    assert rows[0].table == "Port_Group" and rows[0].columns == {"name": pg}
    assert rows[0].external_ids()["k8s.ovn.org/name"] == "ns1:port-pol"
    found = acls(rows)
    assert found == {
        f"{CTRL}:NetworkPolicy:ns1:port-pol:Ingress:0:tcp:-1": {
            "name": "NP:ns1:port-pol:Ingress:0", "direction": "to-lport", "priority": 1001,
            "match": f"ip4 && tcp && tcp.dst==80 && outport == @{pg}",
            "action": "allow-related", "meter": "acl-logging", "severity": None, "log": False,
            "options": {}, "parent": Ref("Port_Group", f"{CTRL}:NetworkPolicy:ns1:port-pol"),
            "external_ids": {
                "k8s.ovn.org/owner-controller": CTRL, "k8s.ovn.org/owner-type": "NetworkPolicy",
                "k8s.ovn.org/name": "ns1:port-pol", "direction": "Ingress", "gress-index": "0",
                "port-policy-protocol": "tcp", "ip-block-index": "-1",
                "k8s.ovn.org/id": f"{CTRL}:NetworkPolicy:ns1:port-pol:Ingress:0:tcp:-1"}},
        f"{CTRL}:NetworkPolicy:ns1:port-pol:Egress:0:tcp:-1": {
            "name": "NP:ns1:port-pol:Egress:0", "direction": "from-lport", "priority": 1001,
            "match": f"ip4 && tcp && tcp.dst==80 && inport == @{pg}",
            "action": "allow-related", "meter": "acl-logging", "severity": None, "log": False,
            "options": {"apply-after-lb": "true"},
            "parent": Ref("Port_Group", f"{CTRL}:NetworkPolicy:ns1:port-pol"),
            "external_ids": {
                "k8s.ovn.org/owner-controller": CTRL, "k8s.ovn.org/owner-type": "NetworkPolicy",
                "k8s.ovn.org/name": "ns1:port-pol", "direction": "Egress", "gress-index": "0",
                "port-policy-protocol": "tcp", "ip-block-index": "-1",
                "k8s.ovn.org/id": f"{CTRL}:NetworkPolicy:ns1:port-pol:Egress:0:tcp:-1"}}}


def test_selector_peers_use_shared_pod_selector_address_sets() -> None:
    """``getGressACLsAndAddrSets``: selector peers as ``ip4.src == {$as...}``, ACL ids
    ``None``/``-1``; the sets' keys are upstream's selector strings."""
    parsed = policy("peers", ingress=[{"from": [
        {"podSelector": {"matchLabels": {"role": "web", "app": "x"}}},
        {"namespaceSelector": {"matchLabels": {"team": "a"}}},
        {"namespaceSelector": {}, "podSelector": {"matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["b", "a"]}]}}]}])
    keys = sorted(s.key for s in policy_peer_selectors(parsed))
    assert keys == ["LS{ML:{team: a,},}_LS{}_LNM",
                    "LS{}_LS{ME:{LSR{Key:tier,Operator:In,Values:[a b],}},}",
                    "ns1_LS{ML:{app: x,role: web,},}"]
    sets = sorted("$" + hash_for_ovn(f"{CTRL}:PodSelector:{key}:v4") for key in keys)
    pg = hash_for_ovn(f"{CTRL}:NetworkPolicy:ns1:peers")
    assert {k: v["match"] for k, v in acls(build_policy_rows(DEFAULT, parsed)).items()} == {
        f"{CTRL}:NetworkPolicy:ns1:peers:Ingress:0:None:-1":
            f"ip4.src == {{{', '.join(sets)}}} && outport == @{pg}"}


def test_address_set_rows_per_family_with_upstream_ids() -> None:
    scope = NetworkScope("default", (4, 6))
    rows = build_address_set_rows(scope, "ns1_LS{}", ["10.1.0.5", "fd00::5", "10.1.0.4"])
    assert [(r.columns["name"], r.columns["addresses"]) for r in rows] == [
        (hash_for_ovn(f"{CTRL}:PodSelector:ns1_LS{{}}:v4"), ["10.1.0.4", "10.1.0.5"]),
        (hash_for_ovn(f"{CTRL}:PodSelector:ns1_LS{{}}:v6"), ["fd00::5"])]
    ext = rows[0].external_ids()
    assert (ext["k8s.ovn.org/owner-type"], ext["k8s.ovn.org/name"], ext["ip-family"]) == \
        ("PodSelector", "ns1_LS{}", "v4")


def test_ip_blocks_combined_acl_beside_selector_acl_per_protocol() -> None:
    """One ACL for all ipBlocks (index -2) and one for the selectors (-1), per protocol."""
    parsed = policy("mix", egress=[{
        "ports": [{"port": 53, "protocol": "UDP"}, {"port": 80}, {"port": 443}],
        "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": ["10.1.0.0/16"]}},
               {"ipBlock": {"cidr": "10.1.0.0/16"}},
               {"podSelector": {}}]}])
    pg = hash_for_ovn(f"{CTRL}:NetworkPolicy:ns1:mix")
    as_v4 = hash_for_ovn(f"{CTRL}:PodSelector:ns1_LS{{}}:v4")
    blocks = "((ip4.dst == 0.0.0.0/0 && ip4.dst != {10.1.0.0/16}) || ip4.dst == 10.1.0.0/16)"
    assert {k: v["match"] for k, v in acls(build_policy_rows(DEFAULT, parsed)).items()} == {
        f"{CTRL}:NetworkPolicy:ns1:mix:Egress:0:tcp:-2":
            f"{blocks} && tcp && tcp.dst=={{80,443}} && inport == @{pg}",
        f"{CTRL}:NetworkPolicy:ns1:mix:Egress:0:tcp:-1":
            f"ip4.dst == {{${as_v4}}} && tcp && tcp.dst=={{80,443}} && inport == @{pg}",
        f"{CTRL}:NetworkPolicy:ns1:mix:Egress:0:udp:-2":
            f"{blocks} && udp && udp.dst==53 && inport == @{pg}",
        f"{CTRL}:NetworkPolicy:ns1:mix:Egress:0:udp:-1":
            f"ip4.dst == {{${as_v4}}} && udp && udp.dst==53 && inport == @{pg}"}


def test_ranges_and_number_less_ports() -> None:
    """``libovsdb/util/acl_test.go``'s spellings; a port without number allows its whole
    protocol (Kubernetes), even beside numbered ports of the same protocol."""
    parsed = policy("ranges", ingress=[{"ports": [
        {"port": 800, "protocol": "UDP"}, {"port": 900, "protocol": "UDP"},
        {"port": 1900, "endPort": 2000, "protocol": "UDP"},
        {"port": 4900, "endPort": 5000, "protocol": "UDP"},
        {"port": 30, "endPort": 30, "protocol": "SCTP"},
        {"port": 22}, {"protocol": "TCP"}]}])
    matches = {k.rsplit(":", 2)[1]: v["match"].split(" && outport")[0]
               for k, v in acls(build_policy_rows(DEFAULT, parsed)).items()}
    assert matches == {
        "udp": "ip4 && udp && (udp.dst=={800,900} || 1900<=udp.dst<=2000 || "
               "4900<=udp.dst<=5000)",
        "sctp": "ip4 && sctp && sctp.dst==30",
        "tcp": "ip4 && tcp"}


def test_dual_stack_all_ips_and_address_sets() -> None:
    scope = NetworkScope("default", (4, 6))
    rows = build_policy_rows(scope, policy("ds", ingress=[{}], egress=[{"to": [
        {"podSelector": {}}]}]))
    pg = hash_for_ovn(f"{CTRL}:NetworkPolicy:ns1:ds")
    v4 = hash_for_ovn(f"{CTRL}:PodSelector:ns1_LS{{}}:v4")
    v6 = hash_for_ovn(f"{CTRL}:PodSelector:ns1_LS{{}}:v6")
    assert {k: v["match"] for k, v in acls(rows).items()} == {
        f"{CTRL}:NetworkPolicy:ns1:ds:Ingress:0:None:-1": f"(ip4 || ip6) && outport == @{pg}",
        f"{CTRL}:NetworkPolicy:ns1:ds:Egress:0:None:-1":
            f"(ip4.dst == {{${v4}}} || ip6.dst == {{${v6}}}) && inport == @{pg}"}


def test_policy_with_no_rules_has_only_its_group() -> None:
    rows = build_policy_rows(DEFAULT, policy("deny-all", policyTypes=["Ingress", "Egress"]))
    assert [r.table for r in rows] == ["Port_Group"]


def test_named_ports_resolve_on_pods_into_their_own_acl() -> None:
    parsed = policy("named", ingress=[{"ports": [{"port": "http"}, {"port": 22}]}])
    db = {"app": "db"}
    pods = [PodFacts("ns1", "a", db, ("10.1.0.5",), named_ports=(("http", "tcp", 8080),)),
            PodFacts("ns1", "b", db, ("10.1.0.6",), named_ports=(("http", "udp", 9),)),
            PodFacts("ns1", "c", db, ("10.1.0.4",), named_ports=(("http", "tcp", 80),))]
    named = resolve_named_ports(parsed.ingress[0].ports, pods)
    assert sorted(named) == [NamedTarget("10.1.0.4", "tcp", 80),
                             NamedTarget("10.1.0.5", "tcp", 8080)]
    pg = hash_for_ovn(f"{CTRL}:NetworkPolicy:ns1:named")
    found = acls(build_policy_rows(DEFAULT, parsed, named={("Ingress", 0): named}))
    assert {k: v["match"] for k, v in found.items()} == {
        f"{CTRL}:NetworkPolicy:ns1:named:Ingress:0:tcp:-1":
            f"ip4 && tcp && tcp.dst==22 && outport == @{pg}",
        f"{CTRL}:NetworkPolicy:ns1:named:Ingress:0:tcp-namedPort:-1":
            "ip4 && tcp && ((ip4.dst == 10.1.0.4 && tcp.dst == 80) || "
            f"(ip4.dst == 10.1.0.5 && tcp.dst == 8080)) && outport == @{pg}"}


def test_only_named_ports_resolving_to_nothing_allow_nothing() -> None:
    """A rule of named ports no pod has must not fall back to "every port"."""
    parsed = policy("unresolved", ingress=[{"ports": [{"port": "http"}],
                                            "from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}])
    assert acls(build_policy_rows(DEFAULT, parsed)) == {}


def test_default_deny_rows_match_upstream_get_default_deny_data() -> None:
    rows = build_namespace_rows(DEFAULT, "ns1", AclLogging(allow="notice", deny="alert"))
    ingress_pg = hash_for_ovn(f"{CTRL}:NetpolNamespace:ns1:Ingress")
    egress_pg = hash_for_ovn(f"{CTRL}:NetpolNamespace:ns1:Egress")
    groups = {r.ids.primary_id: r.columns["name"] for r in rows if r.table == "Port_Group"}
    assert groups == {f"{CTRL}:NetpolNamespace:ns1:Ingress": ingress_pg,
                      f"{CTRL}:NetpolNamespace:ns1:Egress": egress_pg}
    found = acls(rows)
    summary = {k: (v["name"], v["direction"], v["priority"], v["match"], v["action"],
                   v["severity"], v["log"], v["options"], v["external_ids"]["type"])
               for k, v in found.items()}
    assert summary == {
        f"{CTRL}:NetpolNamespace:ns1:Ingress:defaultDeny": (
            "NP:ns1:Ingress", "to-lport", 1000, f"outport == @{ingress_pg}", "drop", "alert",
            True, {}, "defaultDeny"),
        f"{CTRL}:NetpolNamespace:ns1:Ingress:arpAllow": (
            "NP:ns1:Ingress", "to-lport", 1001, f"outport == @{ingress_pg} && (arp || nd)",
            "allow", None, False, {}, "arpAllow"),
        f"{CTRL}:NetpolNamespace:ns1:Egress:defaultDeny": (
            "NP:ns1:Egress", "from-lport", 1000, f"inport == @{egress_pg}", "drop", "alert",
            True, {"apply-after-lb": "true"}, "defaultDeny"),
        f"{CTRL}:NetpolNamespace:ns1:Egress:arpAllow": (
            "NP:ns1:Egress", "from-lport", 1001, f"inport == @{egress_pg} && (arp || nd)",
            "allow", None, False, {"apply-after-lb": "true"}, "arpAllow")}


def test_network_rows_match_upstream_hairpinning_acls_and_cluster_groups() -> None:
    """``getHairpinningACLsV4AndPortGroupForNetwork`` on a primary UDN."""
    ctrl = "tenant_blue-network-controller"
    rows = build_network_rows(NetworkScope("tenant_blue"), ["169.254.169.5"])
    cluster_pg = hash_for_ovn(f"{ctrl}:Cluster:clusterPortGroup")
    groups = {r.ids.primary_id: r.columns["name"] for r in rows if r.table == "Port_Group"}
    assert groups == {f"{ctrl}:Cluster:clusterPortGroup": cluster_pg,
                      f"{ctrl}:Cluster:clusterRtrPortGroup":
                          hash_for_ovn(f"{ctrl}:Cluster:clusterRtrPortGroup")}
    found = acls(rows)
    assert {k: (v["name"], v["direction"], v["priority"], v["match"], v["action"],
                v["options"], v["parent"].primary_id) for k, v in found.items()} == {
        f"{ctrl}:NetpolDefault:allow-hairpinning:Ingress": (
            None, "to-lport", 1001, "ip4.src == 169.254.169.5", "allow-related", {},
            f"{ctrl}:Cluster:clusterPortGroup"),
        f"{ctrl}:NetpolDefault:allow-hairpinning:Egress": (
            None, "from-lport", 1001, "ip4.src == 169.254.169.5", "allow-related",
            {"apply-after-lb": "true"}, f"{ctrl}:Cluster:clusterPortGroup")}
    dual = acls(build_network_rows(NetworkScope("default", (4, 6)), ["169.254.169.5", "fd69::5"]))
    assert {v["match"] for v in dual.values()} == {
        "(ip4.src == 169.254.169.5 || ip6.src == fd69::5)"}


def test_node_acl_matches_upstream_allow_from_node() -> None:
    """``getAllowFromNodeExpectedACL``: on the node's switch, ``ip4.src==<mgmt IP>``."""
    switch = Ref("Logical_Switch", "some-switch-id")
    rows = build_node_rows(DEFAULT, "node1", switch, ["10.244.0.2", "fd00:10:244::2"])
    found = acls(rows)
    assert {k: (v["direction"], v["priority"], v["match"], v["action"], v["parent"])
            for k, v in found.items()} == {
        f"{CTRL}:NetpolNode:node1:10.244.0.2": (
            "to-lport", 1001, "ip4.src==10.244.0.2", "allow-related", switch),
        f"{CTRL}:NetpolNode:node1:fd00:10:244::2": (
            "to-lport", 1001, "ip6.src==fd00:10:244::2", "allow-related", switch)}
    assert found[f"{CTRL}:NetpolNode:node1:10.244.0.2"]["external_ids"]["ip"] == "10.244.0.2"


def test_acl_name_is_cut_at_63_characters() -> None:
    long = "n" * 60
    rows = build_policy_rows(DEFAULT, policy(long, ingress=[{}]))
    name = next(iter(acls(rows).values()))["name"]
    assert name == f"NP:ns1:{long}:Ingress:0"[:63] and len(name) == 63


def test_tier_written_only_when_the_schema_has_tiers() -> None:
    parsed = policy("t", ingress=[{}])
    without = next(r for r in build_policy_rows(DEFAULT, parsed) if r.table == "ACL")
    assert "tier" not in without.columns
    with_tiers = next(r for r in build_policy_rows(NetworkScope("default", acl_tiers=True),
                                                   parsed) if r.table == "ACL")
    assert with_tiers.columns["tier"] == 2


def test_allow_acls_log_at_the_namespace_allow_severity() -> None:
    logging = parse_acl_logging({"k8s.ovn.org/acl-logging": '{"allow": "info", "deny": "x"}'})
    # upstream's aclLoggingUpdateNsInfo: the bad severity disabled, the other in force,
    # and the problem in upstream's words
    assert (logging.allow, logging.deny) == ("info", "")
    assert logging.problems == ('disabling deny logging due to invalid deny annotation. "x" '
                                "is not a valid log severity",)
    row = next(iter(acls(build_policy_rows(DEFAULT, policy(ingress=[{}]), logging)).values()))
    assert (row["severity"], row["log"]) == ("info", True)
    unreadable = parse_acl_logging({"k8s.ovn.org/acl-logging": "not json"})
    assert (unreadable.allow, unreadable.deny) == ("", "")
    assert unreadable.problems[0].startswith(
        "could not unmarshal namespace ACL annotation 'not json', disabling logging, err: ")
    assert parse_acl_logging({"k8s.ovn.org/acl-logging": "{}"}) == AclLogging()
    assert parse_acl_logging({"k8s.ovn.org/acl-logging": '{"deny": "alert"}'}) == \
        AclLogging(deny="alert")


def test_pod_groups_follow_selecting_policies_and_their_types() -> None:
    ingress_only = policy("a", ingress=[{}])
    egress_only = policy("b", podSelector={}, policyTypes=["Egress"])
    other = policy("c", podSelector={"matchLabels": {"app": "web"}}, policyTypes=["Egress"])
    groups = pod_groups("default", {"app": "db"}, "ns1", [other, egress_only, ingress_only])
    assert [g.primary_id for g in groups] == [
        f"{CTRL}:NetworkPolicy:ns1:a", f"{CTRL}:NetworkPolicy:ns1:b",
        f"{CTRL}:NetpolNamespace:ns1:Ingress", f"{CTRL}:NetpolNamespace:ns1:Egress"]
    assert pod_groups("default", {"app": "db"}, "ns2", [ingress_only]) == []
