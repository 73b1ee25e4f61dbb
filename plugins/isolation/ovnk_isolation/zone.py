"""The zone side of UDN isolation: the port group and its ACLs, and each pod's part.

* ``IsolationRows`` (one controller, one key): converges the ``SecondaryPods`` group and its
  five ACLs (``ovn_acls``) whenever a node comes, goes or changes its default-network subnet
  (the ACLs name every node's management port address).  With one node per zone, as upstream
  deploys interconnect, the rows are exactly upstream's; a zone rendering several nodes
  scopes each host's exception to its own node's pods (``ip4.src==MGMT && ip4.dst==SUBNET``),
  so that, as upstream, no host reaches an isolated pod on another node.
* ``pod_port_extras`` (the ``ovnk_zone_pod_port`` hook): an ``infrastructure-locked``
  default-network port joins the group in the transaction that writes it, with its
  ``OpenPort`` ACLs; an unusable ``k8s.ovn.org/open-default-ports`` is an ``error`` (upstream:
  a new port is not written, an existing one loses its open ports; the pod is retried).
"""

from __future__ import annotations

import ipaddress
import logging

from ovnk_core.annotations.node_subnets import parse_node_subnets
from ovnk_core.contexts import ZoneContext
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.resources import NODES
from ovnk_core.networks.addressing import management_ip
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME, ROLE_INFRASTRUCTURE_LOCKED, NetInfo
from ovnk_core.ovn.capabilities import CURRENT, NbCapabilities
from ovnk_core.ovn.declarative import DesiredRow, Link, apply, delete_owner
from ovnk_core.ovn.ownership import Owner
from ovnk_core.pod_port import PodPortExtras
from ovnk_core.render_state import PodAttachment
from ovnk_isolation.open_ports import OpenPortsError, parse_open_ports
from ovnk_isolation.ovn_acls import (
    FEATURE,
    LEGACY_OWNER,
    OWNER,
    PORT_GROUP_REF,
    build_isolation_rows,
    build_open_port_acls,
    legacy_acl_rows,
)

log = logging.getLogger(__name__)

KEY = "cluster"


def management_ports(nodes: list[JSON]) -> tuple[list[str], dict[str, str]]:
    """The default-network management port address of each node with a subnet, by node
    name, each node's in its annotation's order (IPv4 first as the cluster manager writes
    them), and each address's node subnet; a node whose subnet cannot be read has none."""
    found: list[str] = []
    subnets: dict[str, str] = {}
    for node in sorted(nodes, key=lambda n: str(n["metadata"]["name"])):
        for text in parse_node_subnets(node).get(DEFAULT_NETWORK_NAME, []):
            try:
                subnet = ipaddress.ip_network(text, strict=False)
            except ValueError:
                continue
            ip = str(management_ip(subnet))
            if ip not in found:
                found.append(ip)
                subnets[ip] = str(subnet)
    return found, subnets


def build_zone_rows(nodes: list[JSON], nb: NbCapabilities = CURRENT) -> list[DesiredRow]:
    """The group and its ACLs for the zone's ``nodes``: with one node, upstream's rows;
    with several, each host's exception is scoped to its own node's pods (upstream runs one
    node per zone: another node's host never reaches a pod).  ``nb``: what NB supports."""
    ips, subnets = management_ports(nodes)
    with_nodes = {str(n["metadata"]["name"]) for n in nodes
                  if parse_node_subnets(n).get(DEFAULT_NETWORK_NAME)}
    return build_isolation_rows(ips, subnets if len(with_nodes) > 1 else None,
                                tiers=nb.acl_tier)


class IsolationRows:
    """Keeps the group and its ACLs as the zone's nodes say."""

    def __init__(self, context: ZoneContext) -> None:
        self.context = context
        self.nodes = context.informers.get(NODES)
        self.controller = Controller(f"{FEATURE}-zone-controller", self.reconcile,
                                     initial_sync=self.remove_stale_owners)
        self.controller.watch(self.nodes, key_func=lambda _node: [KEY])
        # another OVN under the zone (an upgrade): the rows again, for what it supports
        context.on_nb_capabilities_changed(lambda _nb: self.controller.queue.add(KEY))

    def desired(self) -> list[DesiredRow]:
        return build_zone_rows(self.nodes.peek_all(), self.context.nb_capabilities)

    def reconcile(self, _key: str) -> None:
        apply(self.context.nb, OWNER, self.desired())

    def remove_stale_owners(self) -> None:
        """Rows of this feature under any other owner (an earlier layout) are removed, and so
        are the ACLs upstream wrote under their legacy names (``DenySecondary``,
        ``AllowHostARPSecondary``, ``AllowHostSecondary``): their current names replace them
        (rows already under the current names are taken over as they are)."""
        legacy = legacy_acl_rows(self.context.row_exists)
        if legacy:
            apply(self.context.nb, LEGACY_OWNER, legacy)
            log.info("isolation: migrating %d ACL(s) of legacy names", len(legacy))
        for owner in self.context.feature_owners(FEATURE) - {OWNER}:
            delete_owner(self.context.nb, owner)
            log.info("isolation: removed stale rows of %s", owner)
        self.controller.queue.add(KEY)


def pod_port_extras(pod: JSON, attachment: PodAttachment, netinfo: NetInfo, owner: Owner,
                    port: DesiredRow, nb: NbCapabilities = CURRENT) -> PodPortExtras | None:
    """An isolated pod's default-network port: member of the group, with its open ports
    (``nb``: what the zone's NB supports)."""
    if netinfo.name != DEFAULT_NETWORK_NAME or attachment.role != ROLE_INFRASTRUCTURE_LOCKED:
        return None
    links = (Link(PORT_GROUP_REF, "ports"),)
    try:
        ports = parse_open_ports((pod.get("metadata") or {}).get("annotations"))
    except OpenPortsError as exc:
        return PodPortExtras(links=links, error=str(exc))
    rows = build_open_port_acls(owner, f"{attachment.namespace}/{attachment.name}",
                                str(port.columns["name"]), ports, tiers=nb.acl_tier)
    return PodPortExtras(links=links, rows=tuple(rows))
