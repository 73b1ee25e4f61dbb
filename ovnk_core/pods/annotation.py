"""What a pod's ``k8s.ovn.org/pod-networks`` entry holds for one network.

The annotation itself (its entries, how they are written, read and merged) is
``ovnk_core.annotations.pod_networks``; this module decides an entry's content.
Routes and gateways per role and topology follow upstream
(``AddRoutesGatewayIP``): a primary network carries the pod's default gateway;
the default network of a pod with a primary UDN is ``infrastructure-locked``
and only reaches the cluster and join subnets.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Sequence

from ovnk_core.annotations.pod_networks import PodNetwork
from ovnk_core.config import Config
from ovnk_core.networks.addressing import (
    OVN_SERVICE_HAIRPIN_OFFSET,
    IPAddress,
    mac_from_ip,
)
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.pods.ip_pools import pod_gateway
from ovnk_core.pods.routing import routes_to
from ovnk_core.topology import PodRouting, Topology


def build_pod_network(config: Config, netinfo: NetInfo | None, role: str,
                      ips: Sequence[ipaddress.IPv4Interface | ipaddress.IPv6Interface],
                      tunnel_id: int | None = None,
                      topology: Topology | None = None, mac: str = "") -> PodNetwork:
    """One entry.  ``netinfo`` is ``None`` for the default network, whose routes are the
    core's; a user-defined network's gateway and routes come from ``topology`` (the plugin
    that parsed ``netinfo``, required then).  The MAC derives from the first IPv4 address
    (else the first); a network without IPAM passes one (``random_mac``)."""
    gateways = [pod_gateway(netinfo, ip.network) for ip in ips]
    if netinfo is None or netinfo.is_default:
        routing = default_network_routing(config, role, gateways)
    else:
        if topology is None:
            raise TypeError(f"network {netinfo.name}: the entry needs its topology plugin")
        routing = topology.pod_routing(netinfo, gateways)
    if ips:
        mac = mac_from_ip(next((ip.ip for ip in ips if ip.version == 4), ips[0].ip))
    return PodNetwork(ip_addresses=tuple(str(ip) for ip in ips), mac_address=mac, role=role,
                      gateway_ips=routing.gateway_ips, routes=routing.routes,
                      tunnel_id=tunnel_id, ipv6_lla_gateway_ip=routing.ipv6_lla_gateway_ip)


def random_mac() -> str:
    """A random locally administered unicast MAC (upstream's ``GenerateRandMAC``), for a pod
    on a network without IPAM, whose MAC cannot derive from an address."""
    octets = bytearray(secrets.token_bytes(6))
    octets[0] = (octets[0] | 0x02) & 0xFE
    return ":".join(f"{octet:02x}" for octet in octets)


def default_network_routing(config: Config, role: str, gateways: Sequence[IPAddress]
                            ) -> PodRouting:
    """The default network's entry: routes to the cluster and join subnets; unless the
    pod's primary network is a user-defined one (``infrastructure-locked``), also its
    default gateway and routes to the services and the service hairpin address."""
    versions = sorted({g.version for g in gateways})
    routes = routes_to([s.cidr for s in config.cluster_subnets], gateways)
    gateway_ips: list[IPAddress] = []
    if role != "infrastructure-locked":
        hairpin = [ipaddress.ip_network(
            f"{config.masquerade_subnet(v).network_address + OVN_SERVICE_HAIRPIN_OFFSET}/"
            f"{32 if v == 4 else 128}") for v in versions]
        routes += routes_to(config.service_cidrs, gateways) + routes_to(hairpin, gateways)
        gateway_ips = list(gateways)
    routes += routes_to([config.join_subnet(v) for v in versions], gateways)
    return PodRouting(gateway_ips=tuple(str(g) for g in gateway_ips), routes=tuple(routes))


__all__ = ["build_pod_network", "default_network_routing"]
