"""The zone side of UDN isolation: the port group and its ACLs, and each pod's part.

* ``IsolationRows`` (one controller, one key): converges the ``SecondaryPods`` group and its
  five ACLs (``ovn_acls``) whenever a node comes, goes or changes its default-network subnet
  (the ACLs name every node's management port address).  The zone renders every node, so
  the host exceptions list the management ports of all of them: with one node per zone, as
  upstream deploys interconnect, that is exactly upstream's rows; with several, any of the
  zone's hosts may open connections to its isolated pods (their kubelets' probes), nothing
  else may.
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


def management_ips(nodes: list[JSON]) -> list[str]:
    """The default-network management port address of each node with a subnet, by node
    name, each node's in its annotation's order (IPv4 first as the cluster manager writes
    them); a node whose subnet cannot be read has none."""
    found: list[str] = []
    for node in sorted(nodes, key=lambda n: str(n["metadata"]["name"])):
        for text in parse_node_subnets(node).get(DEFAULT_NETWORK_NAME, []):
            try:
                ip = str(management_ip(ipaddress.ip_network(text, strict=False)))
            except ValueError:
                continue
            if ip not in found:
                found.append(ip)
    return found


class IsolationRows:
    """Keeps the group and its ACLs as the zone's nodes say."""

    def __init__(self, context: ZoneContext) -> None:
        self.context = context
        self.nodes = context.informers.get(NODES)
        self.controller = Controller(f"{FEATURE}-zone-controller", self.reconcile,
                                     initial_sync=self.remove_stale_owners)
        self.controller.watch(self.nodes, key_func=lambda _node: [KEY])

    def desired(self) -> list[DesiredRow]:
        return build_isolation_rows(management_ips(self.nodes.peek_all()))

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
                    port: DesiredRow) -> PodPortExtras | None:
    """An isolated pod's default-network port: member of the group, with its open ports."""
    if netinfo.name != DEFAULT_NETWORK_NAME or attachment.role != ROLE_INFRASTRUCTURE_LOCKED:
        return None
    links = (Link(PORT_GROUP_REF, "ports"),)
    try:
        ports = parse_open_ports((pod.get("metadata") or {}).get("annotations"))
    except OpenPortsError as exc:
        return PodPortExtras(links=links, error=str(exc))
    rows = build_open_port_acls(owner, f"{attachment.namespace}/{attachment.name}",
                                str(port.columns["name"]), ports)
    return PodPortExtras(links=links, rows=tuple(rows))
