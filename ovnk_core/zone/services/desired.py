"""Service load balancers and load balancer groups as Northbound rows (pure).

The groups belong to the network (its owner, next to its routers): every
network that carries services has ``clusterLBGroup``, which holds the
cluster-wide load balancers, and, as upstream, ``clusterSwitchLBGroup`` and
``clusterRouterLBGroup`` (for NodePort templates, which user-defined
networks never use, so they stay empty).  The topology names, per node, the
switches and gateway routers that serve services (``Topology.service_attachment``);
those rows get the groups, and the node's own load balancers are linked
into them directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs, Owner
from ovnk_core.topology import ServiceAttachment, Topology
from ovnk_core.zone.owners import network_owner
from ovnk_core.zone.services import names
from ovnk_core.zone.services.lb_config import LoadBalancer

ROLE_PRIMARY = "primary"


def carries_services(topology: Topology, netinfo: NetInfo) -> bool:
    """Whether the network has services: the default network and primary networks, of a
    topology that serves them."""
    return topology.serves_services and (netinfo.is_default or netinfo.is_primary)


def group_ids(netinfo: NetInfo, group: str) -> ObjectIDs:
    name = names.group_name(netinfo, group)
    return network_owner(netinfo).object_ids("LoadBalancerGroup", name, primary=name)


def group_ref(netinfo: NetInfo, group: str) -> Ref:
    return Ref.to("Load_Balancer_Group", group_ids(netinfo, group))


def group_rows(netinfo: NetInfo) -> list[DesiredRow]:
    """The network's three load balancer groups (rows of the network owner)."""
    return [DesiredRow("Load_Balancer_Group", ids, {"name": ids.primary_id})
            for ids in (group_ids(netinfo, group) for group in names.LB_GROUPS)]


def with_groups(rows: Iterable[DesiredRow], netinfo: NetInfo,
                attachments: Iterable[ServiceAttachment]) -> list[DesiredRow]:
    """``rows`` with the groups added to the switches and routers the attachments name:
    switches hold ``clusterLBGroup`` and ``clusterSwitchLBGroup``, gateway routers
    ``clusterLBGroup`` and ``clusterRouterLBGroup`` (as upstream)."""
    switches: set[Ref] = set()
    routers: set[Ref] = set()
    for attachment in attachments:
        switches.update(attachment.switches)
        routers.update(attachment.routers)
    cluster = group_ref(netinfo, names.CLUSTER_LB_GROUP)
    on_switch = [cluster, group_ref(netinfo, names.CLUSTER_SWITCH_LB_GROUP)]
    on_router = [cluster, group_ref(netinfo, names.CLUSTER_ROUTER_LB_GROUP)]
    result = []
    for row in rows:
        groups = on_switch if row.ref in switches else on_router if row.ref in routers \
            else None
        if groups is not None:
            row = DesiredRow(row.table, row.ids, {**row.columns, "load_balancer_group": groups},
                             row.links, row.extra_external_ids)
        result.append(row)
    return result


def lb_ids(netinfo: NetInfo, owner: Owner, name: str) -> ObjectIDs:
    if netinfo.is_default:
        return owner.object_ids(names.KIND_SERVICE, name)
    return owner.object_ids(names.KIND_SERVICE, name, network=netinfo.name, role=ROLE_PRIMARY)


def load_balancer_rows(netinfo: NetInfo, owner: Owner, balancers: Sequence[LoadBalancer],
                       attachments: Mapping[str, ServiceAttachment]) -> list[DesiredRow]:
    """The service's ``Load_Balancer`` rows: cluster-wide ones in the cluster group, a
    node's ones on that node's switches and routers (a node without an attachment — its
    gateway not ready yet — gets none)."""
    cluster_group = group_ref(netinfo, names.CLUSTER_LB_GROUP)
    rows = []
    for lb in balancers:
        if not lb.node:
            links: tuple[Link, ...] = (Link(cluster_group, "load_balancer"),)
        else:
            attachment = attachments.get(lb.node)
            if attachment is None:
                continue
            links = tuple([*(Link(ref, "load_balancer") for ref in attachment.routers
                             if lb.on_router),
                           *(Link(ref, "load_balancer") for ref in attachment.switches
                             if lb.on_switch)])
            if not links:
                continue
        rows.append(DesiredRow("Load_Balancer", lb_ids(netinfo, owner, lb.name),
                               {"name": lb.name, "protocol": lb.protocol,
                                "vips": dict(lb.vips), "options": dict(lb.options),
                                "selection_fields": list(lb.selection_fields)},
                               links=links,
                               extra_external_ids={names.KIND_KEY: names.KIND_SERVICE}))
    return rows
