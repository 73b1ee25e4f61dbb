"""Pure builders of a Layer2 network's OVN Northbound rows: the switch and its pods.

A Layer2 network is one logical switch, ``<P>ovn_layer2_switch``, spanning
every node: the whole subnet lives on it, each pod attachment is a port on it
(bound on the pod's node; OVN tunnels between the chassis carry the rest).
The switch keeps the datapath tunnel key the cluster manager gave the network
(``BASE + networkID``) and each port the pod's ``tunnel_id``, as upstream
requests them.  ``P`` is the network prefix.

Primary networks also get the transit router and each node's gateway
(``primary``); this module is what both roles share.  Each builder returns the
rows of one owner (the network, one pod) for ``ovnk_core.ovn.declarative``;
nothing here does I/O.
"""

from __future__ import annotations

from ovnk_core.allocators.tunnel_keys import network_tunnel_key
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Ref
from ovnk_core.ovn.ownership import ObjectIDs, Owner
from ovnk_core.render_state import NetworkState, PodAttachment
from ovnk_core.zone.interconnect import LSP_TYPE_REMOTE
from ovnk_core.zone.owners import network_owner
from ovnk_core.zone.pod_logical_port import build_network_pod_port

SWITCH = "ovn_layer2_switch"

# upstream's multicast settings of a Layer2 switch (snooping on, no querier, unregistered
# multicast flooded)
MULTICAST_OPTIONS = {"mcast_snoop": "true", "mcast_querier": "false",
                     "mcast_flood_unregistered": "true"}


def row_ids(netinfo: NetInfo, owner: Owner, kind: str, name: str, with_role: bool = False
            ) -> ObjectIDs:
    """Upstream's external_ids of a Layer2 row (network, topology; the role on switches
    and routers) under ``owner``."""
    return owner.object_ids(kind, name, network=netinfo.name, topology=netinfo.topology,
                            role=netinfo.role if with_role else "")


def switch_name(netinfo: NetInfo) -> str:
    return netinfo.scoped_name(SWITCH)


def switch_ids(netinfo: NetInfo) -> ObjectIDs:
    return row_ids(netinfo, network_owner(netinfo), "LogicalSwitch", SWITCH, with_role=True)


def switch_ref(netinfo: NetInfo) -> Ref:
    return Ref.to("Logical_Switch", switch_ids(netinfo))


def build_switch(network: NetworkState) -> DesiredRow:
    """The network's one switch: its subnets (northd's IPAM knows them, as upstream), its
    tunnel key, multicast snooping."""
    netinfo = network.netinfo
    other_config = dict(MULTICAST_OPTIONS)
    for subnet in netinfo.subnets:
        if subnet.cidr.version == 4:
            other_config["subnet"] = str(subnet.cidr)
        else:
            other_config["ipv6_prefix"] = str(subnet.cidr.network_address)
    other_config["requested-tnl-key"] = str(network_tunnel_key(network.network_id))
    if network.interconnect:  # the switch spans the zones: it is their transit switch
        other_config["interconn-ts"] = switch_name(netinfo)
    return DesiredRow("Logical_Switch", switch_ids(netinfo),
                      {"name": switch_name(netinfo), "other_config": other_config})


def build_pod(network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
    """The pod's port on the network's switch, bound on the pod's node (with its tunnel
    ID as the port's tunnel key)."""
    return [build_network_pod_port(network.netinfo, pod, switch_ref(network.netinfo),
                                   tunnel_key=pod.tunnel_id,
                                   port_type="" if network.interconnect else None)]


def build_remote_pod(network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
    """A pod of another zone (interconnect): the same port, of type ``remote``, as
    upstream's ``AddTransitPortConfig`` makes it — the switch is the zones' transit
    switch, and its tunnel key (the pod's tunnel ID) is the same in every zone, so a packet
    for it is tunnelled to its node's chassis.  None while the pod has no tunnel ID."""
    if not network.interconnect or not pod.tunnel_id:
        return []
    return [build_network_pod_port(network.netinfo, pod, switch_ref(network.netinfo),
                                   tunnel_key=pod.tunnel_id, port_type=LSP_TYPE_REMOTE)]
