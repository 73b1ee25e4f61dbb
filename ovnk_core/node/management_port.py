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

Each network's port is its own reconcile: a network whose port the kernel
refuses (a subnet in ``127.0.0.0/8``, whose gateway is a local address) is
said on the Node and retried with backoff alone; every other network still
gets its port.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ovnk_core.annotations.node_subnets import parse_node_subnets
from ovnk_core.errors import CapabilityError, OvnkError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import NADS, NODES
from ovnk_core.networks.addressing import gateway_ip, mac_from_ip, management_ip, masquerade_ips
from ovnk_core.networks.nad_config import nad_network_name
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME, network_prefix
from ovnk_core.node import netlink
from ovnk_core.node.network_failures import NetworkFailures
from ovnk_core.node.networks import primary_networks
from ovnk_core.node.pod_network import INTEGRATION_BRIDGE, Vsctl
from ovnk_core.topology import Topology

log = logging.getLogger(__name__)

PORT_PREFIX = "ovn-k8s-mp"
DEFAULT_PORT = f"{PORT_PREFIX}0"
TABLE_BASE = 1000  # routing table of a UDN's management port: TABLE_BASE + network ID
RULE_PRIORITY = 2000
NETWORK_INDEX = "network"  # NADs by the network their config names
STALE_PORTS_KEY = ""  # the ports of networks that are gone (no network has an empty name)
FAILED_REASON = "ManagementPortFailed"


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
    # a UDN's management-port masquerade IPs (upstream's ``ManagementPort`` IP of the
    # network ID): the zone SNATs its pods' traffic to the port to them, the host answers
    # them through the port
    masquerade_ips: tuple[str, ...] = ()

    @property
    def vrf(self) -> str:
        return f"{self.ifname}-vrf"


def port_ifname(network: str, network_id: int) -> str:
    """The host interface of ``network``'s management port (upstream's names)."""
    return DEFAULT_PORT if network == DEFAULT_NETWORK_NAME else f"{PORT_PREFIX}{network_id}"


def management_port_name(network: str, node: str) -> str:
    """The logical port the zone renders for ``network``'s management port on ``node``."""
    return f"k8s-{network_prefix(network)}{node}"


def table_of(ifname: str) -> int | None:
    """The routing table of a UDN's management port, from its name (None: the default
    network's, in the main table)."""
    suffix = ifname.removeprefix(PORT_PREFIX)
    return TABLE_BASE + int(suffix) if suffix.isdigit() and suffix != "0" else None


def build_management_port(node: str, network: str, network_id: int,
                          node_subnets: list[str], cluster_subnets: list[str],
                          masquerade_subnets: Sequence[str] = ()) -> ManagementPort | None:
    """The management port of ``network`` on ``node``; None when the node has no subnet.

    :param masquerade_subnets: the cluster's masquerade subnets: a user-defined network's
        port answers its management-port masquerade IP of each family it has."""
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
    families = {s.version for s in subnets}
    masquerade = () if default else tuple(
        str(masquerade_ips(ipaddress.ip_network(m), network_id)[1])
        for m in masquerade_subnets if ipaddress.ip_network(m).version in families)
    return ManagementPort(
        network=network, ifname=port_ifname(network, network_id),
        port_name=management_port_name(network, node), mac=mac, addresses=addresses,
        routes=routes, table=None if default else TABLE_BASE + network_id,
        masquerade_ips=masquerade)


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
        for version in sorted({ipaddress.ip_interface(cidr).version for cidr in port.addresses}):
            netlink.ensure_rule(RULE_PRIORITY, port.table, iifname=port.ifname, netns=netns,
                                version=version)
            netlink.ensure_rule(RULE_PRIORITY, port.table, oifname=port.ifname, netns=netns,
                                version=version)
        for cidr in port.addresses:
            netlink.ensure_rule(RULE_PRIORITY, port.table,
                                src=str(ipaddress.ip_interface(cidr).ip), netns=netns)
    for ip in port.masquerade_ips:  # the host's answers to it leave through the port
        host = f"{ip}/{ipaddress.ip_address(ip).max_prefixlen}"
        netlink.ensure_route(host, oif=port.ifname, table=table, netns=netns)
        if port.table is not None and not use_vrf:
            netlink.ensure_rule(RULE_PRIORITY, port.table, dst=host, netns=netns)


def delete_management_port(ifname: str, table: int | None, vsctl: Vsctl,
                           netns: str | None) -> None:
    """Remove a management port that no network needs any more, with its rules and VRF."""
    vsctl("--if-exists", "del-port", INTEGRATION_BRIDGE, ifname)
    netlink.delete_link(f"{ifname}-vrf", netns=netns)
    if table is not None:
        for rule in netlink.list_rules(netns=netns):
            if rule.get("table") == table and rule.get("priority") == RULE_PRIORITY:
                netlink.delete_rule(RULE_PRIORITY, table, src=rule.get("src"),
                                    iifname=rule.get("iifname"), oifname=rule.get("oifname"),
                                    netns=netns, version=rule["version"], dst=rule.get("dst"))


class ManagementPorts:
    """Keeps one management port per network this node has a subnet of.

    Level-driven, one key per network (its name; ``default`` for ``ovn-k8s-mp0``): a NAD
    change enqueues its network, a change of the Node's ``k8s.ovn.org/node-subnets``
    enqueues the networks whose subnets on this node changed.  Each network converges on
    its own: its port is made, or removed when the network no longer wants one (found in
    OVS by its ``iface-id``); a network whose port cannot be set up retries with its own
    backoff and is said on the Node (a Warning event ``ManagementPortFailed`` naming the
    network, ``NetworkFailures``), while every other network still gets its port.  At start
    the ``STALE_PORTS_KEY`` removes the ports (``ovn-k8s-mp*``) of networks that went away
    while the agent was not running.
    """

    def __init__(self, informers: InformerFactory, node: str, vsctl: Vsctl,
                 node_netns: str | None, default_cluster_subnets: list[str],
                 recorder: EventRecorder,
                 topologies: Mapping[str, Topology] | None = None,
                 failures: NetworkFailures | None = None,
                 masquerade_subnets: Sequence[str] = ()) -> None:
        """:param topologies: the enabled topology plugins (they say which networks need a
            management port); none: only the default network's port.
        :param masquerade_subnets: the cluster's masquerade subnets (a user-defined
            network's port answers its management-port masquerade IPs).
        :param failures: how a network's failure is said (default: a Warning event
            ``FAILED_REASON`` on the Node, ``network_failures.REPEAT`` apart at most)."""
        self.topologies: Mapping[str, Topology] = topologies or {}
        self.node = node
        self.vsctl = vsctl
        self.node_netns = node_netns
        self.default_cluster_subnets = default_cluster_subnets
        self.masquerade_subnets = tuple(masquerade_subnets)
        self.recorder = recorder
        self.controller = Controller(f"node-management-ports-{node}", self.reconcile)
        self.nodes = informers.get(NODES, field_selector=f"metadata.name={node}")
        self.nads = informers.get(NADS, indexers={NETWORK_INDEX: nad_network_name})
        self.controller.watch(self.nodes, key_func=lambda _node: ())  # keys: _node_changed
        self.nodes.add_handler(self._node_changed)
        self.controller.watch(self.nads, key_func=nad_network_name)
        self.failures = failures or NetworkFailures(
            recorder, node, lambda: self.nodes.get(self.node), FAILED_REASON,
            "management port")
        self._use_vrf: bool | None = None
        self._vrf_reported = False

    def _node_changed(self, _event: str, old: JSON | None, new: JSON | None) -> None:
        """Enqueue the networks whose subnets on this node changed (not every network on
        every Node update: status heartbeats change nothing here)."""
        before = parse_node_subnets(old) if old is not None else {}
        after = parse_node_subnets(new) if new is not None else {}
        if old is None:
            self.controller.queue.add(STALE_PORTS_KEY)  # (passed over while it was missing)
        for network in sorted(set(before) | set(after)):
            if before.get(network) != after.get(network):
                self.controller.queue.add(network)

    def desired_port(self, node: JSON, network: str) -> ManagementPort | None:
        """The management port ``network`` wants on this node (None: it wants none)."""
        subnets = parse_node_subnets(node).get(network, [])
        if network == DEFAULT_NETWORK_NAME:
            return build_management_port(self.node, network, 0, subnets,
                                         self.default_cluster_subnets)
        for found in primary_networks(self.nads.peek_by_index(NETWORK_INDEX, network),
                                      self.topologies):
            if found.name == network and found.needs.management_port:
                return build_management_port(self.node, network, found.network_id, subnets,
                                             list(found.cluster_subnets),
                                             self.masquerade_subnets)
        return None

    def wanted_ifnames(self, node: JSON) -> set[str]:
        """The management ports every network wants on this node, by interface name."""
        subnets = parse_node_subnets(node)
        wanted = {DEFAULT_PORT} if subnets.get(DEFAULT_NETWORK_NAME) else set()
        for network in primary_networks(self.nads.peek_all(), self.topologies):
            if network.needs.management_port and subnets.get(network.name):
                wanted.add(port_ifname(network.name, network.network_id))
        return wanted

    def reconcile(self, key: str) -> None:
        if key == STALE_PORTS_KEY:
            self.remove_stale_ports()
            return
        try:
            self.reconcile_network(key)
        except Exception as exc:
            self.failures.failed(key, exc)
            raise  # retried with this key's own backoff
        self.failures.succeeded(key)

    def reconcile_network(self, network: str) -> None:
        """Make ``network``'s port on this node what it should be (or remove it)."""
        node = self.nodes.get(self.node)
        if node is None:
            return  # the Node's arrival enqueues every network it has a subnet of
        port = self.desired_port(node, network)
        for ifname in self.ports_of(network):
            if port is None or ifname != port.ifname:
                delete_management_port(ifname, table_of(ifname), self.vsctl, self.node_netns)
                log.info("management port %s of network %s removed", ifname, network)
        if port is None:
            return
        if self._use_vrf is None:
            self._use_vrf = netlink.vrf_supported(self.node_netns)
        if not self._use_vrf and not self._vrf_reported and port.table is not None:
            self._vrf_reported = True
            log.warning("no VRF support in the kernel: UDN management ports use "
                        "policy-routing tables")
            self.recorder.event(node, WARNING, "VRFUnsupported",
                                "the kernel has no VRF support: user-defined networks' "
                                "management ports use policy-routing tables "
                                f"({TABLE_BASE}+network ID) instead of VRFs")
        ensure_management_port(port, self.vsctl, self.node_netns, self._use_vrf)

    def ports_of(self, network: str) -> list[str]:
        """The management ports in OVS bound to ``network``'s logical port on this node."""
        port_name = management_port_name(network, self.node)
        output = self.vsctl("--format=json", "--columns=name", "find", "interface",
                            f"external_ids:iface-id={json.dumps(port_name)}")
        rows = json.loads(output or '{"data": []}')["data"]
        return sorted(str(row[0]) for row in rows
                      if isinstance(row[0], str) and row[0].startswith(PORT_PREFIX))

    def remove_stale_ports(self) -> None:
        """Remove every management port no network wants (networks gone while the agent was
        not running); each port on its own, so one that cannot be removed keeps none."""
        node = self.nodes.get(self.node)
        if node is None:
            return
        wanted = self.wanted_ifnames(node)
        failed = []
        for ifname in self.vsctl("list-ports", INTEGRATION_BRIDGE).split():
            if not ifname.startswith(PORT_PREFIX) or ifname in wanted:
                continue
            try:
                delete_management_port(ifname, table_of(ifname), self.vsctl, self.node_netns)
            except OvnkError as exc:
                failed.append(f"{ifname}: {exc}")
                continue
            log.info("management port %s removed (no network wants it)", ifname)
        if failed:
            raise OvnkError("cannot remove stale management ports: " + "; ".join(failed))

    def start(self) -> None:
        self.controller.start()
        self.controller.queue.add(STALE_PORTS_KEY)

    def stop(self) -> None:
        self.controller.stop()
