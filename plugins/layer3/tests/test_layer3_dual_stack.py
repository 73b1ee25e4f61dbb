"""Layer3 rows of IPv6 and dual-stack networks, rendered into a real NB, compiled by
ovn-northd and judged by ovn-trace: both families on every router port, route, policy and
SNAT, and IPv6 packets going where IPv4 ones go."""

from __future__ import annotations

import ipaddress

import pytest
from ovnk_layer3.desired import (
    build_network,
    build_node,
    build_pod,
    gateway_router_name,
    pod_port_name,
)

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import apply, apply_many
from ovnk_core.ovn.trace import TraceResult, packet_flow, trace, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState, PodAttachment
from ovnk_core.testing.neighbors import learn_neighbor
from ovnk_core.testing.ovsdb_fixtures import OvnStack, read_rows
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner

pytestmark = pytest.mark.e2e
net = ipaddress.ip_network
MASQUERADE = (net("169.254.0.0/17"), net("fd69::/112"))
DEFAULT_JOIN = (net("100.64.0.0/16"), net("fd98::/64"))
GATEWAY6 = "fd80:172:18::1"


def gateway(index: int, families: tuple[int, ...] = (4, 6)) -> GatewayConfig:
    ips = {4: (f"172.18.0.{index}/16", "172.18.0.1"), 6: (f"fd80:172:18::{index}/64", GATEWAY6)}
    return GatewayConfig("shared", "breth0", mac_from_ip(f"172.18.0.{index}"),
                         tuple(ips[v][0] for v in families), tuple(ips[v][1] for v in families))


def blue(subnets: tuple[str, ...] = ("10.100.0.0/16", "fd00:100::/48")) -> NetworkState:
    netinfo = NetInfo(name="blue_blue", topology="layer3", role="primary", mtu=1400,
                      subnets=tuple(ClusterSubnet(net(s), 24 if net(s).version == 4 else 64)
                                    for s in subnets),
                      join_subnets=(net("100.65.0.0/16"), net("fd99::/64")))
    return NetworkState(netinfo, 1, MASQUERADE, DEFAULT_JOIN)


def default_network() -> NetworkState:
    netinfo = NetInfo(name="default", topology="layer3", role="default", mtu=1400,
                      subnets=(ClusterSubnet(net("10.244.0.0/16"), 24),
                               ClusterSubnet(net("fd00:10:244::/48"), 64)))
    return NetworkState(netinfo, 0, MASQUERADE, DEFAULT_JOIN)


def nodes(first: tuple[str, ...], second: tuple[str, ...],
          families: tuple[int, ...] = (4, 6)) -> tuple[NodeState, ...]:
    """ovn-worker and ovn-worker2 with these host subnets, and gateway addresses of
    ``families``."""
    return (NodeState("ovn-worker", tuple(map(net, first)), 2, "chassis-1",
                      gateway(2, families)),
            NodeState("ovn-worker2", tuple(map(net, second)), 3, "chassis-2",
                      gateway(3, families)))


DUAL_NODES = (("10.100.0.0/24", "fd00:100::/64"), ("10.100.1.0/24", "fd00:100:0:1::/64"))


def pod(network: NetworkState, name: str, node: str, *ips: str) -> PodAttachment:
    namespace = network.netinfo.name.split("_")[0]
    nad = "default" if network.netinfo.is_default else f"{namespace}/{namespace}"
    return PodAttachment(namespace, name, f"uid-{name}", node, nad, mac_from_ip(ips[0]),
                         tuple(f"{ip}/{24 if ':' not in ip else 64}" for ip in ips))


def render(nb: NbWriter, network: NetworkState, pods: list[PodAttachment],
           node_states: tuple[NodeState, ...]) -> None:
    netinfo = network.netinfo
    desired = {network_owner(netinfo): build_network(network)}
    for node in node_states:
        desired[node_owner(netinfo, node.name)] = build_node(network, node)
    apply_many(nb, desired)
    for attachment in pods:
        apply(nb, pod_owner(netinfo, attachment.namespace, attachment.name),
              build_pod(network, attachment))


def trace6(stack: OvnStack, network: NetworkState, src: PodAttachment, dst_ip: str
           ) -> TraceResult:
    """An ICMPv6 echo from ``src``'s IPv6 address to ``dst_ip`` (to the router port's MAC,
    which derives from the node subnet's first family)."""
    src_ip = next(ip.split("/")[0] for ip in src.ips if ":" in ip)
    router_mac = mac_from_ip(net(src.ips[0], strict=False).network_address + 1)
    flow = packet_flow(pod_port_name(network.netinfo, src), src.mac, router_mac, src_ip,
                       dst_ip)
    return trace(stack.sb.remote, network.netinfo.scoped_name(src.node), flow)


def optional(value: object, default: str) -> str:
    """An optional column's value (the IDL gives a list of none or one)."""
    if isinstance(value, list):
        return str(value[0]) if value else default
    return str(value or default)


def test_a_dual_stack_udns_rows_carry_both_families(ovn_stack: OvnStack) -> None:
    network, node_states = blue(), nodes(*DUAL_NODES)
    a = pod(network, "a", "ovn-worker", "10.100.0.3", "fd00:100::3")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, network, [a], node_states)
        routers = {r.name: r for r in read_rows(nb.remote, "Logical_Router")}
        ports = {p.name: sorted(p.networks) for p in read_rows(nb.remote,
                                                              "Logical_Router_Port")}
        routes = {(r.ip_prefix, r.nexthop, optional(r.policy, "dst-ip"),
                   optional(r.output_port, ""))
                  for r in read_rows(nb.remote, "Logical_Router_Static_Route")}
        nats = {(n.external_ip, n.logical_ip) for n in read_rows(nb.remote, "NAT")}
        policies = {(p.match, tuple(p.nexthops)) for p in read_rows(nb.remote,
                                                                    "Logical_Router_Policy")}
        lsp = {p.name: p for p in read_rows(nb.remote, "Logical_Switch_Port")}
    gr = gateway_router_name(network.netinfo, "ovn-worker")
    assert ports["rtos-blue_blue_ovn-worker"] == ["10.100.0.1/24", "fd00:100::1/64"]
    assert ports["rtoj-blue_blue_ovn_cluster_router"] == ["100.65.0.1/16", "fd99::1/64"]
    assert ports[f"rtoj-{gr}"] == ["100.65.0.2/16", "fd99::2/64"]
    # the external port: the node's addresses and the network's masquerade IPs (id 1: .11)
    assert ports[f"rtoe-{gr}"] == ["169.254.0.11/32", "172.18.0.2/16", "fd69::b/128",
                                   "fd80:172:18::2/64"]
    assert routers[gr].external_ids["physical_ips"] == "172.18.0.2,fd80:172:18::2," \
                                                      "169.254.0.11,fd69::b"
    assert {route for route in routes if route[3] == f"rtoe-{gr}"} == {
        ("0.0.0.0/0", "172.18.0.1", "dst-ip", f"rtoe-{gr}"),
        ("::/0", GATEWAY6, "dst-ip", f"rtoe-{gr}"),
        ("169.254.0.0/17", "169.254.0.4", "dst-ip", f"rtoe-{gr}"),
        ("fd69::/112", "fd69::4", "dst-ip", f"rtoe-{gr}")}
    assert {("10.100.0.0/16", "100.65.0.1", "dst-ip", ""), ("fd00:100::/48", "fd99::1",
                                                             "dst-ip", ""),
            ("10.100.0.0/24", "100.65.0.2", "src-ip", ""),
            ("fd00:100::/64", "fd99::2", "src-ip", ""),
            ("fd99::2", "fd99::2", "dst-ip", "")} <= routes
    # egress SNAT to the network's masquerade IP of each family
    assert {("169.254.0.11", "10.100.0.0/16"), ("169.254.0.11", "100.65.0.2"),
            ("fd69::b", "fd00:100::/48"), ("fd69::b", "fd99::2")} <= nats
    # the node's traffic from its pods goes to the management port, in both families
    switch = "blue_blue_ovn-worker"
    assert {policy for policy in policies if f'"rtos-{switch}"' in policy[0]} == {
        (f'inport == "rtos-{switch}" && ip4.dst == 172.18.0.2 /* {switch} */',
         ("10.100.0.2",)),
        (f'inport == "rtos-{switch}" && ip4.dst == 169.254.0.11 /* {switch} */',
         ("10.100.0.2",)),
        (f'inport == "rtos-{switch}" && ip6.dst == fd80:172:18::2 /* {switch} */',
         ("fd00:100::2",)),
        (f'inport == "rtos-{switch}" && ip6.dst == fd69::b /* {switch} */',
         ("fd00:100::2",))}
    assert lsp[f"k8s-{switch}"].addresses == [f"{mac_from_ip('10.100.0.2')} 10.100.0.2 "
                                              "fd00:100::2"]
    assert lsp["blue.blue_blue_a"].addresses == [f"{a.mac} 10.100.0.3 fd00:100::3"]


def test_ipv6_packets_of_a_dual_stack_udn_go_where_ipv4_ones_go(ovn_stack: OvnStack) -> None:
    network, node_states = blue(), nodes(*DUAL_NODES)
    a = pod(network, "a", "ovn-worker", "10.100.0.3", "fd00:100::3")
    b = pod(network, "b", "ovn-worker2", "10.100.1.3", "fd00:100:0:1::3")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, network, [a, b], node_states)
        wait_for_sb(nb.remote)
        gr = gateway_router_name(network.netinfo, "ovn-worker")
        learn_neighbor(ovn_stack.sb.remote, gr, f"rtoe-{gr}", GATEWAY6, "aa:bb:cc:00:00:01")
        learn_neighbor(ovn_stack.sb.remote, gr, f"rtoe-{gr}", "fd69::4", mac_from_ip("fd69::4"))
        across = trace6(ovn_stack, network, a, "fd00:100:0:1::3")
        out = trace6(ovn_stack, network, a, "2001:db8::1")
        to_node = trace6(ovn_stack, network, a, "fd80:172:18::2")
        to_host = trace6(ovn_stack, network, a, "fd69::2")
    assert across.outputs == (pod_port_name(network.netinfo, b),)
    # egress leaves through the node's gateway router as the network's masquerade IP
    assert out.snat_ips == ("fd69::b",) and out.outputs == ("breth0_blue_blue_ovn-worker",)
    # the node itself through the management port, its masquerade IP through the router
    assert to_node.outputs == ("k8s-blue_blue_ovn-worker",)
    assert to_host.outputs == ("breth0_blue_blue_ovn-worker",) and \
        to_host.snat_ips == ("fd69::b",)


def test_ipv6_only_networks_default_and_udn(ovn_stack: OvnStack) -> None:
    """IPv6 only: no IPv4 row anywhere; the default network's pods leave as the node."""
    default = NetworkState(NetInfo(name="default", topology="layer3", role="default",
                                   mtu=1400,
                                   subnets=(ClusterSubnet(net("fd00:10:244::/48"), 64),)),
                           0, MASQUERADE, DEFAULT_JOIN)
    udn = blue(("fd00:100::/48",))
    v6_nodes = nodes(("fd00:10:244::/64",), ("fd00:10:244:1::/64",), (6,))
    a = pod(default, "a", "ovn-worker", "fd00:10:244::3")
    b = pod(default, "b", "ovn-worker2", "fd00:10:244:1::3")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, default, [a, b], v6_nodes)
        render(nb, udn, [], nodes(("fd00:100::/64",), ("fd00:100:0:1::/64",), (6,)))
        wait_for_sb(nb.remote)
        learn_neighbor(ovn_stack.sb.remote, "GR_ovn-worker", "rtoe-GR_ovn-worker", GATEWAY6,
                       "aa:bb:cc:00:00:01")
        across = trace6(ovn_stack, default, a, "fd00:10:244:1::3")
        out = trace6(ovn_stack, default, a, "2001:db8::1")
        ports = {p.name: sorted(p.networks) for p in read_rows(nb.remote,
                                                              "Logical_Router_Port")}
        nats = {(n.external_ip, n.logical_ip) for n in read_rows(nb.remote, "NAT")}
    assert across.outputs == ("default_b",)
    assert out.snat_ips == ("fd80:172:18::2",) and out.outputs == ("breth0_ovn-worker",)
    assert all(":" in network for networks in ports.values() for network in networks), ports
    assert ports["rtoe-GR_ovn-worker"] == ["fd80:172:18::2/64"]
    assert ports["rtoe-GR_blue_blue_ovn-worker"] == ["fd69::b/128", "fd80:172:18::2/64"]
    assert ("fd80:172:18::2", "fd00:10:244::/48") in nats and \
        ("fd69::b", "fd00:100::/48") in nats
