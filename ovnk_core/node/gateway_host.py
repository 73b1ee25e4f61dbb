"""The host's part of the shared gateway: its routes and its nftables table ``ip ovnk-gateway``.

The gateway bridge (``gateway``) hands packets between the uplink, the host and the
gateway routers; what the host must do with them lives here:

* **UDN egress**: a user-defined network's gateway router SNATs its pods' egress to the
  network's masquerade IP; the host masquerades that to the node IP on its way out.
* **The host's own service traffic**: the service CIDRs are routed via the masquerade next
  hop (``.4``) from the host's masquerade IP (``.2``), and the bridge hands them to the
  default network's gateway router, whose load balancers answer (the router's own address is
  the node IP, so the host must not talk to it from there).  A connection from another local
  address (a socket bound to the node IP, a NodePort redirected below) is SNATed to ``.2``.
* **NodePorts and externalIPs of the host's own connections**, as upstream's
  ``OVN-KUBE-NODEPORT`` / ``OVN-KUBE-EXTERNALIP`` rules in shared-gateway mode: a connection
  from the host to one of its own addresses and a service's NodePort, or to an externalIP
  (or LoadBalancer IP) and the service's port, is DNATed to the service's ClusterIP and port.
  For a service of a user-defined network the connection also gets the network's packet mark
  (upstream's ``0x1000 + network ID``) and leaves from the network's host-service source
  (its second masquerade IP, which upstream gives the network's management port), which the
  bridge sends to that network's gateway router.  The host reaches no UDN ClusterIP
  directly, as upstream: it goes to the default network's router, which has no load balancer
  for it.

Both IP families: the table is ``inet ovnk-gateway`` and every rule names its family
(``ip``/``ip6``), each with the masquerade subnet, service CIDRs and addresses of its own
(``fd69::2``, ``fd69::4``... for IPv6, as upstream); an older ``ip ovnk-gateway`` table is
removed (``LEGACY_TABLE_FAMILY``).

``build_*`` are pure; ``ensure_host_gateway`` sets one family's routes, idempotently, and the
gateway controller applies the table when it changes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ovnk_core.errors import CapabilityError
from ovnk_core.networks.addressing import (
    HOST_MASQUERADE_OFFSET,
    MASQUERADE_NEXT_HOP_OFFSET,
    OVN_MASQUERADE_OFFSET,
)
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME
from ovnk_core.node import netlink, nft
from ovnk_core.node.netns import run_in_netns
from ovnk_core.zone.services.lb_config import ServiceSpec

GATEWAY_TABLE = "ovnk-gateway"
TABLE_FAMILY = "inet"
LEGACY_TABLE_FAMILY = "ip"  # the table's family when the gateway was IPv4 only
PACKET_MARK_BASE = 0x1000  # upstream's pktMarkBase: a UDN's packet mark is base + network ID
NAT_OUTPUT_PRIORITY = -100  # NF_IP_PRI_NAT_DST (nft 1.0.6 names it dstnat only in prerouting)


def masquerade_next_hop(masquerade_subnet: str) -> str:
    """The masquerade next hop (``.4``): the host's route to services and the gateway
    routers' route to the masquerade subnet go through it."""
    network = ipaddress.ip_network(masquerade_subnet)
    return str(network.network_address + MASQUERADE_NEXT_HOP_OFFSET)


def host_masquerade_ip(masquerade_subnet: str) -> str:
    """The host's masquerade IP (``.2``): the source of the host's own service traffic."""
    network = ipaddress.ip_network(masquerade_subnet)
    return str(network.network_address + HOST_MASQUERADE_OFFSET)


def ovn_masquerade_ip(masquerade_subnet: str) -> str:
    """OVN's masquerade IP (``.1``): the bridge makes a gateway router's service traffic to
    an endpoint on the host come from it (the router's own address is the node IP)."""
    network = ipaddress.ip_network(masquerade_subnet)
    return str(network.network_address + OVN_MASQUERADE_OFFSET)


def packet_mark(network_id: int) -> int:
    """A user-defined network's packet mark (upstream's ``pktMarkBase + network ID``)."""
    return PACKET_MARK_BASE + network_id


@dataclass(frozen=True)
class ServiceRedirect:
    """One of the host's own service destinations, redirected to the service's ClusterIP.

    :ivar external_ip: ``""`` for a NodePort (any of the host's own addresses).
    :ivar port: the NodePort, or the service port with an externalIP.
    :ivar mark: the packet mark of the service's user-defined network; 0 on the default
        network.
    """

    protocol: str  # tcp, udp, sctp
    port: int
    cluster_ip: str
    service_port: int
    external_ip: str = ""
    mark: int = 0

    def rule(self) -> str:
        v6 = ipaddress.ip_address(self.cluster_ip).version == 6
        family, loopback = ("ip6", "::1") if v6 else ("ip", "127.0.0.0/8")
        if self.external_ip:
            match = f"{family} daddr {self.external_ip} {self.protocol} dport {self.port}"
        else:  # a NodePort on any local address but loopback (never routed out)
            match = (f"{family} daddr != {loopback} fib daddr type local {self.protocol} dport "
                     f"{self.port}")
        mark = f" meta mark set {self.mark:#x}" if self.mark else ""
        target = f"[{self.cluster_ip}]" if v6 else self.cluster_ip
        return f"{match}{mark} dnat {family} to {target}:{self.service_port}"


def service_redirects(services: Iterable[ServiceSpec], network_of_namespace: Mapping[str, str],
                      marks: Mapping[str, int], version: int = 4) -> list[ServiceRedirect]:
    """The host's NodePort and externalIP redirects of ``services`` to their version-``version``
    ClusterIP, sorted; a service of a user-defined network not in ``marks`` (no gateway of it
    on this node) has none.

    :param network_of_namespace: namespace → its primary user-defined network (absent: the
        default network).
    :param marks: user-defined network → its packet mark.
    """
    found: set[ServiceRedirect] = set()
    for spec in services:
        network = network_of_namespace.get(spec.namespace, DEFAULT_NETWORK_NAME)
        if network != DEFAULT_NETWORK_NAME and network not in marks:
            continue
        mark = marks.get(network, 0)
        cluster_ip = next((ip for ip in spec.cluster_ips
                           if ipaddress.ip_address(ip).version == version), None)
        if cluster_ip is None:
            continue
        for port in spec.ports:
            protocol = port.protocol.lower()
            if port.node_port:
                found.add(ServiceRedirect(protocol, port.node_port, cluster_ip, port.port,
                                          mark=mark))
            for ip in spec.external_ips:
                if ipaddress.ip_address(ip).version == version:
                    found.add(ServiceRedirect(protocol, port.port, cluster_ip, port.port, ip,
                                              mark))
    return sorted(found, key=lambda r: (r.external_ip, r.protocol, r.port, r.cluster_ip))


def build_host_table(masquerade_subnets: Iterable[str], bridge: str,
                     service_cidrs: Iterable[str] = (),
                     redirects: Iterable[ServiceRedirect] = (),
                     service_sources: Mapping[int, Iterable[str]] | None = None
                     ) -> nft.NftTable:
    """The host's table: UDN egress masqueraded to the node IP and, with ``service_cidrs``,
    the host's own service traffic (see the module docstring), for each IP family of
    ``masquerade_subnets`` (one subnet per family).

    Traffic to the service CIDRs keeps its masquerade source: it goes to a gateway router on
    this node, which answers to that source.

    :param service_sources: packet mark of a user-defined network → the sources its marked
        service traffic leaves from (one per family).
    """
    if isinstance(masquerade_subnets, str):
        raise TypeError("masquerade_subnets is a list of subnets (one per IP family), "
                        f"not the string {masquerade_subnets!r}")
    subnets = sorted((ipaddress.ip_network(str(m)) for m in masquerade_subnets),
                     key=lambda subnet: subnet.version)
    cidrs = [ipaddress.ip_network(str(c)) for c in service_cidrs]
    chains = [nft.NftChain("postrouting", "nat", "postrouting", "srcnat")]
    rules = []
    for masquerade_subnet in subnets:
        family = "ip" if masquerade_subnet.version == 4 else "ip6"
        kept = ", ".join(str(n) for n in [masquerade_subnet, *cidrs]
                         if n.version == masquerade_subnet.version)
        rules.append(nft.NftRule(
            "postrouting", f'{family} saddr {masquerade_subnet} {family} daddr != '
                           f'{{ {kept} }} oifname "{bridge}" masquerade',
            comment="UDN egress: network masquerade IP to node IP"))
    for masquerade_subnet in subnets:
        version = masquerade_subnet.version
        family = "ip" if version == 4 else "ip6"
        own = [str(c) for c in cidrs if c.version == version]
        if not own:
            continue
        services = f"{family} daddr {{ {', '.join(own)} }}"
        host_ip = host_masquerade_ip(str(masquerade_subnet))
        for mark, sources in sorted((service_sources or {}).items()):
            for source in sources:
                if ipaddress.ip_address(source).version == version:
                    rules.append(nft.NftRule(
                        "postrouting", f'meta mark {mark:#x} {services} oifname "{bridge}" '
                                       f"snat {family} to {source}",
                        comment="host to a UDN service: from the network's host-service IP"))
        rules.append(nft.NftRule(
            "postrouting", f'{services} {family} saddr != {host_ip} oifname "{bridge}" '
                           f"fib saddr type local snat {family} to {host_ip}",
            comment="host to services: from the host masquerade IP"))
    if cidrs:
        chains.append(nft.NftChain("output", "nat", "output", NAT_OUTPUT_PRIORITY))
        families = {subnet.version for subnet in subnets}
        rules += [nft.NftRule("output", redirect.rule(),
                              comment="host to a NodePort or externalIP: its ClusterIP")
                  for redirect in redirects
                  if ipaddress.ip_address(redirect.cluster_ip).version in families]
    return nft.NftTable(TABLE_FAMILY, GATEWAY_TABLE, chains=tuple(chains), rules=tuple(rules))


def ensure_host_gateway(netns: str | None, masquerade_subnet: str, bridge: str,
                        service_cidrs: Iterable[str] = (), bridge_mac: str | None = None,
                        mtu: int | None = None) -> None:
    """For the IP family of ``masquerade_subnet``: forwarding on, the masquerade subnet on
    the bridge and (``service_cidrs`` of that family, with ``bridge_mac``) the service CIDRs
    via the masquerade next hop, from the host's masquerade IP, with the next hop and OVN's
    masquerade IP pinned to the bridge MAC (the table is applied apart: ``build_host_table``).
    """
    network = ipaddress.ip_network(masquerade_subnet)
    cidrs = [str(c) for c in service_cidrs if ipaddress.ip_network(str(c)).version ==
             network.version]

    def sysctls() -> None:
        # the host hands service traffic from a gateway router back onto the same bridge:
        # no ICMP redirects for that (IPv6 has no switch for them; the routers ignore them)
        settings = (("/proc/sys/net/ipv4/ip_forward", "1"),
                    ("/proc/sys/net/ipv4/conf/all/rp_filter", "0"),
                    (f"/proc/sys/net/ipv4/conf/{bridge}/rp_filter", "0"),
                    ("/proc/sys/net/ipv4/conf/all/send_redirects", "0"),
                    (f"/proc/sys/net/ipv4/conf/{bridge}/send_redirects", "0")) \
            if network.version == 4 else (("/proc/sys/net/ipv6/conf/all/forwarding", "1"),)
        for path, value in settings:
            try:
                with open(path, "w") as handle:
                    handle.write(value)
            except FileNotFoundError:
                raise CapabilityError(f"IPv{network.version}", f"{path} is missing: the "
                                      f"kernel has no IPv{network.version}") from None
    run_in_netns(netns, sysctls)
    netlink.ensure_route(str(network), oif=bridge, netns=netns)
    if cidrs and bridge_mac:
        host_ip = host_masquerade_ip(str(network))
        next_hop = masquerade_next_hop(str(network))
        netlink.ensure_address(bridge, f"{host_ip}/{network.max_prefixlen}", netns=netns)
        netlink.ensure_neighbor(next_hop, bridge_mac, bridge, netns=netns)
        # replies to OVN's masquerade IP go back onto the bridge (no ARP for it there)
        netlink.ensure_neighbor(ovn_masquerade_ip(str(network)), bridge_mac, bridge,
                                netns=netns)
        for cidr in cidrs:
            netlink.ensure_route(cidr, gateway=next_hop, oif=bridge, netns=netns, onlink=True,
                                 prefsrc=host_ip, mtu=mtu)
