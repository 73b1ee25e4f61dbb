"""Layer2 with interconnect (one zone per node): the rows one zone renders, as upstream.

Zone ``ovn-worker``'s Northbound: the network's switch is the zones' transit switch
(``interconn-ts``), a pod on the other node is a ``remote`` port bound to its node with its
tunnel ID as tunnel key (upstream's ``AddTransitPortConfig``); on a primary network the
transit router has a remote ``trtor-`` port to the other node's gateway router with that
node's chassis and tunnel key, and the route to its join address
(``addRouterSetupForRemoteNodeGR``), and the zone's pods leave through its own node's
gateway router by one ``src-ip`` route of the subnet (no per-pod routes).  ``ovn-trace``
sends a packet for the remote pod out of its remote port.
"""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest
from ovnk_layer2.desired import build_switch, switch_name
from ovnk_layer2.topology import Layer2Topology

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.port_names import pod_port_name
from ovnk_core.ovn.declarative import apply_many
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState, PodAttachment
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import OvnStack, read_rows
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner

pytestmark = pytest.mark.e2e
net = ipaddress.ip_network
TOPOLOGY = Layer2Topology(udn_config())
NODES = tuple(NodeState(name, (), index, f"chassis-{index - 1}", GatewayConfig(
    "shared", "breth0", mac_from_ip(f"172.18.0.{index}"), (f"172.18.0.{index}/16",),
    ("172.18.0.1",))) for name, index in (("ovn-worker", 2), ("ovn-worker2", 3)))
LOCAL, REMOTE = NODES[0], dataclasses.replace(NODES[1], remote=True)


def secondary(name: str, cidr: str, network_id: int = 2) -> NetworkState:
    netinfo = NetInfo(name=name, topology="layer2", role="secondary", mtu=1400,
                      subnets=(ClusterSubnet(net(cidr), net(cidr).prefixlen),),
                      nad_key=name.replace("_", "/", 1))
    return NetworkState(netinfo, network_id, (net("169.254.0.0/17"),), (net("100.64.0.0/16"),))


def primary(name: str, network_id: int, cidr: str = "10.200.0.0/16") -> NetworkState:
    netinfo = NetInfo(name=name, topology="layer2", role="primary", mtu=1400,
                      subnets=(ClusterSubnet(net(cidr), net(cidr).prefixlen),),
                      join_subnets=(net("100.65.0.0/16"),),
                      transit_subnets=(net("100.88.0.0/16"),),
                      nad_key=name.replace("_", "/", 1))
    return NetworkState(netinfo, network_id, (net("169.254.0.0/17"),),
                        (net("100.64.0.0/16"),), (16711683 + network_id, 16715779 + network_id))


def pod(network: NetworkState, name: str, node: NodeState, ip: str, tunnel_id: int | None
        ) -> PodAttachment:
    nad_key = network.netinfo.nad_key
    prefix = network.netinfo.subnets[0].cidr.prefixlen
    return PodAttachment(nad_key.split("/")[0], name, f"uid-{name}", node.name, nad_key,
                         mac_from_ip(ip), (f"{ip}/{prefix}",), network.netinfo.role,
                         tunnel_id, node.node_id)


def render_zone(nb: NbWriter, network: NetworkState, local: list[PodAttachment],
                remote: list[PodAttachment]) -> bool:
    """What zone ``ovn-worker`` renders: its node, the other node as remote, its pods and
    the other node's pods as remote ports."""
    network = dataclasses.replace(network, nb=nb.capabilities, interconnect=True)
    netinfo = network.netinfo
    desired = {network_owner(netinfo): TOPOLOGY.build_network(network)}
    for node in (LOCAL, REMOTE):
        desired[node_owner(netinfo, node.name)] = TOPOLOGY.build_node(network, node)
    for attachment in local:
        desired[pod_owner(netinfo, attachment.namespace, attachment.name)] = \
            TOPOLOGY.build_pod(network, attachment)
    for attachment in remote:
        desired[pod_owner(netinfo, attachment.namespace, attachment.name)] = \
            TOPOLOGY.build_remote_pod(network, attachment)
    return apply_many(nb, desired).changed


def test_the_switch_is_a_transit_switch_and_a_remote_pod_a_remote_port(
        ovn_stack: OvnStack) -> None:
    blue = secondary("ns1_blue", "10.128.0.0/24", network_id=2)
    a = pod(blue, "a", LOCAL, "10.128.0.5", 10)
    b = pod(blue, "b", REMOTE, "10.128.0.6", 11)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        assert render_zone(nb, blue, [a], [b])
        assert not render_zone(nb, blue, [a], [b])  # a second render writes nothing
        wait_for_sb(nb.remote)
    (switch,) = read_rows(ovn_stack.nb.remote, "Logical_Switch")
    assert switch.other_config == {"subnet": "10.128.0.0/24", "requested-tnl-key": "16711685",
                                   "interconn-ts": "ns1_blue_ovn_layer2_switch",
                                   "mcast_snoop": "true", "mcast_querier": "false",
                                   "mcast_flood_unregistered": "true"}
    ports = {p.name: p for p in read_rows(ovn_stack.nb.remote, "Logical_Switch_Port")}
    a_port, b_port = (pod_port_name(p.nad_key, p.namespace, p.name) for p in (a, b))
    assert ports[a_port].type == "" and ports[a_port].options["requested-tnl-key"] == "10"
    remote = ports[b_port]
    address = f"{b.mac} 10.128.0.6"
    assert (remote.type, remote.addresses, remote.port_security) == (
        "remote", [address], [address])
    assert remote.options == {"requested-chassis": "ovn-worker2", "iface-id-ver": "uid-b",
                              "requested-tnl-key": "11"}
    assert remote.external_ids["k8s.ovn.org/nad"] == "ns1/blue"
    flow = packet_flow(a_port, a.mac, b.mac, "10.128.0.5", "10.128.0.6")
    assert trace(ovn_stack.sb.remote, switch_name(blue.netinfo), flow).outputs == (b_port,)


def test_the_single_zone_switch_is_no_transit_switch_and_has_no_remote_pods() -> None:
    blue = secondary("ns1_blue", "10.128.0.0/24", network_id=2)
    b = pod(blue, "b", REMOTE, "10.128.0.6", 11)
    assert "interconn-ts" not in build_switch(blue).columns["other_config"]  # type: ignore
    assert TOPOLOGY.build_remote_pod(blue, b) == []
    assert "type" not in TOPOLOGY.build_pod(blue, b)[0].columns


def test_a_remote_pod_without_a_tunnel_id_gets_no_port() -> None:
    blue = dataclasses.replace(secondary("ns1_blue", "10.128.0.0/24"), interconnect=True)
    b = pod(blue, "b", REMOTE, "10.128.0.6", None)
    assert TOPOLOGY.build_remote_pod(blue, b) == []


def test_primary_transit_router_has_a_remote_port_per_remote_node(ovn_stack: OvnStack
                                                                  ) -> None:
    blue = primary("ns1_blue", 2)
    a = pod(blue, "a", LOCAL, "10.200.0.3", 10)
    b = pod(blue, "b", REMOTE, "10.200.0.4", 11)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        if not nb.capabilities.router_peering:
            pytest.skip("this OVN has no transit routers (OVN 26.03's NB schema)")
        assert render_zone(nb, blue, [a], [b])
        assert not render_zone(nb, blue, [a], [b])
        wait_for_sb(nb.remote)
    remote = ovn_stack.nb.remote
    routers = {r.name for r in read_rows(remote, "Logical_Router")}
    assert routers == {"ns1_blue_transit_router", "GR_ns1_blue_ovn-worker"}
    ports = {p.name: p for p in read_rows(remote, "Logical_Router_Port")}
    far = ports["trtor-GR_ns1_blue_ovn-worker2"]
    assert (far.mac, far.networks, far.peer) == ("0a:58:64:58:00:06", ["100.88.0.6/31"], [])
    assert far.options == {"requested-tnl-key": "13", "requested-chassis": "chassis-2"}
    assert far.external_ids["node"] == "ovn-worker2"
    assert "rtotr-GR_ns1_blue_ovn-worker2" not in ports
    near = ports["trtor-GR_ns1_blue_ovn-worker"]
    assert near.options == {"requested-tnl-key": "12"} and near.peer == [
        "rtotr-GR_ns1_blue_ovn-worker"]
    routes = {(r.ip_prefix, r.nexthop, tuple(r.policy)) for r in read_rows(
        remote, "Logical_Router_Static_Route")}
    # the far gateway router's join address through its transit pair; the zone's whole
    # subnet out through its own gateway router (upstream's src-ip route); no pod route
    assert {("100.65.0.3", "100.88.0.7", ()), ("100.65.0.2", "100.88.0.5", ()),
            ("10.200.0.0/16", "100.88.0.5", ("src-ip",))} <= routes
    assert not any(prefix in ("10.200.0.3", "10.200.0.4") for prefix, _, _ in routes)
    switch_ports = {p.name: p for p in read_rows(remote, "Logical_Switch_Port")}
    assert switch_ports[pod_port_name(b.nad_key, b.namespace, b.name)].type == "remote"
    assert "breth0_ns1_blue_ovn-worker2" not in switch_ports


def test_a_node_moving_into_the_zone_turns_its_remote_rows_local(ovn_stack: OvnStack
                                                                ) -> None:
    blue = primary("ns1_blue", 2)
    b = pod(blue, "b", REMOTE, "10.200.0.4", 11)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        if not nb.capabilities.router_peering:
            pytest.skip("this OVN has no transit routers (OVN 26.03's NB schema)")
        render_zone(nb, blue, [], [b])
        network = dataclasses.replace(blue, nb=nb.capabilities, interconnect=True)
        netinfo = network.netinfo
        apply_many(nb, {
            node_owner(netinfo, NODES[1].name): TOPOLOGY.build_node(network, NODES[1]),
            pod_owner(netinfo, b.namespace, b.name): TOPOLOGY.build_pod(network, b)})
    ports = {p.name: p for p in read_rows(ovn_stack.nb.remote, "Logical_Router_Port")}
    assert ports["trtor-GR_ns1_blue_ovn-worker2"].options == {"requested-tnl-key": "13"}
    (port,) = [p for p in read_rows(ovn_stack.nb.remote, "Logical_Switch_Port")
               if p.name == pod_port_name(b.nad_key, b.namespace, b.name)]
    assert port.type == "" and "requested-chassis" in port.options
