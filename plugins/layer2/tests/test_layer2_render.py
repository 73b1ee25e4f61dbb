"""Layer2 rows rendered into a real NB, compiled by ovn-northd, judged by ovn-trace."""

from __future__ import annotations

import ipaddress

import pytest
from ovnk_layer2.desired import build_pod, build_switch, switch_name

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.port_names import pod_port_name
from ovnk_core.ovn.declarative import apply
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import NetworkState, PodAttachment
from ovnk_core.testing.ovsdb_fixtures import OvnStack, read_rows
from ovnk_core.zone.owners import network_owner, pod_owner

pytestmark = pytest.mark.e2e
net = ipaddress.ip_network


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
