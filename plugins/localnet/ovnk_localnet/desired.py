"""Pure builders of a Localnet network's OVN Northbound rows: its switch, its localnet port
and its pods' ports.

A Localnet network is one logical switch, ``<P>ovn_localnet_switch``, whose localnet
port ``<P>ovn_localnet_port`` (``network_name`` = the physical network's name, and
``tag_request`` = the access VLAN when there is one) puts it on the physical network
each node maps to an OVS bridge (``ovn-bridge-mappings``).  Pods' ports are on that
switch, bound on their nodes; traffic between them and to the physical network leaves
each node through its bridge, never through a tunnel.  As upstream: no load balancer
groups, no requested tunnel key, no multicast settings; ``other_config`` carries the
subnets only when the network has IPAM.

Upstream leaves the localnet port without external_ids; ovnk gives every row it owns its
external_ids (the network's owner), or it would never touch the row again.  ``P`` is the
network prefix.  Nothing here does I/O.
"""

from __future__ import annotations

from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs, Owner
from ovnk_core.ovn.port_types import LSP_TYPE_LOCALNET
from ovnk_core.render_state import NetworkState, PodAttachment
from ovnk_core.zone.owners import network_owner
from ovnk_core.zone.pod_logical_port import build_network_pod_port

SWITCH = "ovn_localnet_switch"
LOCALNET_PORT = "ovn_localnet_port"


def row_ids(netinfo: NetInfo, owner: Owner, kind: str, name: str, with_role: bool = False
            ) -> ObjectIDs:
    """Upstream's external_ids of a Localnet row (network, topology; the role on the
    switch) under ``owner``."""
    return owner.object_ids(kind, name, network=netinfo.name, topology=netinfo.topology,
                            role=netinfo.role if with_role else "")


def switch_name(netinfo: NetInfo) -> str:
    return netinfo.scoped_name(SWITCH)


def localnet_port_name(netinfo: NetInfo) -> str:
    return netinfo.scoped_name(LOCALNET_PORT)


def switch_ref(netinfo: NetInfo) -> Ref:
    return Ref.to("Logical_Switch",
                  row_ids(netinfo, network_owner(netinfo), "LogicalSwitch", SWITCH, True))


def build_network(network: NetworkState) -> list[DesiredRow]:
    """The switch and its port onto the physical network."""
    netinfo = network.netinfo
    owner = network_owner(netinfo)
    other_config: dict[str, str] = {}
    for subnet in netinfo.subnets:
        if subnet.cidr.version == 4:
            other_config["subnet"] = str(subnet.cidr)
        else:
            other_config["ipv6_prefix"] = str(subnet.cidr.network_address)
    port: dict[str, object] = {
        "name": localnet_port_name(netinfo), "type": LSP_TYPE_LOCALNET,
        "addresses": ["unknown"],
        "options": {"network_name": netinfo.physical_network_name or netinfo.name}}
    if netinfo.vlan_id:
        port["tag_request"] = [netinfo.vlan_id]
    return [
        DesiredRow("Logical_Switch", row_ids(netinfo, owner, "LogicalSwitch", SWITCH, True),
                   {"name": switch_name(netinfo), "other_config": other_config}),
        DesiredRow("Logical_Switch_Port",
                   row_ids(netinfo, owner, "LocalnetPort", LOCALNET_PORT), port,
                   links=(Link(switch_ref(netinfo), "ports"),)),
    ]


def build_pod(network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
    """The pod's port on the network's switch, bound on the pod's node."""
    return [build_network_pod_port(network.netinfo, pod, switch_ref(network.netinfo))]
