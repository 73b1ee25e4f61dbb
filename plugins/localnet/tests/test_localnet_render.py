"""Localnet rows rendered into a real NB, compiled by ovn-northd, judged by ovn-trace."""

from __future__ import annotations

import ipaddress
import subprocess

import pytest
from ovnk_localnet.desired import build_network, build_pod, localnet_port_name, switch_name

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.port_names import pod_port_name
from ovnk_core.ovn.declarative import apply
from ovnk_core.ovn.install import command
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import NetworkState, PodAttachment
from ovnk_core.testing.ovsdb_fixtures import OvnStack, read_rows
from ovnk_core.zone.owners import network_owner, pod_owner

pytestmark = pytest.mark.e2e
net = ipaddress.ip_network


def localnet(name: str, *cidrs: str, vlan: int | None = None, physical: str = "tenantnet",
             network_id: int = 2) -> NetworkState:
    netinfo = NetInfo(name=name, topology="localnet", role="secondary", mtu=1500,
                      subnets=tuple(ClusterSubnet(net(c), net(c).prefixlen) for c in cidrs),
                      vlan_id=vlan, physical_network_name=physical,
                      nad_key=name.replace("_", "/", 1))
    return NetworkState(netinfo, network_id, (net("169.254.0.0/17"),), (net("100.64.0.0/16"),))


def pod(network: NetworkState, name: str, node: str, *ips: str, mac: str = ""
        ) -> PodAttachment:
    nad_key = network.netinfo.nad_key
    return PodAttachment(nad_key.split("/")[0], name, f"uid-{name}", node, nad_key,
                         mac or mac_from_ip(ips[0].split("/")[0]), ips, "secondary")


def render(nb: NbWriter, network: NetworkState, pods: list[PodAttachment]) -> bool:
    netinfo = network.netinfo
    changed = apply(nb, network_owner(netinfo), build_network(network)).changed
    for attachment in pods:
        owner = pod_owner(netinfo, attachment.namespace, attachment.name)
        changed = apply(nb, owner, build_pod(network, attachment)).changed or changed
    return changed


def test_switch_localnet_port_and_pod_ports_are_upstreams(ovn_stack: OvnStack) -> None:
    vlan = localnet("ns1_phys", "192.168.10.0/24", vlan=10)
    a = pod(vlan, "a", "ovn-worker", "192.168.10.5/24")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        assert render(nb, vlan, [a])
        assert not render(nb, vlan, [a])  # a second render writes nothing
    (switch,) = read_rows(ovn_stack.nb.remote, "Logical_Switch")
    assert switch.name == "ns1_phys_ovn_localnet_switch"
    assert switch.other_config == {"subnet": "192.168.10.0/24"}  # no tunnel key, no mcast
    assert {k: switch.external_ids.get(k) for k in (
        "k8s.ovn.org/network", "k8s.ovn.org/role", "k8s.ovn.org/topology")} == {
        "k8s.ovn.org/network": "ns1_phys", "k8s.ovn.org/role": "secondary",
        "k8s.ovn.org/topology": "localnet"}
    assert switch.load_balancer_group == [] and switch.load_balancer == []
    ports = {p.name: p for p in read_rows(ovn_stack.nb.remote, "Logical_Switch_Port")}
    localnet_port = ports.pop("ns1_phys_ovn_localnet_port")
    assert (localnet_port.type, localnet_port.addresses, localnet_port.options,
            localnet_port.tag_request) == ("localnet", ["unknown"],
                                           {"network_name": "tenantnet"}, [10])
    (port,) = ports.values()
    address = f"{mac_from_ip('192.168.10.5')} 192.168.10.5"
    assert (port.name, port.addresses, port.port_security) == ("ns1.phys_ns1_a", [address],
                                                               [address])
    assert port.options == {"requested-chassis": "ovn-worker", "iface-id-ver": "uid-a"}
    assert (port.external_ids["k8s.ovn.org/nad"], port.external_ids["k8s.ovn.org/topology"]
            ) == ("ns1/phys", "localnet")


def test_untagged_without_ipam_and_named_after_the_network_when_no_physical_name(
        ovn_stack: OvnStack) -> None:
    flat = localnet("ns1_flat", physical="")
    a = pod(flat, "a", "ovn-worker", mac="0a:11:22:33:44:55")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, flat, [a])
    (switch,) = read_rows(ovn_stack.nb.remote, "Logical_Switch")
    assert switch.other_config == {}
    ports = {p.name: p for p in read_rows(ovn_stack.nb.remote, "Logical_Switch_Port")}
    port = ports["ns1_flat_ovn_localnet_port"]
    assert port.tag_request == [] and port.options == {"network_name": "ns1_flat"}
    assert ports["ns1.flat_ns1_a"].addresses == ["0a:11:22:33:44:55"]


def test_traffic_leaves_through_the_localnet_port_and_reaches_local_and_remote_pods(
        ovn_stack: OvnStack) -> None:
    vlan = localnet("ns1_phys", "192.168.10.0/24", vlan=10)
    other = localnet("ns2_other", "192.168.10.0/24", vlan=20, network_id=3)
    a = pod(vlan, "a", "ovn-worker", "192.168.10.5/24")
    b = pod(vlan, "b", "ovn-worker2", "192.168.10.6/24")
    c = pod(other, "c", "ovn-worker", "192.168.10.7/24")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, vlan, [a, b])
        render(nb, other, [c])
        wait_for_sb(nb.remote)
    a_port = pod_port_name(a.nad_key, a.namespace, a.name)

    def send(dst_mac: str, dst_ip: str) -> tuple[str, ...]:
        flow = packet_flow(a_port, a.mac, dst_mac, "192.168.10.5", dst_ip)
        return trace(ovn_stack.sb.remote, switch_name(vlan.netinfo), flow).outputs
    # to the physical network's host: out through the localnet port (tagged there by
    # ovn-controller with tag_request 10)
    assert send("0a:58:c0:a8:0a:fe", "192.168.10.254") == (localnet_port_name(vlan.netinfo),)
    # to a pod of the same network: its port (on ovn-worker2: through the physical network)
    assert send(b.mac, "192.168.10.6") == (pod_port_name(b.nad_key, b.namespace, b.name),)
    # the other network's pod is not on this switch
    assert pod_port_name(c.nad_key, c.namespace, c.name) not in send(c.mac, "192.168.10.7")
    # the VLAN each localnet port's binding carries (ovn-controller tags with it)
    tags = {name: subprocess.run(
        command("ovn-sbctl", f"--db={ovn_stack.sb.remote}", "--bare", "--columns=tag", "find",
         "Port_Binding", f"logical_port={name}"), capture_output=True, text=True,
        check=True).stdout.strip() for name in (localnet_port_name(vlan.netinfo),
                                                 localnet_port_name(other.netinfo))}
    assert tags == {"ns1_phys_ovn_localnet_port": "10", "ns2_other_ovn_localnet_port": "20"}
