"""Layer2 rows rendered into a real NB, compiled by ovn-northd, judged by ovn-trace."""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest
from ovnk_layer2.desired import build_pod, build_switch, switch_name
from ovnk_layer2.primary import gateway_router_name as primary_gateway_router
from ovnk_layer2.topology import Layer2Topology

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.port_names import pod_port_name
from ovnk_core.ovn.declarative import apply, apply_many
from ovnk_core.ovn.trace import TraceResult, packet_flow, trace, trace_path, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState, PodAttachment
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.neighbors import learn_neighbor
from ovnk_core.testing.ovsdb_fixtures import OvnStack, read_rows
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner

pytestmark = pytest.mark.e2e
net = ipaddress.ip_network
TOPOLOGY = Layer2Topology(udn_config())


def secondary(name: str, *cidrs: str, network_id: int = 2) -> NetworkState:
    netinfo = NetInfo(name=name, topology="layer2", role="secondary", mtu=1400,
                      subnets=tuple(ClusterSubnet(net(c), net(c).prefixlen) for c in cidrs),
                      nad_key=name.replace("_", "/", 1))
    return NetworkState(netinfo, network_id, (net("169.254.0.0/17"),), (net("100.64.0.0/16"),))


def pod(network: NetworkState, name: str, node: str, *ips: str, tunnel_id: int = 10,
        mac: str = "") -> PodAttachment:
    nad_key = network.netinfo.nad_key
    return PodAttachment(nad_key.split("/")[0], name, f"uid-{name}", node, nad_key,
                         mac or mac_from_ip(ips[0].split("/")[0]), ips, "secondary",
                         tunnel_id)


def render(nb: NbWriter, network: NetworkState, pods: list[PodAttachment]) -> bool:
    netinfo = network.netinfo
    changed = apply(nb, network_owner(netinfo), [build_switch(network)]).changed
    for attachment in pods:
        owner = pod_owner(netinfo, attachment.namespace, attachment.name)
        changed = apply(nb, owner, build_pod(network, attachment)).changed or changed
    return changed


def reach(stack: OvnStack, network: NetworkState, src: PodAttachment, dst_mac: str,
          dst_ip: str) -> tuple[str, ...]:
    flow = packet_flow(pod_port_name(src.nad_key, src.namespace, src.name), src.mac, dst_mac,
                       src.ips[0].split("/")[0], dst_ip)
    return trace(stack.sb.remote, switch_name(network.netinfo), flow).outputs


def test_secondary_switch_and_ports_are_upstreams(ovn_stack: OvnStack) -> None:
    blue = secondary("ns1_blue", "10.128.0.0/24", "fd00:10::/64", network_id=2)
    a = pod(blue, "a", "ovn-worker", "10.128.0.5/24", "fd00:10::5/64", tunnel_id=10)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        assert render(nb, blue, [a])
        assert not render(nb, blue, [a])  # a second render writes nothing
    (switch,) = read_rows(ovn_stack.nb.remote, "Logical_Switch")
    assert switch.name == "ns1_blue_ovn_layer2_switch"
    upstream_keys = ("k8s.ovn.org/network", "k8s.ovn.org/role", "k8s.ovn.org/topology")
    assert {k: switch.external_ids.get(k) for k in upstream_keys} == {
        "k8s.ovn.org/network": "ns1_blue", "k8s.ovn.org/role": "secondary",
        "k8s.ovn.org/topology": "layer2"}
    assert switch.other_config == {"subnet": "10.128.0.0/24", "ipv6_prefix": "fd00:10::",
                                   "requested-tnl-key": "16711685", "mcast_snoop": "true",
                                   "mcast_querier": "false",
                                   "mcast_flood_unregistered": "true"}
    (port,) = read_rows(ovn_stack.nb.remote, "Logical_Switch_Port")
    assert port.name == "ns1.blue_ns1_a"
    address = f"{mac_from_ip('10.128.0.5')} 10.128.0.5 fd00:10::5"
    assert port.addresses == [address] and port.port_security == [address]
    assert port.options == {"requested-chassis": "ovn-worker", "iface-id-ver": "uid-a",
                            "requested-tnl-key": "10"}
    ids = port.external_ids
    assert (ids["pod"], ids["namespace"], ids["k8s.ovn.org/nad"], ids["k8s.ovn.org/network"],
            ids["k8s.ovn.org/topology"]) == ("true", "ns1", "ns1/blue", "ns1_blue", "layer2")
    assert "k8s.ovn.org/role" not in ids


def test_pods_on_one_switch_reach_each_other_and_not_another_networks(ovn_stack: OvnStack
                                                                      ) -> None:
    blue = secondary("ns1_blue", "10.128.0.0/24", network_id=2)
    red = secondary("ns2_red", "10.128.0.0/24", network_id=3)  # the same CIDR
    a = pod(blue, "a", "ovn-worker", "10.128.0.5/24", tunnel_id=10)
    b = pod(blue, "b", "ovn-worker2", "10.128.0.6/24", tunnel_id=11)
    c = pod(red, "c", "ovn-worker2", "10.128.0.6/24", tunnel_id=10)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, blue, [a, b])
        render(nb, red, [c])
        wait_for_sb(nb.remote)
    b_port = pod_port_name(b.nad_key, b.namespace, b.name)
    assert reach(ovn_stack, blue, a, b.mac, "10.128.0.6") == (b_port,)
    assert reach(ovn_stack, red, c, a.mac, "10.128.0.5") == ()  # not on red's switch


def test_a_network_without_ipam_gives_mac_only_ports(ovn_stack: OvnStack) -> None:
    plain = secondary("ns1_plain", network_id=4)
    a = pod(plain, "a", "ovn-worker", mac="0a:11:22:33:44:55", tunnel_id=10)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, plain, [a])
    (switch,) = read_rows(ovn_stack.nb.remote, "Logical_Switch")
    assert "subnet" not in switch.other_config and "ipv6_prefix" not in switch.other_config
    (port,) = read_rows(ovn_stack.nb.remote, "Logical_Switch_Port")
    assert port.addresses == ["0a:11:22:33:44:55"]
    assert port.port_security == ["0a:11:22:33:44:55"]


# -- primary networks ---------------------------------------------------------------------------
MASQUERADE = (net("169.254.0.0/17"),)


def primary(name: str, cidr: str = "10.200.0.0/16", network_id: int = 1) -> NetworkState:
    netinfo = NetInfo(name=name, topology="layer2", role="primary", mtu=1400,
                      subnets=(ClusterSubnet(net(cidr), net(cidr).prefixlen),),
                      join_subnets=(net("100.65.0.0/16"),),
                      transit_subnets=(net("100.88.0.0/16"),),
                      nad_key=name.replace("_", "/", 1))
    return NetworkState(netinfo, network_id, MASQUERADE, (net("100.64.0.0/16"),),
                        (16711683 + network_id, 16715779 + network_id))


def gateway(index: int) -> GatewayConfig:
    return GatewayConfig("shared", "breth0", mac_from_ip(f"172.18.0.{index}"),
                         (f"172.18.0.{index}/16",), ("172.18.0.1",))


NODES = (NodeState("ovn-worker", (), 2, "chassis-1", gateway(2)),
         NodeState("ovn-worker2", (), 3, "chassis-2", gateway(3)))


def primary_pod(network: NetworkState, name: str, node: NodeState, ip: str,
                tunnel_id: int) -> PodAttachment:
    nad_key = network.netinfo.nad_key
    prefix = network.netinfo.subnets[0].cidr.prefixlen
    return PodAttachment(nad_key.split("/")[0], name, f"uid-{name}", node.name, nad_key,
                         mac_from_ip(ip), (f"{ip}/{prefix}",), "primary", tunnel_id,
                         node.node_id)


def render_primary(nb: NbWriter, network: NetworkState, pods: list[PodAttachment]) -> bool:
    """The network's rows, as the zone renders them for what ``nb`` supports."""
    network = dataclasses.replace(network, nb=nb.capabilities)
    netinfo = network.netinfo
    desired = {network_owner(netinfo): TOPOLOGY.build_network(network)}
    for node in NODES:
        desired[node_owner(netinfo, node.name)] = TOPOLOGY.build_node(network, node)
    changed = apply_many(nb, desired).changed
    for attachment in pods:
        owner = pod_owner(netinfo, attachment.namespace, attachment.name)
        changed = apply(nb, owner, TOPOLOGY.build_pod(network, attachment)).changed or changed
    return changed


def trace_out(stack: OvnStack, network: NetworkState, src: PodAttachment, dst_ip: str
              ) -> TraceResult:
    router_mac = mac_from_ip(network.netinfo.subnets[0].cidr.network_address + 1)
    flow = packet_flow(pod_port_name(src.nad_key, src.namespace, src.name), src.mac,
                       router_mac, src.ips[0].split("/")[0], dst_ip)
    return trace(stack.sb.remote, switch_name(network.netinfo), flow)


def test_primary_rows_are_upstreams(ovn_stack: OvnStack) -> None:
    blue = primary("ns1_blue", network_id=2)
    a = primary_pod(blue, "a", NODES[0], "10.200.0.3", 10)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        assert render_primary(nb, blue, [a])
        assert not render_primary(nb, blue, [a])  # a second render writes nothing
        peering = nb.capabilities.router_peering
    remote = ovn_stack.nb.remote
    routers = {r.name: r for r in read_rows(remote, "Logical_Router")}
    assert set(routers) == {"ns1_blue_transit_router", "GR_ns1_blue_ovn-worker",
                            "GR_ns1_blue_ovn-worker2"}
    tr = routers["ns1_blue_transit_router"]
    assert tr.options == {"requested-tnl-key": "16715781"}
    assert tr.external_ids["k8s-cluster-router"] == "yes"
    assert "k8s.ovn.org/role" not in tr.external_ids
    gr = routers["GR_ns1_blue_ovn-worker"]
    assert gr.options == {"always_learn_from_arp_request": "false",
                          "dynamic_neigh_routers": "false", "chassis": "chassis-1",
                          "lb_force_snat_ip": "100.65.0.2", "mac_binding_age_threshold": "300",
                          "disable_garp_rarp": "true"}
    assert (gr.external_ids["physical_ip"], gr.external_ids["physical_ips"],
            gr.external_ids["k8s.ovn.org/role"]) == ("172.18.0.2", "172.18.0.2,169.254.0.13",
                                                     "primary")
    ports = {p.name: p for p in read_rows(remote, "Logical_Router_Port")}
    trtos = ports["trtos-ns1_blue_ovn_layer2_switch"]
    assert (trtos.networks, trtos.mac) == (["10.200.0.1/16"], "0a:58:0a:c8:00:01")
    assert trtos.options == {"requested-tnl-key": "1", "gateway_mtu": "1400"}
    rtotr, trtor = ports["rtotr-GR_ns1_blue_ovn-worker"], ports["trtor-GR_ns1_blue_ovn-worker"]
    assert sorted(rtotr.networks) == ["100.65.0.2/16", "100.88.0.5/31"]
    if peering:  # OVN 26.03: the transit router peers the gateway router, as upstream
        assert rtotr.peer == [trtor.name] and trtor.peer == [rtotr.name]
    else:  # the pair meets on the network's join switch (OVN 23.03: no direct peering)
        assert rtotr.peer == [] and trtor.peer == []
    assert trtor.networks == ["100.88.0.4/31"] and trtor.options == {"requested-tnl-key": "12"}
    assert sorted(ports["rtoe-GR_ns1_blue_ovn-worker"].networks) == [
        "169.254.0.13/32", "172.18.0.2/16"]
    switch_ports = {p.name: p for p in read_rows(remote, "Logical_Switch_Port")}
    assert switch_ports["stotr-ns1_blue_ovn_layer2_switch"].options == {
        "router-port": "trtos-ns1_blue_ovn_layer2_switch"}
    assert switch_ports["breth0_ns1_blue_ovn-worker"].options == {"network_name": "physnet"}
    assert not any(name.startswith("k8s-") for name in switch_ports)  # see primary.py
    switches = {s.name for s in read_rows(remote, "Logical_Switch")}
    if peering:
        assert not any(name.startswith(("jtor-", "jtotr-")) for name in switch_ports)
        assert "ns1_blue_join" not in switches
    else:
        assert switch_ports["jtor-GR_ns1_blue_ovn-worker"].options == {
            "router-port": "rtotr-GR_ns1_blue_ovn-worker"}
        assert switch_ports["jtotr-GR_ns1_blue_ovn-worker"].options == {
            "router-port": "trtor-GR_ns1_blue_ovn-worker"}
        assert "ns1_blue_join" in switches
    routes = {(r.ip_prefix, r.nexthop, tuple(r.policy)) for r in read_rows(
        remote, "Logical_Router_Static_Route")}
    assert {("10.200.0.0/16", "100.88.0.4", ()), ("169.254.0.0/17", "169.254.0.4", ()),
            ("0.0.0.0/0", "172.18.0.1", ()), ("100.65.0.2", "100.88.0.5", ()),
            ("10.200.0.3", "100.88.0.5", ("src-ip",))} <= routes
    nats = {(n.external_ip, n.logical_ip) for n in read_rows(remote, "NAT")}
    assert nats == {("169.254.0.13", "100.65.0.2"), ("169.254.0.13", "10.200.0.0/16"),
                    ("169.254.0.13", "100.65.0.3")}


def test_primary_pods_reach_each_other_and_leave_through_their_own_node(
        ovn_stack: OvnStack) -> None:
    blue, teal = primary("ns1_blue", network_id=1), primary("ns2_teal", network_id=2)
    a = primary_pod(blue, "a", NODES[0], "10.200.0.3", 10)
    b = primary_pod(blue, "b", NODES[1], "10.200.0.4", 11)
    c = primary_pod(teal, "c", NODES[1], "10.200.0.4", 10)  # b's IP, in another network
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render_primary(nb, blue, [a, b])
        render_primary(nb, teal, [c])
        wait_for_sb(nb.remote)
        for network in (blue, teal):
            for node in NODES:
                gr = primary_gateway_router(network.netinfo, node.name)
                learn_neighbor(ovn_stack.sb.remote, gr, f"rtoe-{gr}", "172.18.0.1",
                               "aa:bb:cc:00:00:01")
    b_port = pod_port_name(b.nad_key, b.namespace, b.name)
    flow = packet_flow(pod_port_name(a.nad_key, a.namespace, a.name), a.mac, b.mac,
                       "10.200.0.3", "10.200.0.4")
    assert trace(ovn_stack.sb.remote, "ns1_blue_ovn_layer2_switch", flow).outputs == (b_port,)
    out_a, out_b = trace_out(ovn_stack, blue, a, "8.8.8.8"), trace_out(ovn_stack, blue, b,
                                                                       "8.8.8.8")
    assert out_a.snat_ips == ("169.254.0.11",) and out_a.outputs == (
        "breth0_ns1_blue_ovn-worker",)
    assert out_b.snat_ips == ("169.254.0.11",) and out_b.outputs == (
        "breth0_ns1_blue_ovn-worker2",)
    out_c = trace_out(ovn_stack, teal, c, "8.8.8.8")
    assert out_c.snat_ips == ("169.254.0.13",) and out_c.outputs == (
        "breth0_ns2_teal_ovn-worker2",)


def test_a_reply_to_another_nodes_gateway_router_is_redirected_to_its_chassis(
        ovn_stack: OvnStack) -> None:
    """A NodePort's backend on another node answers the entry node's gateway router (its
    ``lb_force_snat_ip``, the join address).  The transit router is distributed: the reply
    is routed on the backend's chassis, while the gateway router exists on its own node's
    chassis only, and OVN carries nothing between chassis over a router-to-router patch.
    So on an OVN where they peer, each ``trtor-`` port is a distributed gateway port on its
    gateway router's chassis (upstream's ``Gateway_Chassis`` row, ``<port>-<chassis>``), and
    the reply goes through its chassis-redirect port; on 23.03 the join switch carries it."""
    blue = primary("ns1_blue", network_id=2)
    b = primary_pod(blue, "b", NODES[1], "10.200.0.4", 11)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render_primary(nb, blue, [b])
        wait_for_sb(nb.remote)
        peering = nb.capabilities.router_peering
    remote = ovn_stack.nb.remote
    chassis = {row.uuid: row for row in read_rows(remote, "Gateway_Chassis")}
    pinned = {port.name: [(chassis[ref.uuid].name, chassis[ref.uuid].chassis_name,
                           chassis[ref.uuid].priority) for ref in port.gateway_chassis]
              for port in read_rows(remote, "Logical_Router_Port")
              if port.name.startswith("trtor-")}
    reply = trace_path(ovn_stack.sb.remote, switch_name(blue.netinfo), packet_flow(
        pod_port_name(b.nad_key, b.namespace, b.name), b.mac, mac_from_ip("10.200.0.1"),
        "10.200.0.4", "100.65.0.2", "tcp", 40000))  # to GR_ns1_blue_ovn-worker's join IP
    assert 'ingress(dp="GR_ns1_blue_ovn-worker", inport="rtotr-GR_ns1_blue_ovn-worker")' \
        in reply
    if peering:
        assert pinned == {
            "trtor-GR_ns1_blue_ovn-worker": [
                ("trtor-GR_ns1_blue_ovn-worker-chassis-1", "chassis-1", 1)],
            "trtor-GR_ns1_blue_ovn-worker2": [
                ("trtor-GR_ns1_blue_ovn-worker2-chassis-2", "chassis-2", 1)]}
        assert 'outport = "cr-trtor-GR_ns1_blue_ovn-worker"' in reply
    else:
        assert pinned == {"trtor-GR_ns1_blue_ovn-worker": [],
                          "trtor-GR_ns1_blue_ovn-worker2": []}
        assert 'ingress(dp="ns1_blue_join"' in reply


def test_a_dual_stack_primary_network_renders_both_families(ovn_stack: OvnStack) -> None:
    netinfo = NetInfo(name="ns1_ds", topology="layer2", role="primary", mtu=1400,
                      subnets=(ClusterSubnet(net("10.210.0.0/16"), 16),
                               ClusterSubnet(net("fd10:210::/64"), 64)),
                      join_subnets=(net("100.65.0.0/16"), net("fd99::/64")),
                      transit_subnets=(net("100.88.0.0/16"), net("fd97::/64")),
                      nad_key="ns1/ds")
    dual = NetworkState(netinfo, 4, (net("169.254.0.0/17"), net("fd69::/112")),
                        (net("100.64.0.0/16"),), (16711687, 16715782))
    node = NodeState("ovn-worker", (), 2, "chassis-1", GatewayConfig(
        "shared", "breth0", mac_from_ip("172.18.0.2"), ("172.18.0.2/16", "fc00:f853::2/64"),
        ("172.18.0.1", "fc00:f853::1")))
    pod = PodAttachment("ns1", "a", "uid-a", "ovn-worker", "ns1/ds", mac_from_ip("10.210.0.3"),
                        ("10.210.0.3/16", "fd10:210::3/64"), "primary", 10, 2)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        apply_many(nb, {network_owner(netinfo): TOPOLOGY.build_network(dual),
                        node_owner(netinfo, node.name): TOPOLOGY.build_node(dual, node)})
        apply(nb, pod_owner(netinfo, "ns1", "a"), TOPOLOGY.build_pod(dual, pod))
    ports = {p.name: p for p in read_rows(ovn_stack.nb.remote, "Logical_Router_Port")}
    trtos = ports["trtos-ns1_ds_ovn_layer2_switch"]
    assert sorted(trtos.networks) == ["10.210.0.1/16", "fd10:210::1/64"]
    assert trtos.ipv6_ra_configs["address_mode"] == "dhcpv6_stateful"
    assert sorted(ports["rtotr-GR_ns1_ds_ovn-worker"].networks) == [
        "100.65.0.2/16", "100.88.0.5/31", "fd97::5/127", "fd99::2/64"]
    routes = {(r.ip_prefix, r.nexthop) for r in read_rows(ovn_stack.nb.remote,
                                                         "Logical_Router_Static_Route")}
    assert {("10.210.0.3", "100.88.0.5"), ("fd10:210::3", "fd97::5"),
            ("::/0", "fc00:f853::1"), ("fd10:210::/64", "fd97::4")} <= routes
    nats = {(n.external_ip, n.logical_ip) for n in read_rows(ovn_stack.nb.remote, "NAT")}
    assert ("fd69::11", "fd10:210::/64") in nats  # base + 10 + 2·4 - 1
