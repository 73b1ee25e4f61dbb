"""Layer3 rows rendered into a real NB, compiled by ovn-northd, judged by ovn-trace."""

from __future__ import annotations

import ipaddress

import pytest
from ovnk_layer3.desired import (
    NodeSubnets,
    PodAttachment,
    build_network,
    build_node,
    build_pod,
    network_owner,
    node_owner,
    pod_owner,
    pod_port_name,
)

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import apply, apply_many
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb
from ovnk_core.testing.ovsdb_fixtures import OvnStack

pytestmark = pytest.mark.e2e
net = ipaddress.ip_network


def network(name: str, cidr: str = "10.100.0.0/16") -> NetInfo:
    return NetInfo(name=name, topology="layer3", role="primary", mtu=1400,
                   subnets=(ClusterSubnet(net(cidr), 24),),
                   join_subnets=(net("100.65.0.0/16"),))


NODES = (NodeSubnets("ovn-worker", (net("10.100.0.0/24"),)),
         NodeSubnets("ovn-worker2", (net("10.100.1.0/24"),)))


def pod(netinfo: NetInfo, name: str, node: str, ip: str) -> PodAttachment:
    namespace = netinfo.name.split("_")[0]
    return PodAttachment(namespace, name, f"uid-{name}", node, f"{namespace}/{namespace}",
                         mac_from_ip(ip), (f"{ip}/24",))


def render(nb: NbClient, netinfo: NetInfo, pods: list[PodAttachment]) -> bool:
    desired = {network_owner(netinfo): build_network(netinfo)}
    for node in NODES:
        desired[node_owner(netinfo, node.name)] = build_node(netinfo, node)
    changed = apply_many(nb, desired).changed
    for attachment in pods:
        owner = pod_owner(netinfo, attachment.namespace, attachment.name)
        changed = apply(nb, owner, build_pod(netinfo, attachment)).changed or changed
    return changed


def reach(stack: OvnStack, netinfo: NetInfo, src: PodAttachment, dst_ip: str) -> tuple[str, ...]:
    src_ip = src.ips[0].split("/")[0]
    router_mac = mac_from_ip(ipaddress.ip_network(src.ips[0], strict=False).network_address + 1)
    flow = packet_flow(pod_port_name(netinfo, src), src.mac, router_mac, src_ip, dst_ip)
    return trace(stack.sb.remote, netinfo.scoped_name(src.node), flow).outputs


def test_pods_of_one_network_reach_each_other_across_nodes(ovn_stack: OvnStack) -> None:
    blue = network("blue_blue")
    a = pod(blue, "a", "ovn-worker", "10.100.0.3")
    b = pod(blue, "b", "ovn-worker2", "10.100.1.3")
    with NbClient([ovn_stack.nb.remote]).start() as nb:
        assert render(nb, blue, [a, b])
        assert not render(nb, blue, [a, b])  # a second render writes nothing
        wait_for_sb(nb.remote)
        assert reach(ovn_stack, blue, a, "10.100.1.3") == (pod_port_name(blue, b),)
        assert reach(ovn_stack, blue, b, "10.100.0.3") == (pod_port_name(blue, a),)


def test_networks_with_the_same_cidr_stay_apart(ovn_stack: OvnStack) -> None:
    blue, teal = network("blue_blue"), network("teal_teal")
    blue_a, blue_b = (pod(blue, "a", "ovn-worker", "10.100.0.3"),
                      pod(blue, "b", "ovn-worker2", "10.100.1.3"))
    teal_c, teal_d = (pod(teal, "c", "ovn-worker", "10.100.0.3"),
                      pod(teal, "d", "ovn-worker2", "10.100.1.3"))
    with NbClient([ovn_stack.nb.remote]).start() as nb:
        render(nb, blue, [blue_a, blue_b])
        render(nb, teal, [teal_c, teal_d])
        wait_for_sb(nb.remote)
        # The same destination IP is a different pod in each network.
        assert reach(ovn_stack, blue, blue_a, "10.100.1.3") == (pod_port_name(blue, blue_b),)
        assert reach(ovn_stack, teal, teal_c, "10.100.1.3") == (pod_port_name(teal, teal_d),)
        teal_ports = {pod_port_name(teal, teal_c), pod_port_name(teal, teal_d)}
        for destination in ("10.100.0.3", "10.100.1.3", "10.100.7.7"):
            assert not teal_ports & set(reach(ovn_stack, blue, blue_a, destination))


def test_names_and_external_ids_follow_upstream(ovn_stack: OvnStack) -> None:
    blue = network("ns1_blue-net")
    attachment = PodAttachment("ns1", "p", "uid-p", "ovn-worker", "ns1/blue-net",
                               mac_from_ip("10.100.0.5"), ("10.100.0.5/24",))
    with NbClient([ovn_stack.nb.remote]).start() as nb:
        render(nb, blue, [attachment])
        names = {row.name for row in nb.rows("Logical_Switch").values()}
        assert names == {"ns1_blue.net_ovn-worker", "ns1_blue.net_ovn-worker2"}
        [router] = nb.rows("Logical_Router").values()
        assert router.name == "ns1_blue.net_ovn_cluster_router"
        assert router.external_ids["k8s-cluster-router"] == "yes"
        assert router.external_ids["k8s.ovn.org/role"] == "primary"
        ports = {row.name: row for row in nb.rows("Logical_Switch_Port").values()}
        assert {"stor-ns1_blue.net_ovn-worker", "k8s-ns1_blue.net_ovn-worker",
                "ns1.blue.net_ns1_p"} <= set(ports)
        pod_port = ports["ns1.blue.net_ns1_p"]
        assert pod_port.addresses == ["0a:58:0a:64:00:05 10.100.0.5"]
        assert pod_port.options["requested-chassis"] == "ovn-worker"
        assert pod_port.external_ids["k8s.ovn.org/nad"] == "ns1/blue-net"
        assert ports["k8s-ns1_blue.net_ovn-worker"].addresses == [
            "0a:58:0a:64:00:02 10.100.0.2"]
        rtos = {row.name: row for row in nb.rows("Logical_Router_Port").values()}
        assert rtos["rtos-ns1_blue.net_ovn-worker"].networks == ["10.100.0.1/24"]
        assert rtos["rtos-ns1_blue.net_ovn-worker"].mac == "0a:58:0a:64:00:01"
