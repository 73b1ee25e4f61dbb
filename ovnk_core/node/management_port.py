"""A node's management ports: the host's own interface on each network.

The zone controller renders, per node and network, the logical port
``k8s-<prefix><node>`` with the node subnet's ``.2`` address.  The node side is
an OVS internal port bound to it: ``ovn-k8s-mp0`` for the default network
(host to pod traffic, kubelet probes), ``ovn-k8s-mp<network-id>`` for each
primary user-defined network, with the ``.2`` addresses and a route to each
of the network's cluster subnets via the ``.1`` router address.

A user-defined network's routes must not leak into the host's main table:
upstream puts its management port in a VRF.  Where the kernel has no VRF
(this machine), the routes go to a policy-routing table of their own, chosen
by rules for traffic from and to the port, and the agent says so once in an
event instead of failing.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from ovnk_core.annotations.node_subnets import parse_node_subnets
from ovnk_core.errors import CapabilityError, NotReady
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.networks.addressing import gateway_ip, mac_from_ip, management_ip
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME, network_prefix
from ovnk_core.node import netlink
from ovnk_core.node.networks import primary_networks, watch_node_and_networks
from ovnk_core.node.pod_network import INTEGRATION_BRIDGE, Vsctl
from ovnk_core.topology import Topology

log = logging.getLogger(__name__)

DEFAULT_PORT = "ovn-k8s-mp0"
PORTS_KEY = "management-ports"
TABLE_BASE = 1000  # routing table of a UDN's management port: TABLE_BASE + network ID
RULE_PRIORITY = 2000


@dataclass(frozen=True)
class ManagementPort:
    """The host end of one network's management port on this node."""

    network: str
    ifname: str
    port_name: str
    mac: str
    addresses: tuple[str, ...]
    routes: tuple[tuple[str, str], ...]  # (cluster subnet, via .1)
    table: int | None  # None: the main table (default network)

    @property
    def vrf(self) -> str:
        return f"{self.ifname}-vrf"


def build_management_port(node: str, network: str, network_id: int,
                          node_subnets: list[str], cluster_subnets: list[str]
                          ) -> ManagementPort | None:
    """The management port of ``network`` on ``node``; None when the node has no subnet."""
    subnets = [ipaddress.ip_network(cidr) for cidr in node_subnets]
    if not subnets:
        return None
    addresses = tuple(f"{management_ip(s)}/{s.prefixlen}" for s in subnets)
    v4 = [s for s in subnets if s.version == 4]
    mac = mac_from_ip(management_ip((v4 or subnets)[0]))
    routes = tuple((str(ipaddress.ip_network(cluster)), str(gateway_ip(subnet)))
                   for cluster in cluster_subnets for subnet in subnets
                   if ipaddress.ip_network(cluster).version == subnet.version)
    default = network == DEFAULT_NETWORK_NAME
    return ManagementPort(
        network=network, ifname=DEFAULT_PORT if default else f"ovn-k8s-mp{network_id}",
        port_name=f"k8s-{network_prefix(network)}{node}", mac=mac, addresses=addresses,
        routes=routes, table=None if default else TABLE_BASE + network_id)


def ensure_management_port(port: ManagementPort, vsctl: Vsctl, netns: str | None,
                           use_vrf: bool) -> None:
    """Create (or complete) the port, its addresses, routes and, for a UDN, its own VRF or
    routing table (kept apart from the host's and other networks' routes).

    :param use_vrf: put a UDN's port in a VRF (else: policy-routing table and rules).
    """
    vsctl("--may-exist", "add-port", INTEGRATION_BRIDGE, port.ifname, "--", "set", "interface",
          port.ifname, "type=internal", f'mac="{port.mac}"',
          f"external_ids:iface-id={port.port_name}")
    if netlink.link_index(port.ifname, netns=netns) is None:
        raise CapabilityError("management port", f"{port.ifname} did not appear in the node "
                                                 "namespace (is ovs-vswitchd running there?)")
    if port.table is not None and use_vrf:
        netlink.ensure_vrf(port.vrf, port.table, netns=netns)
        netlink.set_link(port.vrf, netns=netns, up=True)
        netlink.set_link(port.ifname, netns=netns, master=port.vrf)
    netlink.set_link(port.ifname, netns=netns, mac=port.mac, up=True)
    isolated = port.table is not None and not use_vrf
    for cidr in port.addresses:
        # a UDN's subnet must not appear in the main table (networks may overlap)
        netlink.ensure_address(port.ifname, cidr, netns=netns, prefix_route=not isolated)
        if isolated:
            netlink.ensure_route(str(ipaddress.ip_interface(cidr).network), oif=port.ifname,
                                 table=port.table or 254, netns=netns)
    table = port.table if port.table is not None else 254
    for destination, via in port.routes:
        netlink.ensure_route(destination, gateway=via, oif=port.ifname, table=table,
                             netns=netns, onlink=isolated)
    if port.table is not None and not use_vrf:
        # traffic in from the port, out through it (sockets bound to it, as a VRF would
        # require), and from its address: all use the network's table
        netlink.ensure_rule(RULE_PRIORITY, port.table, iifname=port.ifname, netns=netns)
        netlink.ensure_rule(RULE_PRIORITY, port.table, oifname=port.ifname, netns=netns)
        for cidr in port.addresses:
            netlink.ensure_rule(RULE_PRIORITY, port.table,
                                src=str(ipaddress.ip_interface(cidr).ip), netns=netns)


def delete_management_port(ifname: str, table: int | None, vsctl: Vsctl,
                           netns: str | None) -> None:
    """Remove a management port that no network needs any more, with its rules and VRF."""
    vsctl("--if-exists", "del-port", INTEGRATION_BRIDGE, ifname)
    netlink.delete_link(f"{ifname}-vrf", netns=netns)
    if table is not None:
        for rule in netlink.list_rules(netns=netns):
            if rule.get("table") == table and rule.get("priority") == RULE_PRIORITY:
                netlink.delete_rule(RULE_PRIORITY, table, src=rule.get("src"),
                                    iifname=rule.get("iifname"), netns=netns)


class ManagementPorts:
    """Keeps one management port per network this node has a subnet of.

    Level-driven on the Node (``k8s.ovn.org/node-subnets``) and the NADs; ports of
    networks that went away are removed (found by name in OVS, ``ovn-k8s-mp*``).
    """

    def __init__(self, informers: InformerFactory, node: str, vsctl: Vsctl,
                 node_netns: str | None, default_cluster_subnets: list[str],
                 recorder: EventRecorder,
                 topologies: Mapping[str, Topology] | None = None) -> None:
        """:param topologies: the enabled topology plugins (they say which networks need a
            management port); none: only the default network's port."""
        self.topologies: Mapping[str, Topology] = topologies or {}
        self.node = node
        self.vsctl = vsctl
        self.node_netns = node_netns
        self.default_cluster_subnets = default_cluster_subnets
        self.recorder = recorder
        self.controller = Controller(f"node-management-ports-{node}", self.reconcile)
        self.nodes, self.nads = watch_node_and_networks(informers, node, self.controller,
                                                        PORTS_KEY)
        self._use_vrf: bool | None = None
        self._vrf_reported = False

    def desired(self, node: JSON) -> list[ManagementPort]:
        subnets = parse_node_subnets(node)
        ports = [build_management_port(self.node, DEFAULT_NETWORK_NAME, 0,
                                       subnets.get(DEFAULT_NETWORK_NAME, []),
                                       self.default_cluster_subnets)]
        for network in primary_networks(self.nads.peek_all(), self.topologies):
            if network.needs.management_port:
                ports.append(build_management_port(self.node, network.name,
                                                   network.network_id,
                                                   subnets.get(network.name, []),
                                                   list(network.cluster_subnets)))
        return [port for port in ports if port is not None]

    def reconcile(self, _key: str) -> None:
        node = self.nodes.get(self.node)
        if node is None:
            raise NotReady(f"node {self.node} not found yet", delay=1.0)
        wanted = self.desired(node)
        if self._use_vrf is None:
            self._use_vrf = netlink.vrf_supported(self.node_netns)
        if not self._use_vrf and not self._vrf_reported and any(
                port.table is not None for port in wanted):
            self._vrf_reported = True
            log.warning("no VRF support in the kernel: UDN management ports use "
                        "policy-routing tables")
            self.recorder.event(node, WARNING, "VRFUnsupported",
                                "the kernel has no VRF support: user-defined networks' "
                                "management ports use policy-routing tables "
                                f"({TABLE_BASE}+network ID) instead of VRFs")
        for port in wanted:
            ensure_management_port(port, self.vsctl, self.node_netns, self._use_vrf)
        names = {port.ifname for port in wanted}
        for ifname in self.vsctl("list-ports", INTEGRATION_BRIDGE).split():
            if ifname.startswith("ovn-k8s-mp") and ifname not in names:
                suffix = ifname.removeprefix("ovn-k8s-mp")
                table = TABLE_BASE + int(suffix) if suffix.isdigit() and suffix != "0" \
                    else None
                delete_management_port(ifname, table, self.vsctl, self.node_netns)
                log.info("management port %s removed", ifname)

    def start(self) -> None:
        self.controller.start()
        self.controller.queue.add(PORTS_KEY)

    def stop(self) -> None:
        self.controller.stop()
