"""The Layer3 topology: its netconf rules, and its Northbound rendering (``desired``).

A Layer3 network's ``subnets`` entries are ``CIDR[/HOSTPREFIX]``: each node
gets a slice of HOSTPREFIX length (default /24 for IPv4, /64 for IPv6).
"""

from __future__ import annotations

from collections.abc import Sequence

from ovnk_core import NetworkConfigError, PodRouting, ServiceAttachment, Topology
from ovnk_core.config.values import ClusterSubnet, parse_cluster_subnet, parse_str_list
from ovnk_core.networks.addressing import IPAddress, v4_host_prefix_problem
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netconf_fields import read_join_subnets, read_mtu
from ovnk_core.networks.netinfo import NetInfo, NetworkNeeds
from ovnk_core.ovn.declarative import DesiredRow
from ovnk_core.pods.routing import primary_network_routes, routes_to
from ovnk_core.render_state import NetworkState, NodeState, PodAttachment
from ovnk_layer3 import desired
from ovnk_layer3.udn_section import Layer3Section


class Layer3Topology(Topology):
    name = "layer3"
    udn_section = Layer3Section()
    renders = True
    serves_services = True
    interconnect = True

    def service_attachment(self, network: NetworkState, node: NodeState
                           ) -> ServiceAttachment | None:
        return desired.service_attachment(network, node)

    def build_network(self, network: NetworkState) -> list[DesiredRow]:
        return desired.build_network(network)

    def build_node(self, network: NetworkState, node: NodeState) -> list[DesiredRow]:
        return desired.build_node(network, node)

    def build_pod(self, network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
        return desired.build_pod(network, pod)

    def pod_routing(self, netinfo: NetInfo, gateways: Sequence[IPAddress]) -> PodRouting:
        """Routes to the network's other node subnets through the node switch's router
        port; a primary network is also the pod's way out."""
        routes = routes_to([s.cidr for s in netinfo.subnets], gateways)
        if not netinfo.is_primary:
            return PodRouting(routes=tuple(routes))
        routes += primary_network_routes(self.config, netinfo, gateways)
        return PodRouting(gateway_ips=tuple(str(g) for g in gateways), routes=tuple(routes))

    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        if netconf.get_bool("allowPersistentIPs"):
            raise NetworkConfigError("layer3 topology does not allow persistent IPs")
        subnets = parse_layer3_subnets(netconf.get_str("subnets"))
        if not subnets:
            raise NetworkConfigError(f"network {netconf.name}: layer3 topology requires subnets")
        if netconf.get_str("excludeSubnets"):
            raise NetworkConfigError("layer3 topology does not support excludeSubnets")
        return NetInfo(
            name=netconf.name, topology=self.name, role=netconf.role,
            mtu=read_mtu(netconf, self.default_mtu(), subnets), subnets=subnets,
            join_subnets=read_join_subnets(netconf, subnets), nad_key=netconf.nad_key,
            needs=layer3_needs(netconf.role == "primary"),
        )


def layer3_needs(primary: bool) -> NetworkNeeds:
    """Per-node subnets and the transit switch; a primary network also gets each node's
    gateway and management port."""
    return NetworkNeeds(node_subnets=True, transit_switch_subnet=True,
                        node_gateway=primary, management_port=primary)


def parse_layer3_subnets(text: str) -> tuple[ClusterSubnet, ...]:
    subnets = []
    for item in parse_str_list(text):
        try:
            subnets.append(parse_cluster_subnet(item))
        except ValueError as exc:
            raise NetworkConfigError(f"invalid layer3 subnet: {exc}") from None
    for subnet in subnets:
        problem = v4_host_prefix_problem(subnet.host_prefix) if subnet.cidr.version == 4 \
            else None
        if problem:
            raise NetworkConfigError(f"invalid layer3 subnet: '{subnet}': {problem}")
    v4_prefixes = {s.host_prefix for s in subnets if s.cidr.version == 4}
    if len(v4_prefixes) > 1:
        raise NetworkConfigError("Subnets from the same IP family must use the same hostSubnet "
                                 "value")
    for i, a in enumerate(subnets):
        for b in subnets[i + 1:]:
            if a.cidr.version == b.cidr.version and a.cidr.overlaps(b.cidr):
                raise NetworkConfigError("Subnets must not overlap or contain each other")
    return tuple(subnets)
