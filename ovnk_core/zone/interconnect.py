"""Pure builders of a routed network's interconnect rows (one OVN zone per node).

With one zone per node, each zone's cluster router reaches the other zones'
nodes through the network's transit switch (docs/design/interconnect.md), as
upstream's ``ZoneInterconnectHandler`` renders it:

* the network: the transit switch ``<P>transit_switch`` (``other_config``
  ``interconn-ts``, ``requested-tnl-key`` = 16711683 + network ID, and
  upstream's multicast keys), the same in every zone;
* a local node: the cluster router's port ``<P>rtots-<node>`` on its transit
  addresses and its peer ``<P>tstor-<node>`` (``type=router``, tunnel key =
  node ID);
* a remote node: ``<P>tstor-<node>`` of ``type=remote`` bound to the node's
  chassis (tunnel key = node ID, addresses = MAC + transit addresses) and the
  cluster router's routes to the node's subnets (and, on networks with
  gateways, its gateway router's join addresses) through its transit address.

A routed topology with ``Topology.interconnect`` calls these from its
``build_network``/``build_node``; nothing here does I/O.  A remote node whose
ID, chassis or transit addresses are not published yet gets no rows (they
come when its annotations do), as upstream suppresses the error.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

from ovnk_core.allocators.tunnel_keys import network_tunnel_key
from ovnk_core.networks.addressing import IPAddress, mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs, Owner
from ovnk_core.ovn.port_types import LSP_TYPE_ROUTER
from ovnk_core.render_state import NetworkState, NodeState
from ovnk_core.zone.owners import network_owner, node_owner

TRANSIT_SWITCH = "transit_switch"
ROUTER_TO_TRANSIT_PREFIX = "rtots-"
TRANSIT_TO_ROUTER_PREFIX = "tstor-"
LSP_TYPE_REMOTE = "remote"
REQUESTED_TNL_KEY = "requested-tnl-key"
REQUESTED_CHASSIS = "requested-chassis"
IC_NODE_KEY = "ic-node"  # upstream's external_ids key naming a remote node's routes


def network_object_ids(netinfo: NetInfo, owner: Owner, kind: str, name: str,
                       switch_or_router: bool) -> ObjectIDs:
    """The ids of a routed network's row: its network name, and on a user-defined network's
    rows its topology, and its role on its switches and routers (as upstream's
    external_ids)."""
    return owner.object_ids(kind, name, network=netinfo.name,
                            topology="" if netinfo.is_default else netinfo.topology,
                            role=netinfo.role if switch_or_router and not netinfo.is_default
                            else "")


def transit_switch_name(netinfo: NetInfo) -> str:
    """``transit_switch``, ``<P>transit_switch`` on a user-defined network (upstream)."""
    return netinfo.scoped_name(TRANSIT_SWITCH)


def transit_switch_ids(netinfo: NetInfo) -> ObjectIDs:
    return network_object_ids(netinfo, network_owner(netinfo), "TransitSwitch", TRANSIT_SWITCH,
                              True)


def transit_switch_other_config(name: str, tunnel_key: int) -> dict[str, str]:
    """Upstream's ``addTransitSwitchConfig``."""
    return {"interconn-ts": name, REQUESTED_TNL_KEY: str(tunnel_key), "mcast_snoop": "true",
            "mcast_querier": "false", "mcast_flood_unregistered": "true"}


def build_transit_switch(network: NetworkState) -> list[DesiredRow]:
    """The network's transit switch (network owner); none in the single zone."""
    if not network.interconnect:
        return []
    netinfo = network.netinfo
    name = transit_switch_name(netinfo)
    return [DesiredRow("Logical_Switch", transit_switch_ids(netinfo), {
        "name": name,
        "other_config": transit_switch_other_config(
            name, network_tunnel_key(network.network_id))})]


def transit_mac(node: NodeState) -> str:
    """The MAC of a node's transit port: from its first transit address (IPv4 first)."""
    return mac_from_ip(node.transit_addresses[0].ip)


def build_local_node(network: NetworkState, node: NodeState, cluster_router: Ref
                     ) -> list[DesiredRow]:
    """A local node's ``<P>rtots-<node>`` on the cluster router and its peer
    ``<P>tstor-<node>`` on the transit switch (node owner); none in the single zone, nor
    while its ID or transit addresses are not written."""
    if not network.interconnect or node.node_id is None or not node.transit_addresses:
        return []
    netinfo = network.netinfo
    owner = node_owner(netinfo, node.name)
    rtots = netinfo.scoped_name(ROUTER_TO_TRANSIT_PREFIX + node.name)
    switch = Ref.to("Logical_Switch", transit_switch_ids(netinfo))
    return [
        DesiredRow("Logical_Router_Port",
                   network_object_ids(netinfo, owner, "RouterToTransitSwitchPort", node.name,
                                      False),
                   {"name": rtots, "mac": transit_mac(node),
                    "networks": [str(a) for a in node.transit_addresses],
                    "options": {"mcast_flood": "true"}},
                   links=(Link(cluster_router, "ports"),)),
        DesiredRow("Logical_Switch_Port",
                   network_object_ids(netinfo, owner, "TransitSwitchToRouterPort", node.name,
                                      False),
                   {"name": netinfo.scoped_name(TRANSIT_TO_ROUTER_PREFIX + node.name),
                    "type": LSP_TYPE_ROUTER, "addresses": ["router"],
                    "options": {"router-port": rtots, REQUESTED_TNL_KEY: str(node.node_id)}},
                   links=(Link(switch, "ports"),), extra_external_ids={"node": node.name}),
    ]


def build_gateway_chassis(network: NetworkState, node: NodeState, router_port: Ref,
                          router_port_name: str) -> list[DesiredRow]:
    """The local node's chassis as the ``gateway_chassis`` of the cluster router's port to
    its switch (``rtos-``), as upstream: that port is then a distributed gateway port on its
    node (node owner); none in the single zone (one router port per node of every zone
    there, no node to pin it to), nor while the node's chassis is not published."""
    if not network.interconnect or not node.chassis_id:
        return []
    netinfo = network.netinfo
    return [DesiredRow(
        "Gateway_Chassis",
        network_object_ids(netinfo, node_owner(netinfo, node.name), "RouterToSwitchGateway",
                           node.name, False),
        {"name": f"{router_port_name}-{node.chassis_id}", "chassis_name": node.chassis_id,
         "priority": 1},
        links=(Link(router_port, "gateway_chassis"),))]


def remote_ready(node: NodeState) -> bool:
    """A remote node is rendered once its ID, chassis and transit addresses are written."""
    return node.node_id is not None and bool(node.chassis_id) and bool(node.transit_addresses)


def build_remote_node(network: NetworkState, node: NodeState, cluster_router: Ref,
                      gateway_router_ips: Sequence[IPAddress] = ()) -> list[DesiredRow]:
    """A remote node's port on the transit switch and the cluster router's routes to its
    subnets (and to ``gateway_router_ips``, each as a host route) through its transit
    address of the same family (node owner)."""
    if not network.interconnect or not remote_ready(node):
        return []
    netinfo = network.netinfo
    owner = node_owner(netinfo, node.name)
    switch = Ref.to("Logical_Switch", transit_switch_ids(netinfo))
    address = " ".join([transit_mac(node), *(str(a) for a in node.transit_addresses)])
    rows = [DesiredRow(
        "Logical_Switch_Port",
        network_object_ids(netinfo, owner, "TransitSwitchRemotePort", node.name, False),
        {"name": netinfo.scoped_name(TRANSIT_TO_ROUTER_PREFIX + node.name),
         "type": LSP_TYPE_REMOTE, "addresses": [address],
         "options": {REQUESTED_TNL_KEY: str(node.node_id), REQUESTED_CHASSIS: node.chassis_id}},
        links=(Link(switch, "ports"),), extra_external_ids={"node": node.name})]
    hops = {a.version: a.ip for a in node.transit_addresses}
    prefixes = [str(subnet) for subnet in node.subnets] + \
        [str(ipaddress.ip_network(ip)) for ip in gateway_router_ips]
    for prefix in prefixes:
        hop = hops.get(ipaddress.ip_network(prefix).version)
        if hop is None:
            continue
        rows.append(DesiredRow(
            "Logical_Router_Static_Route",
            network_object_ids(netinfo, owner, "RemoteNodeRoute", f"{node.name}:{prefix}",
                               False),
            {"ip_prefix": prefix, "nexthop": str(hop)},
            links=(Link(cluster_router, "static_routes"),),
            extra_external_ids={IC_NODE_KEY: node.name}))
    return rows


__all__ = ["IC_NODE_KEY", "LSP_TYPE_REMOTE", "TRANSIT_SWITCH", "build_gateway_chassis",
           "build_local_node",
           "build_remote_node", "build_transit_switch", "network_object_ids", "remote_ready",
           "transit_switch_name"]
