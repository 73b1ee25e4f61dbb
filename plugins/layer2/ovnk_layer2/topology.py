"""The Layer2 topology: its netconf rules, and its Northbound rendering (``desired``).

A Layer2 network is one subnet shared by all nodes; a primary Layer2 network
needs subnets and also gets a transit subnet for its transit router.
"""

from __future__ import annotations

from collections.abc import Sequence

from ovnk_core import NetworkConfigError, PodRouting, ServiceAttachment, Topology
from ovnk_core.config.values import ClusterSubnet, IPNetwork
from ovnk_core.networks.addressing import IPAddress, link_local_from_mac, mac_from_ip
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netconf_fields import (
    read_exclude_subnets,
    read_ips,
    read_join_subnets,
    read_mtu,
    read_persistent_ips,
    read_plain_subnets,
    read_subnets_within,
)
from ovnk_core.networks.netinfo import NetInfo, NetworkNeeds
from ovnk_core.ovn.declarative import DesiredRow
from ovnk_core.pods.routing import primary_network_routes
from ovnk_core.render_state import NetworkState, NodeState, PodAttachment
from ovnk_core.zone.owners import pod_owner
from ovnk_layer2 import desired, primary
from ovnk_layer2.udn_section import PRECONFIGURED_KEYS, Layer2Section


class Layer2Topology(Topology):
    name = "layer2"
    udn_section = Layer2Section()
    renders = True
    renders_default_network = False  # one switch across nodes: not the default network's shape
    serves_services = True
    interconnect = True  # the switch and the transit router span the zones
    renders_remote_pods = True  # a pod of another zone is a remote port on the switch

    def service_attachment(self, network: NetworkState, node: NodeState
                           ) -> ServiceAttachment | None:
        """Primary networks only (a secondary network has no services)."""
        if not network.netinfo.is_primary:
            return None
        return primary.service_attachment(network, node)

    def build_network(self, network: NetworkState) -> list[DesiredRow]:
        rows = [desired.build_switch(network)]
        if network.netinfo.is_primary:
            rows += primary.build_router(network)
        return rows

    def build_node(self, network: NetworkState, node: NodeState) -> list[DesiredRow]:
        """Nothing of a secondary network (its switch spans every node; ports are bound
        where their pods run); a primary network's gateway on the node, or, for another
        zone's node, the transit router's remote port to that gateway."""
        if not network.netinfo.is_primary:
            return []
        if node.remote:
            return primary.build_remote_gateway(network, node)
        return primary.build_gateway(network, node)

    def build_remote_pod(self, network: NetworkState, pod: PodAttachment
                         ) -> list[DesiredRow]:
        return desired.build_remote_pod(network, pod)

    def build_pod(self, network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
        rows = desired.build_pod(network, pod)
        if network.netinfo.is_primary:
            rows += primary.build_pod_egress(
                network, pod, pod_owner(network.netinfo, pod.namespace, pod.name))
        return rows

    def pod_routing(self, netinfo: NetInfo, gateways: Sequence[IPAddress]) -> PodRouting:
        """A secondary Layer2 network has no router: nothing.  A primary one is the pod's
        way out; an IPv6 pod also gets the router port's link-local address as gateway."""
        if not netinfo.is_primary:
            return PodRouting()
        lla = ""
        if any(g.version == 6 for g in gateways):
            # The router port's MAC comes from the v4 gateway IP, or the v6 one without v4.
            router_ip = next((g for g in gateways if g.version == 4), gateways[0])
            lla = str(link_local_from_mac(mac_from_ip(router_ip)))
        return PodRouting(gateway_ips=tuple(str(g) for g in gateways),
                          routes=tuple(primary_network_routes(self.config, netinfo, gateways)),
                          ipv6_lla_gateway_ip=lla)

    def _preconfigured(self, netconf: NetConf, subnets: tuple[ClusterSubnet, ...]) -> tuple[
            tuple[IPNetwork, ...], tuple[IPNetwork, ...], tuple[IPAddress, ...]]:
        """``reservedSubnets``, ``infrastructureSubnets``, ``defaultGatewayIPs`` (a primary
        network's preconfigured addresses, with ``--enable-preconfigured-udn-addresses``)."""
        given = [key for key in PRECONFIGURED_KEYS if netconf.raw.get(key)]
        if not given:
            return (), (), ()
        if not self.config.enable_preconfigured_udn_addresses:
            raise NetworkConfigError(f"{', '.join(given)} set but preconfigured UDN addresses "
                                     "are disabled (--enable-preconfigured-udn-addresses)")
        if netconf.role != "primary":
            raise NetworkConfigError(f"{given[0]} is only supported for Primary network")
        reserved = read_subnets_within(netconf, "reservedSubnets", subnets)
        infrastructure = read_subnets_within(netconf, "infrastructureSubnets", subnets)
        if any(a.overlaps(b) for a in reserved for b in infrastructure):
            raise NetworkConfigError("infrastructureSubnets and reservedSubnets must not "
                                     "overlap")
        gateways = read_ips(netconf, "defaultGatewayIPs")
        if gateways:
            if not all(any(ip in s.cidr for s in subnets) for ip in gateways):
                raise NetworkConfigError("defaultGatewayIPs must belong to one of the subnets "
                                         "specified in the subnets field")
            if len(gateways) != len(subnets):
                raise NetworkConfigError("defaultGatewayIPs must be specified for all IP "
                                         "families")
            if infrastructure and not all(any(ip in n for n in infrastructure)
                                          for ip in gateways):
                raise NetworkConfigError("defaultGatewayIPs have to belong to "
                                         "infrastructureSubnets")
        return reserved, infrastructure, gateways

    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        subnets = read_plain_subnets(netconf)
        if netconf.role == "primary" and not subnets:
            raise NetworkConfigError("the subnet attribute must be defined for layer2 primary "
                                     "user defined networks")
        allow_persistent = read_persistent_ips(netconf, self.config)
        if allow_persistent and not subnets:
            raise NetworkConfigError("allowPersistentIPs is set but the network has no subnets")
        transit = netconf.get_cidrs("transitSubnet") if netconf.role == "primary" else ()
        reserved, infrastructure, gateways = self._preconfigured(netconf, subnets)
        return NetInfo(
            name=netconf.name, topology=self.name, role=netconf.role,
            mtu=read_mtu(netconf, self.default_mtu(), subnets), subnets=subnets,
            exclude_subnets=read_exclude_subnets(netconf, subnets),
            join_subnets=read_join_subnets(netconf, subnets), transit_subnets=transit,
            allow_persistent_ips=allow_persistent, nad_key=netconf.nad_key,
            reserved_subnets=reserved, infrastructure_subnets=infrastructure,
            default_gateway_ips=gateways,
            # one switch across nodes: pods get tunnel IDs; a primary network's transit
            # router needs one more tunnel key, and its nodes a gateway
            needs=NetworkNeeds(pod_tunnel_ids=True,
                               extra_tunnel_keys=1 if netconf.role == "primary" else 0,
                               node_gateway=netconf.role == "primary"),
        )
