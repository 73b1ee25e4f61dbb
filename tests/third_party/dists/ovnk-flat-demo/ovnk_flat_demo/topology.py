"""The ``flat`` topology: a secondary network that is one logical switch across all nodes.

No router, no gateway, no per-node subnet: every pod of the network gets its
addresses from the network's own subnets (the core's cluster-wide IPAM, since
the network declares no ``NetworkNeeds``), and its port on the one switch.
Pods on different nodes reach each other over the switch (OVN tunnels between
the chassis); nothing leaves the network.

UserDefinedNetworks and ClusterUserDefinedNetworks may ask for it
(``topology: Flat``, section ``flat``: ``udn_section``).

Written only against ovnk-core's plugin surface: ``Topology``, the netconf
helpers, ``DesiredRow``, the owners of ``ovnk_core.zone.owners`` and the UDN
section building blocks.
"""

from __future__ import annotations

from ovnk_core import NetworkConfigError, Topology
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netconf_fields import read_mtu, read_plain_subnets
from ovnk_core.networks.netinfo import NetInfo, NetworkNeeds
from ovnk_core.networks.port_names import pod_port_name
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs
from ovnk_core.render_state import NetworkState, NodeState, PodAttachment
from ovnk_core.zone.owners import network_owner, pod_owner
from ovnk_flat_demo.udn_section import FlatSection

SWITCH = "flat_switch"


def switch_name(netinfo: NetInfo) -> str:
    """``<network prefix>flat_switch``: the network's one logical switch."""
    return netinfo.scoped_name(SWITCH)


def switch_ids(netinfo: NetInfo) -> ObjectIDs:
    return network_owner(netinfo).object_ids("LogicalSwitch", SWITCH, network=netinfo.name,
                                             topology=netinfo.topology, role=netinfo.role)


class FlatTopology(Topology):
    name = "flat"
    supports_primary = False
    renders = True
    udn_section = FlatSection()  # UDNs and CUDNs may ask for it: spec.topology "Flat"

    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        if netconf.role != "secondary":
            raise NetworkConfigError(
                f"network {netconf.name}: flat networks are secondary only, not "
                f"{netconf.role!r}")
        subnets = read_plain_subnets(netconf)
        if not subnets:
            raise NetworkConfigError(f"network {netconf.name}: flat topology requires subnets")
        return NetInfo(name=netconf.name, topology=self.name, role=netconf.role,
                       mtu=read_mtu(netconf, self.default_mtu(), subnets), subnets=subnets,
                       nad_key=netconf.nad_key,
                       # nothing per node: cluster-wide IPAM from the subnets, no gateway,
                       # no management port, no tunnel IDs (one zone renders the switch)
                       needs=NetworkNeeds())

    def build_network(self, network: NetworkState) -> list[DesiredRow]:
        netinfo = network.netinfo
        return [DesiredRow("Logical_Switch", switch_ids(netinfo),
                           {"name": switch_name(netinfo)})]

    def build_node(self, network: NetworkState, node: NodeState) -> list[DesiredRow]:
        return []  # the switch spans every node; ports are bound where their pods run

    def build_pod(self, network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
        netinfo = network.netinfo
        owner = pod_owner(netinfo, pod.namespace, pod.name)
        address = " ".join([pod.mac, *(str(ip) for ip in pod.addresses)])
        return [DesiredRow(
            "Logical_Switch_Port",
            owner.object_ids("Pod", f"{pod.namespace}/{pod.name}", network=netinfo.name,
                             topology=netinfo.topology),
            {"name": pod_port_name(pod.nad_key, pod.namespace, pod.name),
             "addresses": [address], "port_security": [address],
             "options": {"requested-chassis": pod.node, "iface-id-ver": pod.uid}},
            links=(Link(Ref.to("Logical_Switch", switch_ids(netinfo)), "ports"),),
            extra_external_ids={"pod": "true", "namespace": pod.namespace,
                                "k8s.ovn.org/nad": pod.nad_key})]
