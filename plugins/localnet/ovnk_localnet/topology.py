"""The Localnet topology: its netconf rules, and its Northbound rendering (``desired``).

A Localnet network bridges pods to a physical network named by
``physicalNetworkName`` (an OVS bridge mapping on the nodes), optionally on
an access VLAN.  It is secondary only, and its default MTU is the cluster
MTU + 100 because it does not pay for the overlay encapsulation.
"""

from __future__ import annotations

from ovnk_core import NetworkConfigError, NodeHost, Topology
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netconf_fields import (
    read_exclude_subnets,
    read_mtu,
    read_persistent_ips,
    read_plain_subnets,
)
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow
from ovnk_core.render_state import NetworkState, NodeState, PodAttachment
from ovnk_localnet import desired
from ovnk_localnet.udn_section import LocalnetSection, localnet_default_mtu


class LocalnetTopology(Topology):
    name = "localnet"
    udn_section = LocalnetSection()
    supports_primary = False
    renders = True
    renders_default_network = False  # secondary only

    def node_attachment_problem(self, netinfo: NetInfo, host: NodeHost) -> str | None:
        """The node's OVS must map the physical network to a bridge (the administrator's
        part, as upstream: ovnk never invents a mapping)."""
        physical = netinfo.physical_network_name or netinfo.name
        if physical == host.gateway_physical_network():
            return (f"physical network {physical!r} is the node's gateway bridge's, whose "
                    "flows carry only the gateway's traffic: map the Localnet network's "
                    "physical network to a bridge of its own")
        mappings = host.bridge_mappings()
        if physical in mappings:
            return None
        known = ", ".join(f"{n}:{b}" for n, b in mappings.items()) or "none"
        return (f"no bridge mapping for physical network {physical!r} in this node's "
                f"ovn-bridge-mappings (it has: {known}); map it to an OVS bridge on the "
                f"physical network, e.g. ovs-vsctl set open_vswitch . "
                f'external_ids:ovn-bridge-mappings="<existing>,{physical}:<bridge>"')

    def build_network(self, network: NetworkState) -> list[DesiredRow]:
        return desired.build_network(network)

    def build_node(self, network: NetworkState, node: NodeState) -> list[DesiredRow]:
        """Nothing per node: the switch spans every node, each leaving through its own
        bridge mapping."""
        return []

    def build_pod(self, network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
        return desired.build_pod(network, pod)

    def default_mtu(self) -> int:
        return localnet_default_mtu(self.config)

    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        if netconf.role != "secondary":
            raise NetworkConfigError(
                f"unexpected network field \"role\" {netconf.role!r} for \"localnet\" "
                "topology, only \"secondary\" role is supported"
            )
        if netconf.get_str("joinSubnet"):
            raise NetworkConfigError("localnet topology does not support joinSubnet")
        physical = netconf.get_str("physicalNetworkName")
        if any(ch in physical for ch in ",:"):
            raise NetworkConfigError("physicalNetworkName cannot contain `,` or `:` characters")
        vlan = netconf.get_int("vlanID")
        if vlan is not None and not 1 <= vlan <= 4094:
            raise NetworkConfigError(f"vlanID {vlan} is out of range (1..4094)")
        subnets = read_plain_subnets(netconf)
        return NetInfo(
            name=netconf.name, topology=self.name, role=netconf.role,
            mtu=read_mtu(netconf, self.default_mtu(), subnets), subnets=subnets,
            exclude_subnets=read_exclude_subnets(netconf, subnets),
            vlan_id=vlan, physical_network_name=physical or netconf.name,
            allow_persistent_ips=read_persistent_ips(netconf, self.config),
            nad_key=netconf.nad_key,
        )
