"""The node's shared gateway: OpenFlow on ``breth0`` and the host's part of UDN egress.

In shared-gateway mode the node IP lives on the OVS bridge ``breth0`` and the
gateway routers' external switch ports are patched onto the same bridge, sharing the
node IP and MAC.  Left to ``NORMAL`` switching, each gateway router would
answer ARP for the node IP and take the node's traffic (geneve included), so
the node agent owns the bridge's flows, as upstream's gateway code does:

* from the uplink: geneve to the node IP and everything else go to the host
  (``LOCAL``); ARP also to every gateway router, which must learn its next hop;
* from a user-defined network's gateway router: traffic it SNATed to the
  network's masquerade IP goes to the host (re-addressed to the bridge MAC),
  which masquerades it to the node IP (nftables) and sends it out; ARP goes
  to the uplink and the host;
* from the host: traffic and ARP for a network's masquerade IP go to that
  network's gateway router (the replies coming back); the rest to the uplink;
* the default network's gateway router SNATs to the node IP itself: its
  connections are committed to conntrack on the way out, so their replies
  (addressed to the node IP) go back to it and everything else to the host;
* service traffic from the host (``gateway_host`` routes the service CIDRs via the
  masquerade next hop ``.4``): the host's own (from its masquerade IP ``.2``) goes to the
  default network's gateway router, whose load balancers answer every default-network
  ClusterIP; the replies (to the masquerade subnet) go back to the host.  The host's
  connections to a user-defined network's NodePorts leave from that network's host-service
  IP and go to its gateway router instead.
* default services that user-defined networks may use
  (``--udn-allowed-default-services``): a UDN pod's packet to such a ClusterIP
  leaves its network's gateway router like egress (SNATed to the network's
  masquerade IP), the host routes the service CIDR back onto the bridge, and the
  bridge sends that ClusterIP to the default network's gateway router.  Every
  other address of the service CIDR the host forwards is dropped: a UDN pod
  reaches neither the default network's other services nor another UDN's.  The
  bridge answers the routers' ARP for ``.4`` with a MAC of its own, so that their
  packets to it leave the router (the bridge MAC is the routers' own).

The pod's address never leaves the node: the external host sees the node IP.

Dual stack: each IP family of the node's addresses gets the same flows with its own
addresses (the node IP, its masquerade subnet, service CIDRs and ClusterIPs, NodePorts on
``tcp6``/``udp6``), IPv6 neighbour discovery (solicitations and advertisements) standing for
ARP wherever ARP is steered, and an advertisement answering the routers' solicitation of the
masquerade next hop ``fd69::4``; the bridge's table is both families' (``merge_flows``).

``build_gateway_flows`` is pure; ``ensure_*`` apply, idempotently.  The host's side (routes,
nftables) is ``gateway_host``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ovnk_core.annotations.node_gateway import GATEWAY_CONFIG_ANNOTATION, GatewayConfigError
from ovnk_core.annotations.node_gateway import parse as parse_gateway_config
from ovnk_core.config.values import IPNetwork
from ovnk_core.errors import CapabilityError, NotReady, OvnkError, PermanentError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import SERVICES
from ovnk_core.networks.addressing import mac_from_ip, masquerade_ips
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME, network_prefix
from ovnk_core.node import netlink, nft
from ovnk_core.node.bridge_mappings import (
    read_bridge_mappings,
    with_bridge_mapping,
    write_bridge_mappings,
)
from ovnk_core.node.gateway_host import (
    GATEWAY_TABLE,
    LEGACY_TABLE_FAMILY,
    build_host_table,
    ensure_host_gateway,
    host_masquerade_ip,
    masquerade_next_hop,
    ovn_masquerade_ip,
    packet_mark,
    service_redirects,
)
from ovnk_core.node.networks import (
    primary_namespaces,
    primary_networks,
    watch_node_and_networks,
)
from ovnk_core.ovn.install import command
from ovnk_core.topology import Topology
from ovnk_core.zone.services.lb_config import ServiceSpec, parse_service

log = logging.getLogger(__name__)

CT_ZONE = 64000  # upstream's conntrack zone for the shared gateway bridge
CT_MARK_OVN = 1  # connections of the default network's gateway router
OVN_MASQ_CT_ZONE = 64002  # upstream's: service traffic of a router to an endpoint on the host
GATEWAY_KEY = "gateway"
FAMILY_UNSUPPORTED_REASON = "IPFamilyUnsupported"
Vsctl = Callable[..., str]


class GatewayError(OvnkError):
    """The gateway bridge could not be configured."""


@dataclass(frozen=True)
class GatewayNetwork:
    """A primary user-defined network with a gateway router on this node.

    :ivar masquerade_ip: its gateway router's masquerade IP (the source of its egress).
    :ivar service_ip: the source of the host's connections to its services (its second
        masquerade IP); empty: the host does not reach its services.
    :ivar mark: its packet mark (``gateway_host.packet_mark``): the host's connections to
        its NodePorts carry it.
    """

    name: str
    masquerade_ip: str
    service_ip: str = ""
    mark: int = 0


NodePort = tuple[str, int]  # (tcp|udp|sctp, port)
ExternalTarget = tuple[str, str, int]  # (tcp|udp|sctp, externalIP or LoadBalancer IP, port)


@dataclass(frozen=True)
class DefaultServiceSteering:
    """What the bridge needs to carry allowed default services for UDN pods.

    :param service_cidrs: the cluster's service CIDRs (everything else in them, from the
        host, is dropped).
    :param cluster_ips: ClusterIPs of the default-network services named in
        ``--udn-allowed-default-services`` that exist.
    """

    service_cidrs: tuple[str, ...]
    cluster_ips: tuple[str, ...]


@dataclass(frozen=True)
class _Family:
    """How the flows of one IP version spell their matches and rewrites (IPv4: ``ip``,
    ``nw_dst``, ARP; IPv6: ``ipv6``, ``ipv6_dst``, neighbour solicitations and
    advertisements), so that both families' flows have one structure."""

    version: int
    ip: str
    src: str
    dst: str
    resolution: tuple[str, ...]  # the address-resolution packets
    sender: str  # their sender's address
    target: str  # the address they ask about

    def l4(self, protocol: str) -> str:
        return protocol if self.version == 4 else f"{protocol}6"

    def set_src(self, ip: str) -> str:
        return f"mod_nw_src:{ip}" if self.version == 4 else f"set_field:{ip}->ipv6_src"

    def set_dst(self, ip: str) -> str:
        return f"mod_nw_dst:{ip}" if self.version == 4 else f"set_field:{ip}->ipv6_dst"

    def responder(self, port: int, ip: str, mac: str) -> list[str]:
        """Answer the address resolution of ``ip`` from ``port`` with ``mac``, back out
        ``port``."""
        if self.version == 4:
            return [f"table=0,priority=110,in_port={port},arp,arp_op=1,arp_tpa={ip} actions="
                    f"move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],mod_dl_src:{mac},"
                    "load:0x2->NXM_OF_ARP_OP[],move:NXM_NX_ARP_SHA[]->NXM_NX_ARP_THA[],"
                    f"set_field:{mac}->arp_sha,move:NXM_OF_ARP_SPA[]->NXM_OF_ARP_TPA[],"
                    f"set_field:{ip}->arp_spa,IN_PORT"]
        # the solicitation becomes the advertisement (router, solicited, override), its
        # source link-layer option a target one; OVS lets the target address be set only
        # on a flow that matches an advertisement, hence the second table
        return [f"table=0,priority=110,in_port={port},icmp6,icmp_type=135,nd_target={ip} "
                f"actions=move:NXM_OF_ETH_SRC[]->NXM_OF_ETH_DST[],mod_dl_src:{mac},"
                f"move:NXM_NX_IPV6_SRC[]->NXM_NX_IPV6_DST[],set_field:{ip}->ipv6_src,"
                "set_field:2->nd_options_type,set_field:136->icmpv6_type,"
                f"set_field:{ND_ROUTER_SOLICITED_OVERRIDE:#x}->nd_reserved,"
                f"resubmit(,{ND_ANSWER_TABLE})",
                f"table={ND_ANSWER_TABLE},priority=100,icmp6,icmp_type=136,nd_target={ip} "
                f"actions=set_field:{mac}->nd_tll,IN_PORT"]


_V4 = _Family(4, "ip", "nw_src", "nw_dst", ("arp",), "arp_spa", "arp_tpa")
_V6 = _Family(6, "ipv6", "ipv6_src", "ipv6_dst",
              ("icmp6,icmp_type=135", "icmp6,icmp_type=136"), "ipv6_src", "nd_target")
ND_ANSWER_TABLE = 6
ND_ROUTER_SOLICITED_OVERRIDE = 0xE0000000  # the R, S and O flags of an advertisement


def _family(ip: str) -> _Family:
    return _V4 if ipaddress.ip_network(ip, strict=False).version == 4 else _V6


def patch_port_name(bridge: str, network: str, node: str) -> str:
    """The patch port ovn-controller creates on ``bridge`` for a network's port onto the
    physical network, ``<bridge>_<prefix><node>`` (the gateway router's external switch)."""
    return f"patch-{bridge}_{network_prefix(network)}{node}-to-br-int"


def _host_endpoint_hairpin(node_ip: str, bridge_mac: str, patch: int, masq: str) -> list[str]:
    """Service traffic the default router sends to an endpoint on this host, as upstream.

    The router reaches the host's endpoint at the host's masquerade IP, from its own
    address, the node IP, which the host would drop as its own; so the bridge makes it
    node IP to node IP's port, from OVN's masquerade IP (``.1``, conntrack zone 64002), and
    undoes both on the host's replies before they go back to the router.  Upstream undoes
    the destination in a second zone; the userspace datapath loses a packet recirculated
    from a second ``ct``, and every such connection was addressed to ``.2``, so the
    destination is rewritten without conntrack.
    """
    host_ip, ovn_ip = host_masquerade_ip(masq), ovn_masquerade_ip(masq)
    f = _family(masq)
    back = f"{f.set_src(host_ip)},mod_dl_dst:{bridge_mac},output:{patch}"
    return [
        f"table=0,priority=115,in_port={patch},{f.ip},{f.src}={node_ip},{f.dst}={host_ip} "
        f"actions={f.set_dst(node_ip)},ct(commit,zone={OVN_MASQ_CT_ZONE},"
        f"nat(src={ovn_ip}),table=3)",
        f"table=3,priority=100 actions=move:NXM_OF_ETH_DST[]->NXM_OF_ETH_SRC[],"
        f"mod_dl_dst:{bridge_mac},LOCAL",
        f"table=0,priority=115,in_port=LOCAL,{f.ip},{f.dst}={ovn_ip} "
        f"actions=ct(zone={OVN_MASQ_CT_ZONE},nat,table=5)",
        f"table=5,priority=100,{f.ip},ct_state=+trk+est actions={back}",
        f"table=5,priority=100,{f.ip},ct_state=+trk+rel actions={back}",
    ]


def build_gateway_flows(node_ip: str, bridge_mac: str, uplink: int,
                        patches: Mapping[str, int], networks: list[GatewayNetwork],
                        bridge: str, node: str, masquerade_subnet: str,
                        node_ports: Mapping[str, Iterable[NodePort]] | None = None,
                        default_services: DefaultServiceSteering | None = None,
                        external_ips: Mapping[str, Iterable[ExternalTarget]] | None = None
                        ) -> list[str]:
    """The bridge's whole flow table for the IP family of ``node_ip`` (``ovs-ofctl``
    syntax), from its ports and networks; a dual-stack node's table is both families'
    (``merge_flows``).  ``networks`` carry the masquerade IPs of that family; service CIDRs,
    ClusterIPs and external IPs of the other family are left out.

    Masquerade addresses are node-local (every node's gateway router of a network has
    the same one): address resolution about them (ARP, IPv6 neighbour discovery) never
    crosses the uplink, in either direction, or one node's router (its gratuitous ARPs for
    its SNAT address) would poison another node's host.

    A NodePort belongs to one network (its service's) and is unique in the cluster:
    traffic from the uplink to the node IP and that port goes to that network's gateway
    router, whose load balancer answers it; the router's replies come from the node IP.

    :param patches: ofport of every patch port on the bridge, by port name.
    :param node_ports: network name (``default`` included) → its services' NodePorts.
    :param default_services: the service CIDRs and the allowed default services'
        ClusterIPs (none: the host's service traffic is not steered).
    :param external_ips: network → its services' externalIPs and LoadBalancer IPs with
        their ports: traffic from the uplink to one goes to that network's gateway router,
        and the router's replies from it back to the uplink (routing those addresses to
        the node is the network administrator's, or a LoadBalancer provider's, business).
    """
    masq = masquerade_subnet
    f = _family(node_ip)

    def same_family(ips: Iterable[str]) -> list[str]:
        return [ip for ip in ips if _family(ip) is f]

    flows = [flow for kind in f.resolution for flow in (
        f"table=0,priority=95,in_port={uplink},{kind},{f.sender}={masq} actions=drop",
        f"table=0,priority=95,in_port={uplink},{kind},{f.target}={masq} actions=drop",
        f"table=0,priority=95,in_port=LOCAL,{kind},{f.target}={masq} actions=drop")]
    flows.append(f"table=0,priority=100,in_port={uplink},{f.l4('udp')},{f.dst}={node_ip},"
                 "tp_dst=6081 actions=LOCAL")
    flows += [f"table=0,priority=90,in_port={uplink},{kind} actions="
              + ",".join(["LOCAL", *(str(p) for p in sorted(patches.values()))])
              for kind in f.resolution]
    flows += [
        f"table=0,priority=80,in_port={uplink} actions=LOCAL",
        "table=0,priority=50,in_port=LOCAL actions=" + str(uplink),
        "table=0,priority=0 actions=drop",
    ]
    next_hop = masquerade_next_hop(masq)
    for port in sorted(patches.values()):
        flows += [flow for kind in f.resolution for flow in (
            f"table=0,priority=95,in_port={port},{kind},{f.sender}={masq} actions=LOCAL",
            f"table=0,priority=90,in_port={port},{kind} actions={uplink},LOCAL")]
        flows += f.responder(port, next_hop, mac_from_ip(next_hop))
    default_patch = patches.get(patch_port_name(bridge, DEFAULT_NETWORK_NAME, node))
    service_cidrs = same_family(default_services.service_cidrs) if default_services else []
    if default_services is not None:
        host_ip = host_masquerade_ip(masq)
        for cidr in service_cidrs:
            # what the host forwards (UDN pods' traffic) never goes onto the uplink: not to
            # the default network's other services, not to another UDN's
            flows.append(f"table=0,priority=105,in_port=LOCAL,{f.ip},{f.dst}={cidr} "
                         "actions=drop")
        if default_patch is not None:
            for cidr in service_cidrs:
                # the host's own: every default-network ClusterIP (a UDN's finds no load
                # balancer there, and the router's attempt to route it on is dropped)
                flows += [f"table=0,priority=112,in_port=LOCAL,{f.ip},{f.src}={host_ip},"
                          f"{f.dst}={cidr} actions=output:{default_patch}",
                          f"table=0,priority=105,in_port={default_patch},{f.ip},{f.dst}={cidr} "
                          "actions=drop"]
            for ip in sorted(set(same_family(default_services.cluster_ips))):
                flows.append(f"table=0,priority=110,in_port=LOCAL,{f.ip},{f.src}={masq},"
                             f"{f.dst}={ip} actions=output:{default_patch}")
            # the default router's replies to the host and to the UDNs' masquerade IPs
            flows.append(f"table=0,priority=110,in_port={default_patch},{f.ip},{f.dst}={masq} "
                         f"actions=mod_dl_dst:{bridge_mac},LOCAL")
            flows += _host_endpoint_hairpin(node_ip, bridge_mac, default_patch, masq)
    if default_patch is not None:
        # The default network's router SNATs pod egress to the node IP itself: its
        # connections are committed to conntrack (marked) on the way out, and their
        # replies, which arrive for the node IP like the host's own, go back to it.
        flows += [
            f"table=0,priority=100,in_port={default_patch},{f.ip},{f.src}={node_ip} "
            f"actions=ct(commit,zone={CT_ZONE},exec(set_field:{CT_MARK_OVN}->ct_mark)),"
            f"output:{uplink}",
            f"table=0,priority=85,in_port={uplink},{f.ip},{f.dst}={node_ip} "
            f"actions=ct(zone={CT_ZONE},table=1)",
            f"table=1,priority=100,ct_state=+trk+est,ct_mark={CT_MARK_OVN} "
            f"actions=output:{default_patch}",
            f"table=1,priority=100,ct_state=+trk+rel,ct_mark={CT_MARK_OVN} "
            f"actions=output:{default_patch}",
            "table=1,priority=0 actions=LOCAL",
        ]
    for network in sorted(networks, key=lambda n: n.name):
        patch = patches.get(patch_port_name(bridge, network.name, node))
        if patch is None:
            continue  # ovn-controller has not patched this network in yet
        ip = network.masquerade_ip
        flows += [
            f"table=0,priority=100,in_port={patch},{f.ip},{f.src}={ip} "
            f"actions=mod_dl_dst:{bridge_mac},LOCAL",
            f"table=0,priority=100,in_port=LOCAL,{f.ip},{f.dst}={ip} actions={patch}",
            *(f"table=0,priority=100,in_port=LOCAL,{kind},{f.target}={ip} actions={patch}"
              for kind in f.resolution),
        ]
        if default_services is not None and network.service_ip:
            # the host's connections to its NodePorts (redirected to its ClusterIPs)
            flows += [f"table=0,priority=112,in_port=LOCAL,{f.ip},{f.src}={network.service_ip},"
                      f"{f.dst}={cidr} actions=output:{patch}"
                      for cidr in service_cidrs]
            flows.append(f"table=0,priority=110,in_port={patch},{f.ip},"
                         f"{f.dst}={network.service_ip} actions=mod_dl_dst:{bridge_mac},LOCAL")
        if (node_ports or {}).get(network.name):
            # its NodePorts' replies, from the node IP
            flows.append(f"table=0,priority=100,in_port={patch},{f.ip},{f.src}={node_ip} "
                         f"actions=output:{uplink}")
    served = {DEFAULT_NETWORK_NAME, *(network.name for network in networks)}
    for network_name, ports in sorted((node_ports or {}).items()):
        patch = patches.get(patch_port_name(bridge, network_name, node))
        if patch is None or network_name not in served:
            continue
        for protocol, port in sorted(set(ports)):
            flows.append(f"table=0,priority=105,in_port={uplink},{f.l4(protocol)},"
                         f"{f.dst}={node_ip},tp_dst={port} actions=output:{patch}")
    for network_name, targets in sorted((external_ips or {}).items()):
        patch = patches.get(patch_port_name(bridge, network_name, node))
        if patch is None or network_name not in served:
            continue
        wanted = sorted({target for target in targets if _family(target[1]) is f})
        for protocol, ip, port in wanted:
            flows.append(f"table=0,priority=105,in_port={uplink},{f.l4(protocol)},"
                         f"{f.dst}={ip},tp_dst={port} actions=output:{patch}")
        for ip in sorted({ip for _protocol, ip, _port in wanted}):
            flows.append(f"table=0,priority=100,in_port={patch},{f.ip},{f.src}={ip} "
                         f"actions=output:{uplink}")
    return merge_flows(flows)  # (the advertisement's second step is every router's)


def merge_flows(*tables: list[str]) -> list[str]:
    """One bridge table of several families' (``build_gateway_flows``): their flows in
    order, each once (the flows that name no family are in every one)."""
    return list(dict.fromkeys(flow for table in tables for flow in table))


def parsed_services(services: Iterable[JSON]) -> list[ServiceSpec]:
    """The services with a ClusterIP, parsed once for every use of a gateway pass."""
    return [spec for spec in map(parse_service, services) if spec is not None]


def service_node_ports(services: Iterable[ServiceSpec],
                       network_of_namespace: Mapping[str, str]) -> dict[str, list[NodePort]]:
    """network → the NodePorts of its services (a namespace not in ``network_of_namespace``
    is on the default network)."""
    found: dict[str, list[NodePort]] = {}
    for spec in services:
        network = network_of_namespace.get(spec.namespace, DEFAULT_NETWORK_NAME)
        found.setdefault(network, []).extend(
            (port.protocol.lower(), port.node_port) for port in spec.ports if port.node_port)
    return found


def service_external_ips(services: Iterable[ServiceSpec],
                         network_of_namespace: Mapping[str, str]
                         ) -> dict[str, list[ExternalTarget]]:
    """network → the externalIPs and LoadBalancer IPs of its services, with each of the
    service's ports."""
    found: dict[str, list[ExternalTarget]] = {}
    for spec in services:
        if not spec.external_ips:
            continue
        network = network_of_namespace.get(spec.namespace, DEFAULT_NETWORK_NAME)
        found.setdefault(network, []).extend(
            (port.protocol.lower(), ip, port.port) for port in spec.ports
            for ip in spec.external_ips)
    return found


def bridge_ports(vsctl: Vsctl, bridge: str) -> dict[str, int]:
    """ofport of every interface on ``bridge``, by name."""
    names = vsctl("list-ports", bridge).split()
    if not names:
        return {}
    output = vsctl("--format=json", "--columns=name,ofport", "list", "interface", *names)
    return {str(name): int(ofport) for name, ofport in json.loads(output)["data"]
            if isinstance(ofport, int) and ofport > 0}


def ensure_gateway_flows(ofctl_target: str, flows: list[str]) -> None:
    """Make the bridge's flow table exactly ``flows`` (only differences are sent)."""
    result = subprocess.run(command("ovs-ofctl", "-O", "OpenFlow13", "replace-flows",
                                    ofctl_target, "-"), input="\n".join(flows) + "\n",
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise GatewayError(f"ovs-ofctl replace-flows {ofctl_target}: {result.stderr.strip()}")


def allowed_default_cluster_ips(services: Callable[[str], JSON | None],
                                allowed: Iterable[str], network_of_namespace: Mapping[str, str]
                                ) -> tuple[str, ...]:
    """ClusterIPs of the ``allowed`` (``<ns>/<name>``) services that exist on the default
    network (a namespace of a primary UDN has no default services)."""
    found: list[str] = []
    for key in allowed:
        service = services(key)
        spec = parse_service(service) if service is not None else None
        if spec is None or spec.namespace in network_of_namespace:
            continue
        found += spec.cluster_ips
    return tuple(sorted(set(found)))


class NodeGateway:
    """Keeps the node's gateway bridge, host rules and bridge mapping converged.

    Level-driven on the Node (its gateway annotation) and the NADs (which primary networks
    exist, with their network IDs), plus a periodic pass: ovn-controller adds and removes
    the gateway routers' patch ports on its own schedule.  The bridge mapping that makes
    ovn-controller patch the routers in is set only once the flows own the bridge.
    """

    def __init__(self, informers: InformerFactory, node: str, vsctl: Vsctl, ovs_rundir: Path,
                 node_netns: str | None, masquerade_subnets: Iterable[str],
                 physical_network: str, uplink: str = "eth0", resync: float = 2.0,
                 topologies: Mapping[str, Topology] | None = None,
                 service_cidrs: Iterable[str] = (), allowed_default_services: Iterable[str] = (),
                 mtu: int | None = None, recorder: EventRecorder | None = None) -> None:
        """:param masquerade_subnets: the masquerade subnet of each IP family (the node's
            gateway serves the families of its addresses that the kernel has).
        :param topologies: the enabled topology plugins (they say which networks need a
            gateway); none: only the default network is served.
        :param service_cidrs: the cluster's service CIDRs (routed from the host through the
            bridge); none: the host's service traffic is left alone.
        :param allowed_default_services: ``<ns>/<name>`` of the default services UDN pods
            may reach (``--udn-allowed-default-services``).
        :param mtu: MTU of the host's service route (the default network's).
        :param recorder: says on the Node that a family of its addresses cannot be served
            (the kernel lacks it: Warning ``FAMILY_UNSUPPORTED_REASON``)."""
        self.topologies: Mapping[str, Topology] = topologies or {}
        self.node = node
        self.vsctl = vsctl
        self.ovs_rundir = ovs_rundir
        self.node_netns = node_netns
        self.masquerade_subnets: dict[int, IPNetwork] = {
            subnet.version: subnet for subnet in map(ipaddress.ip_network, masquerade_subnets)}
        self.physical_network = physical_network
        self.uplink = uplink
        self.resync = resync
        self.service_cidrs = tuple(str(c) for c in service_cidrs)
        self.allowed_default_services = tuple(allowed_default_services)
        self.mtu = mtu
        self.recorder = recorder
        self.controller = Controller(f"node-gateway-{node}", self.reconcile)
        self.nodes, self.nads = watch_node_and_networks(informers, node, self.controller,
                                                        GATEWAY_KEY)
        # NodePorts are steered to their network's gateway router, and the host's own
        # connections to them redirected to their ClusterIPs
        self.services = informers.get(SERVICES)
        self.controller.watch(self.services, key_func=lambda _obj: [GATEWAY_KEY])
        self._applied: list[str] | None = None
        self._applied_table: nft.NftTable | None = None
        self._host_ready: set[int] = set()
        self._unsupported: dict[int, str] = {}  # IP version → why the kernel cannot serve it
        self._neighbors: set[str] = set()

    def networks(self, version: int = 4) -> list[GatewayNetwork]:
        """Primary user-defined networks that need a node gateway, with their masquerade
        IPs of IP version ``version`` and packet marks."""
        found = []
        for network in primary_networks(self.nads.peek_all(), self.topologies):
            try:
                router_ip, service_ip = masquerade_ips(self.masquerade_subnets[version],
                                                       network.network_id)
            except (KeyError, ValueError):
                continue
            found.append(GatewayNetwork(network.name, str(router_ip), str(service_ip),
                                        packet_mark(network.network_id)))
        return found

    def reconcile(self, _key: str) -> None:
        node = self.nodes.get(self.node)
        raw = ((node or {}).get("metadata", {}).get("annotations") or {}).get(
            GATEWAY_CONFIG_ANNOTATION)
        if not raw:
            raise NotReady(f"node {self.node} has no {GATEWAY_CONFIG_ANNOTATION} yet", delay=1.0)
        try:
            gateway = parse_gateway_config(raw)
        except GatewayConfigError as exc:
            raise PermanentError(f"node {self.node}: {exc}") from None
        bridge = gateway.bridge_id
        node_ips: dict[int, str] = {}  # the node's first address of each family it serves
        for text in gateway.ips:
            ip = ipaddress.ip_interface(text).ip
            if ip.version in self.masquerade_subnets:
                node_ips.setdefault(ip.version, str(ip))
        if self.vsctl("--if-exists", "get", "bridge", bridge,
                      "other-config:hwaddr").strip('"') != gateway.mac:
            self.vsctl("set", "bridge", bridge, f'other-config:hwaddr="{gateway.mac}"')
        node_ips = self.serve_host_families(node or {}, node_ips, bridge, gateway.mac)
        ports = bridge_ports(self.vsctl, bridge)
        if self.uplink not in ports:
            raise NotReady(f"uplink {self.uplink} is not on {bridge} yet", delay=1.0)
        patches = {name: port for name, port in ports.items() if name.startswith("patch-")}
        networks = {version: self.networks(version) for version in node_ips}
        namespaces = primary_namespaces(
            self.nads.peek_all(), primary_networks(self.nads.peek_all(), self.topologies))
        services = parsed_services(self.services.peek_all())
        node_ports = service_node_ports(services, namespaces)
        steering = None
        if self.service_cidrs:
            steering = DefaultServiceSteering(self.service_cidrs, allowed_default_cluster_ips(
                self.services.peek, self.allowed_default_services, namespaces))
        external_ips = service_external_ips(services, namespaces)
        flows = merge_flows(*(
            build_gateway_flows(node_ip, gateway.mac, ports[self.uplink], patches,
                                networks[version], bridge, self.node,
                                str(self.masquerade_subnets[version]), node_ports, steering,
                                external_ips)
            for version, node_ip in sorted(node_ips.items())))
        here = {version: [network for network in found
                          if patch_port_name(bridge, network.name, self.node) in patches]
                for version, found in networks.items()}
        for network in (network for found in here.values() for network in found):
            # (a network not rendered on this node yet has no router here)
            if network.masquerade_ip not in self._neighbors:
                # the routers' external ports use the node's MAC: no ARP or neighbour
                # discovery needed (upstream pins its masquerade next hops the same way)
                netlink.ensure_neighbor(network.masquerade_ip, gateway.mac, bridge,
                                        netns=self.node_netns)
                self._neighbors.add(network.masquerade_ip)
        if flows != self._applied:
            ensure_gateway_flows(f"unix:{self.ovs_rundir / bridge}.mgmt", flows)
            self._applied = flows
            log.info("gateway %s: %d flows (%d patch ports)", bridge, len(flows), len(patches))
        marks = {n.name: n.mark for found in here.values() for n in found}
        sources: dict[int, list[str]] = {}
        for network in (network for found in here.values() for network in found):
            sources.setdefault(network.mark, []).append(network.service_ip)
        table = build_host_table(
            [str(self.masquerade_subnets[version]) for version in sorted(node_ips)], bridge,
            self.service_cidrs,
            [redirect for version in sorted(node_ips)
             for redirect in service_redirects(services, namespaces, marks, version)],
            sources)
        if table != self._applied_table:
            nft.apply_table(table, netns=self.node_netns)
            self._applied_table = table
            log.info("gateway: host table %s %s, %d rules", table.family, table.name,
                     len(table.rules))
        current = read_bridge_mappings(self.vsctl)
        mappings = with_bridge_mapping(current, self.physical_network, bridge)
        if current != mappings:
            write_bridge_mappings(self.vsctl, mappings)
            log.info("gateway: ovn-bridge-mappings=%s", mappings)
        self.controller.reconcile_after(GATEWAY_KEY, self.resync)

    def serve_host_families(self, node: JSON, node_ips: dict[int, str], bridge: str,
                            bridge_mac: str) -> dict[int, str]:
        """Set the host's side up for each IP family of ``node_ips`` (once per family);
        the families it serves.  A family the kernel lacks (IPv6 disabled at boot) is left
        out, with a Warning on the Node, so that the other family keeps working."""
        for version in sorted(set(node_ips) - self._host_ready - set(self._unsupported)):
            try:
                ensure_host_gateway(self.node_netns, str(self.masquerade_subnets[version]),
                                    bridge, self.service_cidrs, bridge_mac, self.mtu)
            except CapabilityError as exc:
                self._unsupported[version] = str(exc)
                log.warning("gateway: IPv%d of node %s not served: %s", version, self.node,
                            exc)
                if self.recorder is not None:
                    self.recorder.event(node, WARNING, FAMILY_UNSUPPORTED_REASON,
                                        f"the node's IPv{version} address "
                                        f"{node_ips[version]} is not served by its gateway: "
                                        f"{exc}")
                continue
            if not self._host_ready:  # an IPv4-only release's table is replaced by ours
                nft.delete_table(LEGACY_TABLE_FAMILY, GATEWAY_TABLE, netns=self.node_netns)
            self._host_ready.add(version)
        return {version: ip for version, ip in node_ips.items() if version in self._host_ready}

    def start(self) -> None:
        """Start the controller (the informers belong to the agent's factory)."""
        self.controller.start()
        self.controller.queue.add(GATEWAY_KEY)

    def stop(self) -> None:
        self.controller.stop()
