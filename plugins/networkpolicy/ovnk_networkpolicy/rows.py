"""The desired Northbound rows of NetworkPolicy on one network (pure ``build_*`` functions).

Each function builds the rows of one owner (``ids``) from parsed policies
(``policy_spec``), resolved peers (``peers``) and the network's facts; nothing here reads
the API or NB.  ACLs carry upstream's columns: ``name`` (``NP:<ns>:<name>:<dir>:<idx>`` or
``NP:<ns>:<dir>``, at most 63 characters; empty for the per-network and per-node ACLs),
``meter`` ``acl-logging``, ``severity``/``log`` from the namespace's ACL logging, egress
ACLs applied after load balancing (``options:apply-after-lb=true``) so that traffic to a
Service is judged on its backend, and ``tier`` 2 — written only when the NB schema has
tiers (``NetworkScope.acl_tiers``; OVN before 23.06 has none, and evaluates every ACL as
tier 0).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ovnk_core.kube.selectors import selector_matches
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs
from ovnk_networkpolicy import ids
from ovnk_networkpolicy.acl_logging import AclLogging
from ovnk_networkpolicy.matches import (
    NamedTarget,
    address_set_match,
    all_ips_match,
    ip_block_match,
    join,
    lport_match,
    named_l4_matches,
    numeric_l4_matches,
)
from ovnk_networkpolicy.peers import PeerSelector, peer_selector
from ovnk_networkpolicy.policy_spec import EGRESS, INGRESS, Policy, Rule

ALLOW_PRIORITY, DENY_PRIORITY = 1001, 1000
ACL_TIER = 2
METER = "acl-logging"
ARP_ALLOW_MATCH = "(arp || nd)"
ACL_NAME_LIMIT = 63
NO_LOGGING = AclLogging()


@dataclass(frozen=True)
class NetworkScope:
    """The network the rows are for.

    :ivar network: its name (``default`` or a UDN's); names the controller.
    :ivar families: its IP families (4, 6 or both).
    :ivar acl_tiers: the NB schema has ``ACL.tier``: write tier 2.
    :ivar feature: whose rows they are (``ids.FEATURE``, or ``ids.MULTI_FEATURE`` for
        MultiNetworkPolicy's on a secondary network).
    :ivar has_ipam: its pods have addresses (a secondary network without subnets has none:
        only ipBlock peers can be rendered there).
    """

    network: str
    families: tuple[int, ...] = (4,)
    acl_tiers: bool = False
    feature: str = ids.FEATURE
    has_ipam: bool = True


def _acl(scope: NetworkScope, acl_ids: ObjectIDs, direction: str, priority: int, match: str,
         action: str, group: Ref, name: str = "", severity: str = "") -> DesiredRow:
    columns: dict[str, object] = {
        "name": name[:ACL_NAME_LIMIT] or None,
        "direction": "to-lport" if direction == INGRESS else "from-lport",
        "priority": priority, "match": match, "action": action, "meter": METER,
        "severity": severity or None, "log": bool(severity),
        "options": {} if direction == INGRESS else {"apply-after-lb": "true"}}
    if scope.acl_tiers:
        columns["tier"] = ACL_TIER
    return DesiredRow("ACL", acl_ids, columns, links=(Link(group, "acls"),))


def _group(group_ids: ObjectIDs) -> DesiredRow:
    return DesiredRow("Port_Group", group_ids, {"name": ids.pg_name(group_ids)})


def hairpin_match(hairpin_ips: Sequence[str]) -> str:
    """``ip4.src == 169.254.169.5`` (both families in parentheses): OVN's service hairpin
    SNAT source, so a pod reaching itself through a Service is never dropped."""
    parts = [f"{'ip6' if ':' in ip else 'ip4'}.src == {ip}" for ip in hairpin_ips]
    return parts[0] if len(parts) == 1 else f"({' || '.join(parts)})"


def build_network_rows(scope: NetworkScope, hairpin_ips: Sequence[str]) -> list[DesiredRow]:
    """The rows upstream keeps on every network even without a policy: ``clusterPortGroup``
    (with the two allow-hairpinning ACLs) and ``clusterRtrPortGroup``."""
    cluster = ids.cluster_pg_ids(scope.network, ids.CLUSTER_PORT_GROUP, scope.feature)
    router = ids.cluster_pg_ids(scope.network, ids.CLUSTER_RTR_PORT_GROUP, scope.feature)
    rows = [_group(cluster), _group(router)]
    if hairpin_ips:
        for direction in (INGRESS, EGRESS):
            rows.append(_acl(scope, ids.hairpin_acl_ids(scope.network, direction, scope.feature),
                             direction, ALLOW_PRIORITY, hairpin_match(hairpin_ips),
                             "allow-related", ids.pg_ref(cluster)))
    return rows


def build_node_rows(scope: NetworkScope, switch: str, switch_ref: Ref,
                    management_ips: Iterable[str]) -> list[DesiredRow]:
    """``NetpolNode``: the node's management port addresses may always reach its pods (the
    kubelet's probes), an ACL on the node's switch per address."""
    rows = []
    for ip in management_ips:
        family = "ip6" if ":" in ip else "ip4"
        rows.append(DesiredRow("ACL", ids.node_acl_ids(scope.network, switch, ip, scope.feature), {
            "name": None, "direction": "to-lport", "priority": ALLOW_PRIORITY,
            "match": f"{family}.src=={ip}", "action": "allow-related", "meter": METER,
            "severity": None, "log": False, "options": {},
            **({"tier": ACL_TIER} if scope.acl_tiers else {})},
            links=(Link(switch_ref, "acls"),)))
    return rows


def deny_group_ref(network: str, namespace: str, direction: str,
                   feature: str = ids.FEATURE) -> Ref:
    return ids.pg_ref(ids.deny_pg_ids(network, namespace, direction, feature))


def build_namespace_rows(scope: NetworkScope, namespace: str,
                         logging: AclLogging = NO_LOGGING) -> list[DesiredRow]:
    """The namespace's two default-deny groups (``ingressDefaultDeny``, ``egressDefaultDeny``:
    upstream's ``NetpolNamespace`` ids) with a drop ACL (1000, logged at the namespace's deny
    severity) and an ARP/ND allow ACL (1001) each.  Wanted while the namespace has a policy."""
    rows = []
    for direction in (INGRESS, EGRESS):
        group_ids = ids.deny_pg_ids(scope.network, namespace, direction, scope.feature)
        group = ids.pg_ref(group_ids)
        on_group = lport_match(direction, ids.pg_name(group_ids))
        name = f"NP:{namespace}:{direction}"
        rows += [
            _group(group_ids),
            _acl(scope, ids.deny_acl_ids(scope.network, namespace, direction, ids.DEFAULT_DENY,
                                      scope.feature),
                 direction, DENY_PRIORITY, on_group, "drop", group, name, logging.deny),
            _acl(scope, ids.deny_acl_ids(scope.network, namespace, direction, ids.ARP_ALLOW,
                                      scope.feature),
                 direction, ALLOW_PRIORITY, join(on_group, ARP_ALLOW_MATCH), "allow", group,
                 name)]
    return rows


def rule_peer_selectors(policy: Policy, rule: Rule) -> list[PeerSelector]:
    """The address sets the rule's selector peers use (each key once)."""
    found: dict[str, PeerSelector] = {}
    for peer in rule.peers:
        selector = peer_selector(peer, policy.namespace)
        if selector is not None:
            found.setdefault(selector.key, selector)
    return list(found.values())


def policy_peer_selectors(policy: Policy) -> list[PeerSelector]:
    """Every address set the policy's rules use (each key once)."""
    found: dict[str, PeerSelector] = {}
    for rule in policy.rules:
        for selector in rule_peer_selectors(policy, rule):
            found.setdefault(selector.key, selector)
    return list(found.values())


EVERY_POD = PeerSelector({}, None, {})
"""Every pod of the network: where an egress rule without peers resolves its named ports."""


def named_port_selectors(policy: Policy, rule: Rule) -> list[PeerSelector]:
    """The pods a rule's named ports resolve on (Kubernetes resolves a named port on the
    destination): the policy's own pods for ingress, the rule's peers for egress (every
    pod of the network for an egress rule without peers); none without named ports."""
    if not rule.named_ports:
        return []
    if rule.direction == INGRESS:
        return [PeerSelector(policy.pod_selector, policy.namespace)]
    return [EVERY_POD] if rule.allows_all_peers else rule_peer_selectors(policy, rule)


def policy_named_port_selectors(policy: Policy) -> list[PeerSelector]:
    """Every selector the policy's named ports resolve on (each key once)."""
    found: dict[str, PeerSelector] = {}
    for rule in policy.rules:
        for selector in named_port_selectors(policy, rule):
            found.setdefault(selector.key, selector)
    return list(found.values())


def _peer_l3(scope: NetworkScope, policy: Policy, rule: Rule) -> str:
    """The rule's selector peers as address-set matches ('' if it has none)."""
    keys = [s.key for s in rule_peer_selectors(policy, rule)]
    def names(version: int) -> list[str]:
        return [ids.address_set_name(scope.network, k, version, scope.feature) for k in keys] \
            if version in scope.families else []
    return address_set_match(rule.direction, names(4), names(6))


def _rule_acls(scope: NetworkScope, policy: Policy, rule: Rule, group: Ref, group_name: str,
               logging: AclLogging, named: Sequence[NamedTarget]) -> list[DesiredRow]:
    lport = lport_match(rule.direction, group_name)
    name = f"NP:{ids.policy_object_name(policy.namespace, policy.name)}:{rule.direction}:" \
           f"{rule.index}"

    def acl(protocol: str, ip_block_index: int, match: str) -> DesiredRow:
        acl_ids = ids.policy_acl_ids(scope.network, policy.namespace, policy.name,
                                     rule.direction, rule.index, protocol, ip_block_index,
                                     scope.feature)
        return _acl(scope, acl_ids, rule.direction, ALLOW_PRIORITY, match, "allow-related",
                    group, name, logging.allow)

    l4 = numeric_l4_matches(rule.ports) if rule.ports else {ids.UNSPECIFIED_PROTOCOL: ""}
    peer_l3 = all_ips_match(scope.families) if rule.allows_all_peers \
        else _peer_l3(scope, policy, rule)
    blocks = rule.ip_blocks
    rows = []
    for protocol, l4_match in sorted(l4.items()):
        if blocks:
            rows.append(acl(protocol, ids.IP_BLOCK_COMBINED_INDEX,
                            join(ip_block_match(rule.direction, blocks), l4_match, lport)))
        if peer_l3:
            rows.append(acl(protocol, ids.EMPTY_INDEX, join(peer_l3, l4_match, lport)))
    if peer_l3:
        for protocol, l4_match in sorted(named_l4_matches(named).items()):
            rows.append(acl(protocol + ids.NAMED_PORT_SUFFIX, ids.EMPTY_INDEX,
                            join(peer_l3, l4_match, lport)))
    return rows


def policy_group_ref(network: str, policy: Policy, feature: str = ids.FEATURE) -> Ref:
    return ids.pg_ref(ids.policy_pg_ids(network, policy.namespace, policy.name, feature))


def build_policy_rows(scope: NetworkScope, policy: Policy,
                      logging: AclLogging = NO_LOGGING,
                      named: Mapping[tuple[str, int], Sequence[NamedTarget]] | None = None
                      ) -> list[DesiredRow]:
    """The policy's port group and its allow ACLs (``allow-related``, 1001), one per rule and
    protocol for its selector peers (or every IP, for a rule without peers), one per rule and
    protocol for all its ipBlocks together, and one per rule and protocol for its named
    ports as resolved in ``named`` (``(direction, rule index)`` → targets).  Upstream builds
    the ACLs of both directions whatever ``policyTypes`` says (only the default-deny groups
    follow it), and so do these."""
    group_ids = ids.policy_pg_ids(scope.network, policy.namespace, policy.name, scope.feature)
    group, group_name = ids.pg_ref(group_ids), ids.pg_name(group_ids)
    rows = [_group(group_ids)]
    for rule in policy.rules:
        rows += _rule_acls(scope, policy, rule, group, group_name, logging,
                           (named or {}).get((rule.direction, rule.index), ()))
    return rows


def build_address_set_rows(scope: NetworkScope, selector_key: str,
                           ips: Iterable[str]) -> list[DesiredRow]:
    """One set per IP family of the network, holding the selected pods' addresses."""
    addresses = set(ips)
    rows = []
    for version in scope.families:
        set_ids = ids.address_set_ids(scope.network, selector_key, version, scope.feature)
        rows.append(DesiredRow("Address_Set", set_ids, {
            "name": ids.address_set_name(scope.network, selector_key, version, scope.feature),
            "addresses": sorted(a for a in addresses if (":" in a) == (version == 6))}))
    return rows


def pod_groups(network: str, pod_labels: Mapping[str, str], namespace: str,
               policies: Iterable[Policy], feature: str = ids.FEATURE) -> list[Ref]:
    """The port groups a pod's port on ``network`` belongs to, given the policies of its
    namespace: each selecting policy's group, and the namespace's ingress (egress)
    default-deny group when a selecting policy is of type Ingress (Egress)."""
    groups: list[Ref] = []
    ingress = egress = False
    for policy in sorted(policies, key=lambda p: p.name):
        if policy.namespace != namespace or not selector_matches(policy.pod_selector,
                                                                 pod_labels):
            continue
        groups.append(policy_group_ref(network, policy, feature))
        ingress = ingress or policy.is_ingress
        egress = egress or policy.is_egress
    if ingress:
        groups.append(deny_group_ref(network, namespace, INGRESS, feature))
    if egress:
        groups.append(deny_group_ref(network, namespace, EGRESS, feature))
    return groups
