"""The Northbound rows of UDN isolation, named and matched as upstream writes them.

A pod whose default network is ``infrastructure-locked`` (it has a primary UDN) keeps its
default-network port only for its kubelet's health checks.  Its port joins one port group,
``SecondaryPods`` (named ``a8747502060113802905``: ``hash_for_ovn`` of its primary id), and
five ACLs on that group drop everything but ARP/ND with the node's management port and
connections the host opens through it (the kubelet's probes)::

    DenyPrimaryUDN         Egress  1000 drop          inport == @pg
    DenyPrimaryUDN         Ingress 1000 drop          outport == @pg
    AllowHostARPPrimaryUDN Egress  1001 allow         inport == @pg && (( arp && arp.tpa == IP ))
    AllowHostARPPrimaryUDN Ingress 1001 allow         outport == @pg && (( arp && arp.spa == IP ))
    AllowHostPrimaryUDN    Ingress 1001 allow-related outport == @pg && (ip4.src==IP)

A pod's ``k8s.ovn.org/open-default-ports`` adds two ``OpenPort-<ns>/<pod>`` ACLs on the
same group (priority 1001) for its own port.  Every row carries upstream's external_ids
(owner-controller ``default-network-controller``, owner-type ``UDNIsolation``,
``k8s.ovn.org/name``, ``direction``, ``k8s.ovn.org/id``) plus ovnk's owner key; the ACL
``name`` column stays empty and ``meter`` is ``acl-logging``, as upstream, and ``tier`` is
upstream's ``PrimaryACLTier`` (0) where NB has tiers (OVN 23.06+, ``acl_tier`` of
``ovnk_core.ovn.capabilities``); OVN 23.03's schema has no ``tier`` column, and 0 is what
an ACL without tiers is evaluated as, so nothing is lost there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from ovnk_core.contexts import feature_owner
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.hashed_names import hash_for_ovn
from ovnk_core.ovn.ownership import ObjectIDs, Owner
from ovnk_core.zone.owners import DEFAULT_CONTROLLER
from ovnk_isolation.open_ports import OpenPort, egress_match, ingress_match

FEATURE = "isolation"
OWNER_TYPE = "UDNIsolation"
DIRECTION_KEY = "direction"
EGRESS, INGRESS = "Egress", "Ingress"
FROM_LPORT, TO_LPORT = "from-lport", "to-lport"
DENY_PRIORITY, ALLOW_PRIORITY = 1000, 1001
PRIMARY_ACL_TIER = 0  # upstream's PrimaryACLTier: UDN isolation
METER = "acl-logging"

PORT_GROUP = "SecondaryPods"
DENY = "DenyPrimaryUDN"
ALLOW_HOST_ARP = "AllowHostARPPrimaryUDN"
ALLOW_HOST = "AllowHostPrimaryUDN"
OPEN_PORT_PREFIX = "OpenPort-"
# names of the same ACLs before upstream renamed them (rows with these are migrated away)
LEGACY_NAMES = {"DenySecondary": DENY, "AllowHostARPSecondary": ALLOW_HOST_ARP,
                "AllowHostSecondary": ALLOW_HOST}

# the cluster-wide rows (group and its five ACLs): one owner, converged as a whole
OWNER: Owner = feature_owner(FEATURE, "cluster", controller=DEFAULT_CONTROLLER)
PORT_GROUP_IDS: ObjectIDs = OWNER.object_ids(OWNER_TYPE, PORT_GROUP)
PORT_GROUP_NAME = hash_for_ovn(PORT_GROUP_IDS.primary_id)
PORT_GROUP_REF = Ref.to("Port_Group", PORT_GROUP_IDS)


# rows of the legacy names are taken over by this owner, then deleted with it
LEGACY_OWNER: Owner = feature_owner(FEATURE, "legacy", controller=DEFAULT_CONTROLLER)
LEGACY_ACLS = (("DenySecondary", EGRESS), ("DenySecondary", INGRESS),
               ("AllowHostARPSecondary", EGRESS), ("AllowHostARPSecondary", INGRESS),
               ("AllowHostSecondary", INGRESS))


def legacy_acl_rows(exists: Callable[[str, str], bool]) -> list[DesiredRow]:
    """The legacy-named ACLs NB holds in the group, declared with no column: applying them
    under ``LEGACY_OWNER`` only stamps them as that owner's (nothing else of them changes),
    so that deleting that owner removes them and their places in the group."""
    if not exists("Port_Group", PORT_GROUP_IDS.primary_id):
        return []  # ACLs live only in the group: without it there is nothing to migrate
    rows = []
    for name, direction in LEGACY_ACLS:
        ids = acl_ids(LEGACY_OWNER, name, direction)
        if exists("ACL", ids.primary_id):
            rows.append(DesiredRow("ACL", ids, {}, links=(Link(PORT_GROUP_REF, "acls"),)))
    return rows


def acl_ids(owner: Owner, name: str, direction: str) -> ObjectIDs:
    return owner.object_ids(OWNER_TYPE, name, extra=((DIRECTION_KEY, direction),))


def _acl(owner: Owner, name: str, direction: str, priority: int, action: str,
         match: str, tiers: bool) -> DesiredRow:
    columns: dict[str, object] = {
        "direction": FROM_LPORT if direction == EGRESS else TO_LPORT,
        "priority": priority, "action": action, "match": match, "meter": METER,
        "log": False}
    if tiers:
        columns["tier"] = PRIMARY_ACL_TIER
    return DesiredRow("ACL", acl_ids(owner, name, direction), columns,
                      links=(Link(PORT_GROUP_REF, "acls"),))


def _on_group(direction: str, match: str = "") -> str:
    lport = "inport" if direction == EGRESS else "outport"
    return f"{lport} == @{PORT_GROUP_NAME}" + (f" && {match}" if match else "")


def arp_match(direction: str, management_ips: Sequence[str]) -> str:
    """``(( arp && arp.tpa == IP ) || ( nd && nd.target == IP6 ))``: ARP to (egress) or from
    (ingress) the management port, ND for its IPv6 addresses."""
    parts = []
    for ip in management_ips:
        if ":" in ip:
            parts.append(f"( nd && nd.target == {ip} )")
        else:
            parts.append(f"( arp && arp.{'t' if direction == EGRESS else 's'}pa == {ip} )")
    return "(" + " || ".join(parts) + ")"


def host_match(management_ips: Sequence[str], subnets: Mapping[str, str] | None = None
               ) -> str:
    """``(ip4.src==IP || ...)``: connections from the management ports.  ``subnets`` (a
    management IP → the default-network subnet of its node's pods), given when the zone has
    several nodes: each host then reaches only its own node's pods,
    ``((ip4.src==IP && ip4.dst==SUBNET) || ...)``, as with one node per zone."""
    parts = []
    for ip in management_ips:
        family = "ip6" if ":" in ip else "ip4"
        subnet = (subnets or {}).get(ip)
        parts.append(f"({family}.src=={ip} && {family}.dst=={subnet})" if subnet
                     else f"{family}.src=={ip}")
    return "(" + " || ".join(parts) + ")"


def build_isolation_rows(management_ips: Sequence[str],
                         subnets: Mapping[str, str] | None = None, tiers: bool = True
                         ) -> list[DesiredRow]:
    """The group and its ACLs.  ``management_ips``: the default-network management port
    addresses of the zone's nodes (IPv4 before IPv6 per node, as upstream orders a node's
    host subnets); ``subnets``: see ``host_match`` (left out for a one-node zone, whose rows
    are then exactly upstream's); ``tiers``: NB has ``ACL.tier``.  Without any address (no
    node has its subnet yet) only the two deny ACLs exist: nothing of an isolated pod is
    reachable until the host's exception can be written."""
    rows = [DesiredRow("Port_Group", PORT_GROUP_IDS, {"name": PORT_GROUP_NAME}),
            _acl(OWNER, DENY, EGRESS, DENY_PRIORITY, "drop", _on_group(EGRESS), tiers),
            _acl(OWNER, DENY, INGRESS, DENY_PRIORITY, "drop", _on_group(INGRESS), tiers)]
    if management_ips:
        rows += [
            _acl(OWNER, ALLOW_HOST_ARP, EGRESS, ALLOW_PRIORITY, "allow",
                 _on_group(EGRESS, arp_match(EGRESS, management_ips)), tiers),
            _acl(OWNER, ALLOW_HOST_ARP, INGRESS, ALLOW_PRIORITY, "allow",
                 _on_group(INGRESS, arp_match(INGRESS, management_ips)), tiers),
            _acl(OWNER, ALLOW_HOST, INGRESS, ALLOW_PRIORITY, "allow-related",
                 _on_group(INGRESS, host_match(management_ips, subnets)), tiers)]
    return rows


def build_open_port_acls(owner: Owner, pod_key: str, port_name: str,
                         ports: Sequence[OpenPort], tiers: bool = True) -> list[DesiredRow]:
    """The pod's ``OpenPort-<ns>/<pod>`` ACLs (rows of the pod's own port ``owner``, so they
    go with its port); none without open ports.  ``tiers``: NB has ``ACL.tier``."""
    if not ports:
        return []
    name = f"{OPEN_PORT_PREFIX}{pod_key}"
    return [_acl(owner, name, INGRESS, ALLOW_PRIORITY, "allow-related",
                 ingress_match(port_name, list(ports)), tiers),
            _acl(owner, name, EGRESS, ALLOW_PRIORITY, "allow", egress_match(port_name),
                 tiers)]
