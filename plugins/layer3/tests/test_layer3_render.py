"""Layer3 rows rendered into a real NB, compiled by ovn-northd, judged by ovn-trace."""

from __future__ import annotations

import dataclasses
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
from ovnk_core.ovn.declarative import DesiredRow, apply, apply_many
from ovnk_core.ovn.trace import TraceResult, packet_flow, trace, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState, PodAttachment
from ovnk_core.testing.neighbors import learn_neighbor
from ovnk_core.testing.ovsdb_fixtures import OvnStack, read_rows
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner

pytestmark = pytest.mark.e2e
net = ipaddress.ip_network


MASQUERADE = (net("169.254.0.0/17"),)


def network(name: str, cidr: str = "10.100.0.0/16", network_id: int = 1,
            role: str = "primary") -> NetworkState:
    netinfo = NetInfo(name=name, topology="layer3", role=role, mtu=1400,
                      subnets=(ClusterSubnet(net(cidr), 24),),
                      join_subnets=(net("100.65.0.0/16"),) if role == "primary" else ())
    return NetworkState(netinfo, network_id, MASQUERADE, (net("100.64.0.0/16"),))


def gateway(index: int) -> GatewayConfig:
    return GatewayConfig("shared", "breth0", mac_from_ip(f"172.18.0.{index}"),
                         (f"172.18.0.{index}/16",), ("172.18.0.1",))


NODES = (NodeState("ovn-worker", (net("10.100.0.0/24"),), 2, "chassis-1", gateway(2)),
         NodeState("ovn-worker2", (net("10.100.1.0/24"),), 3, "chassis-2", gateway(3)))


def default_network() -> NetworkState:
    netinfo = NetInfo(name="default", topology="layer3", role="default", mtu=1400,
                      subnets=(ClusterSubnet(net("10.244.0.0/16"), 24),))
    return NetworkState(netinfo, 0, MASQUERADE, (net("100.64.0.0/16"),))


DEFAULT_NODES = (NodeState("ovn-worker", (net("10.244.0.0/24"),), 2, "chassis-1", gateway(2)),
                 NodeState("ovn-worker2", (net("10.244.1.0/24"),), 3, "chassis-2", gateway(3)))


def pod(network: NetworkState, name: str, node: str, ip: str) -> PodAttachment:
    namespace = network.netinfo.name.split("_")[0]
    return PodAttachment(namespace, name, f"uid-{name}", node, f"{namespace}/{namespace}",
                         mac_from_ip(ip), (f"{ip}/24",))


def render(nb: NbWriter, network: NetworkState, pods: list[PodAttachment],
           nodes: tuple[NodeState, ...] = NODES) -> bool:
    netinfo = network.netinfo
    desired = {network_owner(netinfo): build_network(network)}
    for node in nodes:
        desired[node_owner(netinfo, node.name)] = build_node(network, node)
    changed = apply_many(nb, desired).changed
    for attachment in pods:
        owner = pod_owner(netinfo, attachment.namespace, attachment.name)
        changed = apply(nb, owner, build_pod(network, attachment)).changed or changed
    return changed


def trace_from(stack: OvnStack, network: NetworkState, src: PodAttachment, dst_ip: str
               ) -> TraceResult:
    src_ip = src.ips[0].split("/")[0]
    router_mac = mac_from_ip(ipaddress.ip_network(src.ips[0], strict=False).network_address + 1)
    flow = packet_flow(pod_port_name(network.netinfo, src), src.mac, router_mac, src_ip, dst_ip)
    return trace(stack.sb.remote, network.netinfo.scoped_name(src.node), flow)


def reach(stack: OvnStack, network: NetworkState, src: PodAttachment, dst_ip: str
          ) -> tuple[str, ...]:
    return trace_from(stack, network, src, dst_ip).outputs


def test_pods_of_one_network_reach_each_other_across_nodes(ovn_stack: OvnStack) -> None:
    blue = network("blue_blue")
    a = pod(blue, "a", "ovn-worker", "10.100.0.3")
    b = pod(blue, "b", "ovn-worker2", "10.100.1.3")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        assert render(nb, blue, [a, b])
        assert not render(nb, blue, [a, b])  # a second render writes nothing
        wait_for_sb(nb.remote)
        assert reach(ovn_stack, blue, a, "10.100.1.3") == (pod_port_name(blue.netinfo, b),)
        assert reach(ovn_stack, blue, b, "10.100.0.3") == (pod_port_name(blue.netinfo, a),)


def test_networks_with_the_same_cidr_stay_apart(ovn_stack: OvnStack) -> None:
    blue, teal = network("blue_blue"), network("teal_teal", network_id=2)
    blue_a, blue_b = (pod(blue, "a", "ovn-worker", "10.100.0.3"),
                      pod(blue, "b", "ovn-worker2", "10.100.1.3"))
    teal_c, teal_d = (pod(teal, "c", "ovn-worker", "10.100.0.3"),
                      pod(teal, "d", "ovn-worker2", "10.100.1.3"))
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, blue, [blue_a, blue_b])
        render(nb, teal, [teal_c, teal_d])
        wait_for_sb(nb.remote)
        # The same destination IP is a different pod in each network.
        assert reach(ovn_stack, blue, blue_a, "10.100.1.3") == (
            pod_port_name(blue.netinfo, blue_b),)
        assert reach(ovn_stack, teal, teal_c, "10.100.1.3") == (
            pod_port_name(teal.netinfo, teal_d),)
        teal_ports = {pod_port_name(teal.netinfo, teal_c), pod_port_name(teal.netinfo, teal_d)}
        for destination in ("10.100.0.3", "10.100.1.3", "10.100.7.7"):
            assert not teal_ports & set(reach(ovn_stack, blue, blue_a, destination))


def test_egress_is_snated_to_each_networks_own_masquerade_ip(ovn_stack: OvnStack) -> None:
    blue, teal = network("blue_blue", network_id=1), network("teal_teal", network_id=2)
    blue_a = pod(blue, "a", "ovn-worker", "10.100.0.3")
    teal_a = pod(teal, "a", "ovn-worker", "10.100.0.3")  # the same IP in the other network
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, blue, [blue_a])
        render(nb, teal, [teal_a])
        wait_for_sb(nb.remote)
        for netinfo in (blue.netinfo, teal.netinfo):
            gr = gateway_router_name(netinfo, "ovn-worker")
            learn_neighbor(ovn_stack.sb.remote, gr, f"rtoe-{gr}", "172.18.0.1",
                           "aa:bb:cc:00:00:01")
        blue_out = trace_from(ovn_stack, blue, blue_a, "8.8.8.8")
        teal_out = trace_from(ovn_stack, teal, teal_a, "8.8.8.8")
    # masquerade IPs: subnet base + 10 + 2*id - 1 (169.254.0.11 for id 1, .13 for id 2)
    assert blue_out.snat_ips == ("169.254.0.11",)
    assert blue_out.outputs == ("breth0_blue_blue_ovn-worker",)
    assert teal_out.snat_ips == ("169.254.0.13",)
    assert teal_out.outputs == ("breth0_teal_teal_ovn-worker",)


def test_pod_traffic_to_its_node_goes_through_the_management_port(ovn_stack: OvnStack
                                                                   ) -> None:
    blue = network("blue_blue")
    a = pod(blue, "a", "ovn-worker", "10.100.0.3")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, blue, [a])
        wait_for_sb(nb.remote)
        gr = gateway_router_name(blue.netinfo, "ovn-worker")
        learn_neighbor(ovn_stack.sb.remote, gr, f"rtoe-{gr}", "169.254.0.4",
                       "0a:58:a9:fe:00:04")
        assert reach(ovn_stack, blue, a, "172.18.0.2") == ("k8s-blue_blue_ovn-worker",)
        # the network's own masquerade IP is the node too, in the network's eyes (upstream)
        assert reach(ovn_stack, blue, a, "169.254.0.11") == ("k8s-blue_blue_ovn-worker",)
        # the host's masquerade IP is reached like any address: through the gateway
        # router, SNATed to the network's masquerade IP
        to_host = trace_from(ovn_stack, blue, a, "169.254.0.2")
        policies = {p.match: p for p in read_rows(nb.remote, "Logical_Router_Policy")}
    assert to_host.outputs == ("breth0_blue_blue_ovn-worker",)
    assert to_host.snat_ips == ("169.254.0.11",)
    switch = "blue_blue_ovn-worker"
    assert {(match, p.priority, tuple(p.nexthops)) for match, p in policies.items()
            if f'"rtos-{switch}"' in match} == {
        (f'inport == "rtos-{switch}" && ip4.dst == {ip} /* {switch} */', 1004, ("10.100.0.2",))
        for ip in ("172.18.0.2", "169.254.0.11")}


def test_default_network_pods_reach_each_other_and_leave_as_the_node(ovn_stack: OvnStack
                                                                      ) -> None:
    default, nodes = default_network(), DEFAULT_NODES
    a = PodAttachment("kube-system", "a", "uid-a", "ovn-worker", "default",
                      mac_from_ip("10.244.0.3"), ("10.244.0.3/24",))
    b = PodAttachment("kube-system", "b", "uid-b", "ovn-worker2", "default",
                      mac_from_ip("10.244.1.3"), ("10.244.1.3/24",))
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, default, [a, b], nodes)
        wait_for_sb(nb.remote)
        learn_neighbor(ovn_stack.sb.remote, "GR_ovn-worker", "rtoe-GR_ovn-worker",
                       "172.18.0.1", "aa:bb:cc:00:00:01")
        assert reach(ovn_stack, default, a, "10.244.1.3") == ("kube-system_b",)
        out = trace_from(ovn_stack, default, a, "8.8.8.8")
        names = {row.name for row in read_rows(nb.remote, "Logical_Router")}
    assert out.snat_ips == ("172.18.0.2",) and out.outputs == ("breth0_ovn-worker",)
    assert names == {"ovn_cluster_router", "GR_ovn-worker", "GR_ovn-worker2"}


def test_secondary_networks_get_no_gateway(ovn_stack: OvnStack) -> None:
    red = network("red_red", role="secondary")
    a = pod(red, "a", "ovn-worker", "10.100.0.3")
    b = pod(red, "b", "ovn-worker2", "10.100.1.3")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, red, [a, b])
        wait_for_sb(nb.remote)
        assert reach(ovn_stack, red, a, "10.100.1.3") == (pod_port_name(red.netinfo, b),)
        assert reach(ovn_stack, red, a, "8.8.8.8") == ()  # nowhere to go
        routers = {row.name for row in read_rows(nb.remote, "Logical_Router")}
        switches = {row.name: row for row in read_rows(nb.remote, "Logical_Switch")}
        ports = {row.name for row in read_rows(nb.remote, "Logical_Switch_Port")}
        nats = list(read_rows(nb.remote, "NAT"))
    assert routers == {"red_red_ovn_cluster_router"}
    assert set(switches) == {"red_red_ovn-worker", "red_red_ovn-worker2"}
    assert switches["red_red_ovn-worker"].other_config == {"subnet": "10.100.0.0/24",
                                                            "exclude_ips": "10.100.0.2"}
    assert not any(name.startswith("k8s-") for name in ports) and not nats


def test_a_node_without_gateway_config_gets_its_gateway_when_it_publishes_one(
        ovn_stack: OvnStack) -> None:
    blue = network("blue_blue")
    bare = (NodeState("ovn-worker", (net("10.100.0.0/24"),), 2),)
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, blue, [], bare)
        assert {r.name for r in read_rows(nb.remote, "Logical_Router")} == {
            "blue_blue_ovn_cluster_router"}
        assert "k8s-blue_blue_ovn-worker" in {r.name for r in
                                              read_rows(nb.remote, "Logical_Switch_Port")}
        render(nb, blue, [], NODES[:1])
        assert {r.name for r in read_rows(nb.remote, "Logical_Router")} == {
            "blue_blue_ovn_cluster_router", "GR_blue_blue_ovn-worker"}
        assert not render(nb, blue, [], NODES[:1])


def test_names_and_external_ids_follow_upstream(ovn_stack: OvnStack) -> None:
    blue = network("ns1_blue-net")
    attachment = PodAttachment("ns1", "p", "uid-p", "ovn-worker", "ns1/blue-net",
                               mac_from_ip("10.100.0.5"), ("10.100.0.5/24",))
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, blue, [attachment])
        names = {row.name for row in read_rows(nb.remote, "Logical_Switch")}
        assert names == {"ns1_blue.net_ovn-worker", "ns1_blue.net_ovn-worker2",
                         "ns1_blue.net_join", "ext_ns1_blue.net_ovn-worker",
                         "ext_ns1_blue.net_ovn-worker2"}
        routers = {row.name: row for row in read_rows(nb.remote, "Logical_Router")}
        assert set(routers) == {"ns1_blue.net_ovn_cluster_router",
                                "GR_ns1_blue.net_ovn-worker", "GR_ns1_blue.net_ovn-worker2"}
        router = routers["ns1_blue.net_ovn_cluster_router"]
        assert router.name == "ns1_blue.net_ovn_cluster_router"
        assert router.external_ids["k8s-cluster-router"] == "yes"
        assert router.external_ids["k8s.ovn.org/role"] == "primary"
        ports = {row.name: row for row in read_rows(nb.remote, "Logical_Switch_Port")}
        assert {"stor-ns1_blue.net_ovn-worker", "k8s-ns1_blue.net_ovn-worker",
                "ns1.blue.net_ns1_p"} <= set(ports)
        pod_port = ports["ns1.blue.net_ns1_p"]
        assert pod_port.addresses == ["0a:58:0a:64:00:05 10.100.0.5"]
        assert pod_port.options["requested-chassis"] == "ovn-worker"
        assert pod_port.external_ids["k8s.ovn.org/nad"] == "ns1/blue-net"
        assert ports["k8s-ns1_blue.net_ovn-worker"].addresses == [
            "0a:58:0a:64:00:02 10.100.0.2"]
        rtos = {row.name: row for row in read_rows(nb.remote, "Logical_Router_Port")}
        assert rtos["rtos-ns1_blue.net_ovn-worker"].networks == ["10.100.0.1/24"]
        assert rtos["rtos-ns1_blue.net_ovn-worker"].mac == "0a:58:0a:64:00:01"
        assert rtos["rtoj-ns1_blue.net_ovn_cluster_router"].networks == ["100.65.0.1/16"]
        assert rtos["rtoj-GR_ns1_blue.net_ovn-worker"].networks == ["100.65.0.2/16"]
        assert sorted(rtos["rtoe-GR_ns1_blue.net_ovn-worker"].networks) == [
            "169.254.0.11/32", "172.18.0.2/16"]
        gr = routers["GR_ns1_blue.net_ovn-worker"]
        assert gr.options["chassis"] == "chassis-1"
        assert gr.external_ids["physical_ips"] == "172.18.0.2,169.254.0.11"
        assert {(n.type, n.external_ip, n.logical_ip) for n in gr.nat} == {
            ("snat", "169.254.0.11", "100.65.0.2"), ("snat", "169.254.0.11", "10.100.0.0/16")}
        assert {(r.ip_prefix, r.nexthop) for r in gr.static_routes} == {
            ("10.100.0.0/16", "100.65.0.1"), ("0.0.0.0/0", "172.18.0.1"),
            ("169.254.0.0/17", "169.254.0.4")}
        assert {(r.ip_prefix, r.nexthop, tuple(r.policy)) for r in router.static_routes} == {
            ("10.100.0.0/24", "100.65.0.2", ("src-ip",)),
            ("10.100.1.0/24", "100.65.0.3", ("src-ip",)),
            ("100.65.0.2", "100.65.0.2", ()), ("100.65.0.3", "100.65.0.3", ())}
        policies = {p.match: p for p in router.policies}
        node_policy = policies['inport == "rtos-ns1_blue.net_ovn-worker" && ip4.dst == '
                               '172.18.0.2 /* ns1_blue.net_ovn-worker */']
        assert node_policy.priority == 1004 and node_policy.nexthops == ["10.100.0.2"]


def test_gateway_options_and_external_port_ids_are_upstreams_per_network(
        ovn_stack: OvnStack) -> None:
    """Upstream's ``createGWRouter`` and ``addExternalSwitch``: the default network's
    gateway router SNATs in conntrack zone 0, its ``etor-`` port announces the router's
    NAT addresses (not its load balancer VIPs) and its ``rtoe-`` port is marked
    ``gateway-physical-ip``; a user-defined network's router has ``disable_garp_rarp``
    and its external ports none of these."""
    blue = network("blue_blue")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, default_network(), [], DEFAULT_NODES)
        render(nb, blue, [])
        routers = {row.name: row for row in read_rows(nb.remote, "Logical_Router")}
        switch_ports = {row.name: row for row in read_rows(nb.remote, "Logical_Switch_Port")}
        router_ports = {row.name: row for row in read_rows(nb.remote, "Logical_Router_Port")}
        assert not render(nb, default_network(), [], DEFAULT_NODES)  # converged
    common = {"lb_force_snat_ip": "router_ip", "mac_binding_age_threshold": "300",
              "chassis": "chassis-1", "always_learn_from_arp_request": "false",
              "dynamic_neigh_routers": "false"}
    assert routers["GR_ovn-worker"].options == {**common, "snat-ct-zone": "0"}
    assert routers["GR_blue_blue_ovn-worker"].options == {**common,
                                                          "disable_garp_rarp": "true"}
    assert switch_ports["etor-GR_ovn-worker"].options == {
        "router-port": "rtoe-GR_ovn-worker", "nat-addresses": "router",
        "exclude-lb-vips-from-garp": "true"}
    assert switch_ports["etor-GR_blue_blue_ovn-worker"].options == {
        "router-port": "rtoe-GR_blue_blue_ovn-worker"}
    assert router_ports["rtoe-GR_ovn-worker"].external_ids["gateway-physical-ip"] == "yes"
    assert "gateway-physical-ip" not in router_ports[
        "rtoe-GR_blue_blue_ovn-worker"].external_ids


def test_the_default_networks_switch_router_ports_carry_upstreams_arp_proxy(
        ovn_stack: OvnStack) -> None:
    """``stor-<node>`` of the default network (only) has upstream's KubeVirt ARP proxy:
    its MAC, the link-local gateway addresses and the cluster subnets."""
    blue = network("blue_blue")
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        render(nb, default_network(), [], DEFAULT_NODES)
        render(nb, blue, [])
        ports = {row.name: row for row in read_rows(nb.remote, "Logical_Switch_Port")}
    for node in ("ovn-worker", "ovn-worker2"):
        assert ports[f"stor-{node}"].options == {
            "router-port": f"rtos-{node}",
            "arp_proxy": "0a:58:a9:fe:01:01 169.254.1.1 fe80::1 10.244.0.0/16"}
        assert ports[f"stor-blue_blue_{node}"].options == {
            "router-port": f"rtos-blue_blue_{node}"}


def as_previous_release(row: DesiredRow) -> DesiredRow:
    """``row`` as the release before upstream's gateway options wrote it: no
    ``snat-ct-zone``/``disable_garp_rarp``, ``etor-``/``stor-`` ports with their router
    port only, no ``gateway-physical-ip``, and the 1004 policy to the host masquerade IP
    (.2) where it now matches the network's masquerade IP."""
    columns = dict(row.columns)
    if row.table == "Logical_Router" and "options" in columns:
        columns["options"] = {k: v for k, v in columns["options"].items()
                              if k not in ("snat-ct-zone", "disable_garp_rarp")}
    if row.table == "Logical_Switch_Port" and columns.get("type") == "router":
        columns["options"] = {"router-port": columns["options"]["router-port"]}
    extra = {k: v for k, v in row.extra_external_ids.items() if k != "gateway-physical-ip"}
    ids = row.ids
    if row.table == "Logical_Router_Policy" and "169.254.0.11" in columns["match"]:
        columns["match"] = columns["match"].replace("169.254.0.11", "169.254.0.2")
        ids = dataclasses.replace(ids, name=ids.name.replace("169.254.0.11", "169.254.0.2"))
    return dataclasses.replace(row, ids=ids, columns=columns, extra_external_ids=extra)


def test_rows_of_the_previous_release_are_updated_in_place(ovn_stack: OvnStack) -> None:
    """An upgrade converges: the routers and ports keep their rows (only the changed
    columns are written); the one policy whose match changed is replaced in the same
    transaction as the node's other rows."""
    blue, default = network("blue_blue"), default_network()
    node = NODES[0]
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        old = {node_owner(blue.netinfo, node.name): [as_previous_release(r) for r in
                                                     build_node(blue, node)],
               node_owner(default.netinfo, node.name): [
                   as_previous_release(r) for r in build_node(default, DEFAULT_NODES[0])]}
        apply_many(nb, {network_owner(blue.netinfo): build_network(blue),
                        network_owner(default.netinfo): build_network(default), **old})

        def uuids() -> dict[str, object]:
            return {row.name: row.uuid for table in ("Logical_Router", "Logical_Router_Port",
                                                     "Logical_Switch_Port")
                    for row in read_rows(nb.remote, table)}
        before = uuids()
        policies_before = {p.match for p in read_rows(nb.remote, "Logical_Router_Policy")}
        assert any("169.254.0.2 " in match for match in policies_before)
        assert render(nb, blue, [], NODES[:1])
        assert render(nb, default, [], DEFAULT_NODES[:1])
        assert uuids() == before
        policies = {p.match for p in read_rows(nb.remote, "Logical_Router_Policy")}
        assert not render(nb, blue, [], NODES[:1])
        assert not render(nb, default, [], DEFAULT_NODES[:1])
    switch = "blue_blue_ovn-worker"
    assert policies == {f'inport == "rtos-{switch}" && ip4.dst == {ip} /* {switch} */'
                        for ip in ("172.18.0.2", "169.254.0.11")} | {
        'inport == "rtos-ovn-worker" && ip4.dst == 172.18.0.2 /* ovn-worker */'}
