"""Layer2 primary networks of both families and of IPv6 only, judged by ovn-trace: IPv6
packets go where IPv4 ones go (pod to pod across nodes; egress out through the pod's own
node as the network's IPv6 masquerade address), and an IPv6-only network has no IPv4 row."""

from __future__ import annotations

import ipaddress

import pytest
from ovnk_layer2.desired import switch_name
from ovnk_layer2.primary import gateway_router_name
from ovnk_layer2.topology import Layer2Topology

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.port_names import pod_port_name
from ovnk_core.ovn.declarative import apply, apply_many
from ovnk_core.ovn.trace import TraceResult, packet_flow, trace, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState, PodAttachment
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.neighbors import learn_neighbor
from ovnk_core.testing.ovsdb_fixtures import OvnStack, read_rows
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner

pytestmark = pytest.mark.e2e
net = ipaddress.ip_network
TOPOLOGY = Layer2Topology(udn_config())
GATEWAY6 = "fd80:172:18::1"


def network(*cidrs: str) -> NetworkState:
    """A primary Layer2 network of ``cidrs``: the transit subnets of their families, as its
    NAD lists them (``udn.nad.transit_subnets``)."""
    families = {net(c).version for c in cidrs}
    netinfo = NetInfo(name="ns1_ds", topology="layer2", role="primary", mtu=1400,
                      subnets=tuple(ClusterSubnet(net(c), net(c).prefixlen) for c in cidrs),
                      join_subnets=(net("100.65.0.0/16"), net("fd99::/64")),
                      transit_subnets=tuple(t for t in (net("100.88.0.0/16"), net("fd97::/64"))
                                            if t.version in families),
                      nad_key="ns1/ds")
    return NetworkState(netinfo, 4, (net("169.254.0.0/17"), net("fd69::/112")),
                        (net("100.64.0.0/16"), net("fd98::/64")), (16711687, 16715782))


def nodes(families: tuple[int, ...]) -> tuple[NodeState, ...]:
    def gateway(index: int) -> GatewayConfig:
        ips = {4: (f"172.18.0.{index}/16", "172.18.0.1"),
               6: (f"fd80:172:18::{index}/64", GATEWAY6)}
        return GatewayConfig("shared", "breth0", mac_from_ip(f"172.18.0.{index}"),
                             tuple(ips[v][0] for v in families),
                             tuple(ips[v][1] for v in families))
    return (NodeState("ovn-worker", (), 2, "chassis-1", gateway(2)),
            NodeState("ovn-worker2", (), 3, "chassis-2", gateway(3)))


def pod(state: NetworkState, name: str, node: NodeState, tunnel_id: int, *ips: str
        ) -> PodAttachment:
    return PodAttachment("ns1", name, f"uid-{name}", node.name, "ns1/ds", mac_from_ip(ips[0]),
                         tuple(f"{ip}/{64 if ':' in ip else 16}" for ip in ips), "primary",
                         tunnel_id, node.node_id)


def render(nb: NbWriter, state: NetworkState, node_states: tuple[NodeState, ...],
           pods: list[PodAttachment]) -> None:
    netinfo = state.netinfo
    desired = {network_owner(netinfo): TOPOLOGY.build_network(state)}
    for node in node_states:
        desired[node_owner(netinfo, node.name)] = TOPOLOGY.build_node(state, node)
    apply_many(nb, desired)
    for attachment in pods:
        apply(nb, pod_owner(netinfo, "ns1", attachment.name),
              TOPOLOGY.build_pod(state, attachment))


def trace6(stack: OvnStack, state: NetworkState, src: PodAttachment, dst_mac: str,
           dst_ip: str) -> TraceResult:
    src_ip = next(ip.split("/")[0] for ip in src.ips if ":" in ip)
    flow = packet_flow(pod_port_name("ns1/ds", "ns1", src.name), src.mac, dst_mac, src_ip,
                       dst_ip)
    return trace(stack.sb.remote, switch_name(state.netinfo), flow)


def learn_gateways(stack: OvnStack, state: NetworkState) -> None:
    for name in ("ovn-worker", "ovn-worker2"):
        router = gateway_router_name(state.netinfo, name)
        learn_neighbor(stack.sb.remote, router, f"rtoe-{router}", GATEWAY6,
                       "aa:bb:cc:00:00:01")


def test_ipv6_packets_of_a_dual_stack_layer2_network_go_where_ipv4_ones_go(
        ovn_stack: OvnStack) -> None:
    state, node_states = network("10.210.0.0/16", "fd10:210::/64"), nodes((4, 6))
    a = pod(state, "a", node_states[0], 10, "10.210.0.3", "fd10:210::3")
    b = pod(state, "b", node_states[1], 11, "10.210.0.4", "fd10:210::4")
    router_mac = mac_from_ip("10.210.0.1")  # the transit router's port: the pods' gateway
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, state, node_states, [a, b])
        wait_for_sb(nb.remote)
        learn_gateways(ovn_stack, state)
        across = trace6(ovn_stack, state, a, b.mac, "fd10:210::4")
        out_a = trace6(ovn_stack, state, a, router_mac, "2001:db8::1")
        out_b = trace6(ovn_stack, state, b, router_mac, "2001:db8::1")
    assert across.outputs == (pod_port_name("ns1/ds", "ns1", "b"),)
    # each pod leaves through its own node's gateway router, as the network's masquerade
    # IPv6 address (base + 10 + 2·4 - 1 = fd69::11)
    assert out_a.snat_ips == ("fd69::11",) and out_a.outputs == ("breth0_ns1_ds_ovn-worker",)
    assert out_b.snat_ips == ("fd69::11",) and out_b.outputs == ("breth0_ns1_ds_ovn-worker2",)


def test_an_ipv6_only_layer2_network_has_no_ipv4_row(ovn_stack: OvnStack) -> None:
    state, node_states = network("fd10:210::/64"), nodes((6,))
    a = pod(state, "a", node_states[0], 10, "fd10:210::3")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, state, node_states, [a])
        wait_for_sb(nb.remote)
        learn_gateways(ovn_stack, state)
        out = trace6(ovn_stack, state, a, mac_from_ip("fd10:210::1"), "2001:db8::1")
        ports = {p.name: sorted(p.networks) for p in read_rows(nb.remote,
                                                              "Logical_Router_Port")}
        routes = {(r.ip_prefix, r.nexthop) for r in read_rows(nb.remote,
                                                             "Logical_Router_Static_Route")}
        nats = {(n.external_ip, n.logical_ip) for n in read_rows(nb.remote, "NAT")}
    assert out.snat_ips == ("fd69::11",) and out.outputs == ("breth0_ns1_ds_ovn-worker",)
    assert ports["trtos-ns1_ds_ovn_layer2_switch"] == ["fd10:210::1/64"]
    assert ports["rtoe-GR_ns1_ds_ovn-worker"] == ["fd69::11/128", "fd80:172:18::2/64"]
    assert all(":" in n for networks in ports.values() for n in networks), ports
    assert all(":" in prefix for prefix, _hop in routes), routes
    assert ("::/0", GATEWAY6) in routes and ("fd10:210::3", "fd97::5") in routes
    assert nats == {("fd69::11", "fd10:210::/64"), ("fd69::11", "fd99::2"),
                    ("fd69::11", "fd99::3")}
