"""The shared-gateway bridge's flows and host rules, computed without I/O."""

from __future__ import annotations

from pathlib import Path

import pytest

from ovnk_core.node.bridge_mappings import parse_bridge_mappings, with_bridge_mapping
from ovnk_core.node.gateway import (
    DefaultServiceSteering,
    GatewayNetwork,
    allowed_default_cluster_ips,
    build_gateway_flows,
    merge_flows,
    parsed_services,
    patch_port_name,
    service_external_ips,
    service_node_ports,
)
from ovnk_core.node.gateway_host import (
    ServiceRedirect,
    build_host_table,
    packet_mark,
    service_redirects,
)
from ovnk_core.node.nft import build_table_script

pytestmark = pytest.mark.unit
MASQ = "169.254.0.0/17"


def test_patch_port_names_follow_the_localnet_port_names() -> None:
    assert patch_port_name("breth0", "blue_blue-network", "ovn-worker") == \
        "patch-breth0_blue_blue.network_ovn-worker-to-br-int"
    assert patch_port_name("breth0", "default", "ovn-worker") == \
        "patch-breth0_ovn-worker-to-br-int"


def test_flows_send_node_traffic_to_the_host_and_masquerade_traffic_to_its_router() -> None:
    patches = {"patch-breth0_ovn-worker-to-br-int": 2,
               "patch-breth0_blue_blue.network_ovn-worker-to-br-int": 5}
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1, patches, [
        GatewayNetwork("blue_blue-network", "169.254.0.11"),
        GatewayNetwork("green_green-network", "169.254.0.13")],  # not patched in yet
        "breth0", "ovn-worker", MASQ)
    assert "table=0,priority=100,in_port=1,udp,nw_dst=172.18.0.2,tp_dst=6081 " \
           "actions=LOCAL" in flows
    assert "table=0,priority=90,in_port=1,arp actions=LOCAL,2,5" in flows
    assert "table=0,priority=100,in_port=5,ip,nw_src=169.254.0.11 " \
           "actions=mod_dl_dst:0a:58:ac:12:00:02,LOCAL" in flows
    assert "table=0,priority=100,in_port=LOCAL,ip,nw_dst=169.254.0.11 actions=5" in flows
    assert not [f for f in flows if "169.254.0.13" in f]
    # masquerade ARP never crosses the uplink, either way
    assert f"table=0,priority=95,in_port=1,arp,arp_spa={MASQ} actions=drop" in flows
    assert f"table=0,priority=95,in_port=5,arp,arp_spa={MASQ} actions=LOCAL" in flows
    assert flows[-1] != "table=0,priority=0 actions=NORMAL"
    assert "table=0,priority=0 actions=drop" in flows
    # pure: the same inputs give the same table (so an unchanged bridge is not rewritten)
    assert flows == build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1, dict(
        reversed(list(patches.items()))), [
        GatewayNetwork("green_green-network", "169.254.0.13"),
        GatewayNetwork("blue_blue-network", "169.254.0.11")], "breth0", "ovn-worker", MASQ)


def test_host_table_masquerades_only_masquerade_sources_leaving_the_bridge() -> None:
    script = build_table_script(build_host_table([MASQ], "breth0"))
    assert "type nat hook postrouting priority srcnat" in script
    assert (f'ip saddr {MASQ} ip daddr != {{ {MASQ} }} oifname "breth0" masquerade') in script
    # service traffic keeps its masquerade source: the default router answers it there
    script = build_table_script(build_host_table([MASQ], "breth0", ["10.96.0.0/16"]))
    assert (f'ip saddr {MASQ} ip daddr != {{ {MASQ}, 10.96.0.0/16 }} oifname "breth0" '
            "masquerade") in script


def test_host_table_refuses_one_subnet_given_as_a_string() -> None:
    # a string is an iterable of characters: '1' would otherwise reach ip_network
    with pytest.raises(TypeError, match="one per IP family"):
        build_host_table(MASQ, "breth0")


def test_host_table_sends_the_hosts_service_traffic_from_its_masquerade_ip() -> None:
    redirects = [ServiceRedirect("tcp", 30080, "10.96.0.5", 80),
                 ServiceRedirect("udp", 30081, "10.96.0.5", 81),
                 ServiceRedirect("tcp", 30090, "10.96.0.7", 8080, mark=0x1001),
                 ServiceRedirect("tcp", 443, "10.96.0.5", 443, external_ip="192.0.2.80")]
    script = build_table_script(build_host_table([MASQ], "breth0", ["10.96.0.0/16"], redirects,
                                                 {0x1001: ["169.254.0.12"]}))
    assert "type nat hook output priority -100" in script
    for rule in (
            # a socket bound to another local address (the node IP) leaves from .2
            'ip daddr { 10.96.0.0/16 } ip saddr != 169.254.0.2 oifname "breth0" '
            "fib saddr type local snat ip to 169.254.0.2",
            # a UDN's service traffic from the host leaves from its host-service IP
            'meta mark 0x1001 ip daddr { 10.96.0.0/16 } oifname "breth0" snat ip to '
            "169.254.0.12",
            "ip daddr != 127.0.0.0/8 fib daddr type local tcp dport 30080 "
            "dnat ip to 10.96.0.5:80",
            "ip daddr != 127.0.0.0/8 fib daddr type local udp dport 30081 "
            "dnat ip to 10.96.0.5:81",
            "ip daddr != 127.0.0.0/8 fib daddr type local tcp dport 30090 "
            "meta mark set 0x1001 dnat ip to 10.96.0.7:8080",
            "ip daddr 192.0.2.80 tcp dport 443 dnat ip to 10.96.0.5:443"):
        assert rule in script, rule
    # the UDN's source rule comes first (the first NAT rule that matches wins)
    assert script.index("meta mark 0x1001") < script.index("fib saddr type local")
    # no service CIDRs: the host's service traffic is not touched
    assert "output" not in build_table_script(build_host_table([MASQ], "breth0", (), redirects))


def test_service_redirects_of_node_ports_and_external_ips_by_network() -> None:
    services = parsed_services([
        {"metadata": {"namespace": "plain", "name": "web"},
         "spec": {"type": "LoadBalancer", "clusterIPs": ["10.96.0.5", "fd00::5"],
                  "externalIPs": ["192.0.2.80", "2001:db8::1"],
                  "ports": [{"port": 80, "nodePort": 30080},
                            {"port": 53, "protocol": "UDP", "nodePort": 30053}]}},
        {"metadata": {"namespace": "blue", "name": "web"},
         "spec": {"type": "NodePort", "clusterIP": "10.96.0.7",
                  "ports": [{"port": 8080, "nodePort": 30090}]}},
        {"metadata": {"namespace": "green", "name": "web"},  # no gateway here
         "spec": {"type": "NodePort", "clusterIP": "10.96.0.8",
                  "ports": [{"port": 8080, "nodePort": 30091}]}},
        {"metadata": {"namespace": "plain", "name": "internal"},
         "spec": {"clusterIP": "10.96.0.9", "ports": [{"port": 80}]}}])
    found = service_redirects(services, {"blue": "blue_net", "green": "green_net"},
                              {"blue_net": 0x1001})
    assert found == [ServiceRedirect("tcp", 30080, "10.96.0.5", 80),
                     ServiceRedirect("tcp", 30090, "10.96.0.7", 8080, mark=0x1001),
                     ServiceRedirect("udp", 30053, "10.96.0.5", 53),
                     ServiceRedirect("tcp", 80, "10.96.0.5", 80, "192.0.2.80"),
                     ServiceRedirect("udp", 53, "10.96.0.5", 53, "192.0.2.80")]


def test_default_router_egress_is_committed_and_its_replies_steered_back() -> None:
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1,
                                {"patch-breth0_ovn-worker-to-br-int": 2}, [], "breth0",
                                "ovn-worker", MASQ)
    assert ("table=0,priority=100,in_port=2,ip,nw_src=172.18.0.2 actions=ct(commit,"
            "zone=64000,exec(set_field:1->ct_mark)),output:1") in flows
    assert "table=0,priority=85,in_port=1,ip,nw_dst=172.18.0.2 " \
           "actions=ct(zone=64000,table=1)" in flows
    assert "table=1,priority=100,ct_state=+trk+est,ct_mark=1 actions=output:2" in flows
    assert "table=1,priority=0 actions=LOCAL" in flows
    # geneve to the node IP outranks the conntrack steering
    assert "table=0,priority=100,in_port=1,udp,nw_dst=172.18.0.2,tp_dst=6081 " \
           "actions=LOCAL" in flows


def test_node_ports_go_to_their_networks_router_and_its_replies_to_the_uplink() -> None:
    patches = {"patch-breth0_ovn-worker-to-br-int": 2,
               "patch-breth0_blue_blue.network_ovn-worker-to-br-int": 5}
    node_ports = {"blue_blue-network": [("tcp", 30080), ("udp", 30080)],
                  "default": [("tcp", 30090)],
                  "green_green-network": [("tcp", 30100)]}  # not patched in yet
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1, patches, [
        GatewayNetwork("blue_blue-network", "169.254.0.11"),
        GatewayNetwork("green_green-network", "169.254.0.13")],
        "breth0", "ovn-worker", MASQ, node_ports)
    assert "table=0,priority=105,in_port=1,tcp,nw_dst=172.18.0.2,tp_dst=30080 " \
           "actions=output:5" in flows
    assert "table=0,priority=105,in_port=1,udp,nw_dst=172.18.0.2,tp_dst=30080 " \
           "actions=output:5" in flows
    assert "table=0,priority=105,in_port=1,tcp,nw_dst=172.18.0.2,tp_dst=30090 " \
           "actions=output:2" in flows
    assert "table=0,priority=100,in_port=5,ip,nw_src=172.18.0.2 actions=output:1" in flows
    assert not [f for f in flows if "30100" in f]


def test_node_ports_of_services_by_network() -> None:
    def service(ns: str, name: str, kind: str, ports: list[dict[str, object]]) -> dict:
        return {"metadata": {"namespace": ns, "name": name},
                "spec": {"type": kind, "clusterIP": "10.96.0.10", "ports": ports}}
    services = [
        service("blue", "web", "NodePort", [{"port": 80, "nodePort": 30080},
                                            {"port": 53, "protocol": "UDP",
                                             "nodePort": 30053}]),
        service("plain", "lb", "LoadBalancer", [{"port": 80, "nodePort": 30090}]),
        service("plain", "internal", "ClusterIP", [{"port": 80, "nodePort": 30091}]),
    ]
    assert service_node_ports(parsed_services(services), {"blue": "blue_blue-network"}) == {
        "blue_blue-network": [("tcp", 30080), ("udp", 30053)],
        "default": [("tcp", 30090)]}


DEFAULT_PATCH = "patch-breth0_ovn-worker-to-br-int"
BLUE_PATCH = "patch-breth0_blue_net_ovn-worker-to-br-int"


def test_host_reaches_every_default_service_and_udn_pods_only_the_allowed_ones() -> None:
    steering = DefaultServiceSteering(("10.96.0.0/16",), ("10.96.0.10", "10.96.0.1"))
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1,
                                {DEFAULT_PATCH: 2, BLUE_PATCH: 5},
                                [GatewayNetwork("blue_net", "169.254.0.11")], "breth0",
                                "ovn-worker", MASQ, default_services=steering)
    # the host's own service traffic (from .2): the whole CIDR to the default router
    assert "table=0,priority=112,in_port=LOCAL,ip,nw_src=169.254.0.2,nw_dst=10.96.0.0/16 " \
           "actions=output:2" in flows
    # what the host forwards from UDN routers (masquerade sources): the allowed ones only
    for ip in ("10.96.0.1", "10.96.0.10"):
        assert f"table=0,priority=110,in_port=LOCAL,ip,nw_src={MASQ},nw_dst={ip} " \
               "actions=output:2" in flows
    assert "table=0,priority=105,in_port=LOCAL,ip,nw_dst=10.96.0.0/16 actions=drop" in flows
    assert f"table=0,priority=110,in_port=2,ip,nw_dst={MASQ} " \
           "actions=mod_dl_dst:0a:58:ac:12:00:02,LOCAL" in flows
    # a ClusterIP the default router has no load balancer for never leaves by the uplink
    assert "table=0,priority=105,in_port=2,ip,nw_dst=10.96.0.0/16 actions=drop" in flows
    # every router's ARP for the next hop .4 is answered with a MAC that is not its own
    for port in (2, 5):
        [responder] = [f for f in flows if f.startswith(f"table=0,priority=110,in_port={port},arp")]
        assert "arp_tpa=169.254.0.4" in responder and "arp_op=1" in responder
        assert "mod_dl_src:0a:58:a9:fe:00:04" in responder and responder.endswith("IN_PORT")
    # without steering the service CIDR is not touched
    plain = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1, {DEFAULT_PATCH: 2}, [],
                                "breth0", "ovn-worker", MASQ)
    assert not [f for f in plain if "10.96." in f]


def test_the_default_routers_traffic_to_an_endpoint_on_the_host_is_hairpinned() -> None:
    steering = DefaultServiceSteering(("10.96.0.0/16",), ())
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1, {DEFAULT_PATCH: 2}, [],
                                "breth0", "ovn-worker", MASQ, default_services=steering)
    # the router's (node IP to .2) becomes .1 to the node IP (SNAT in conntrack zone 64002)
    assert "table=0,priority=115,in_port=2,ip,nw_src=172.18.0.2,nw_dst=169.254.0.2 " \
           "actions=mod_nw_dst:172.18.0.2,ct(commit,zone=64002,nat(src=169.254.0.1)," \
           "table=3)" in flows
    assert "table=3,priority=100 actions=move:NXM_OF_ETH_DST[]->NXM_OF_ETH_SRC[]," \
           "mod_dl_dst:0a:58:ac:12:00:02,LOCAL" in flows
    # the host's replies to .1: both undone, back to the router
    assert "table=0,priority=115,in_port=LOCAL,ip,nw_dst=169.254.0.1 " \
           "actions=ct(zone=64002,nat,table=5)" in flows
    for state in ("est", "rel"):
        assert f"table=5,priority=100,ip,ct_state=+trk+{state} actions=mod_nw_src:169.254.0.2," \
               "mod_dl_dst:0a:58:ac:12:00:02,output:2" in flows


def test_host_connections_to_a_udn_node_port_go_to_that_networks_router() -> None:
    steering = DefaultServiceSteering(("10.96.0.0/16",), ())
    blue = GatewayNetwork("blue_net", "169.254.0.11", "169.254.0.12", packet_mark(1))
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1,
                                {DEFAULT_PATCH: 2, BLUE_PATCH: 5}, [blue], "breth0",
                                "ovn-worker", MASQ, default_services=steering)
    assert "table=0,priority=112,in_port=LOCAL,ip,nw_src=169.254.0.12,nw_dst=10.96.0.0/16 " \
           "actions=output:5" in flows
    assert "table=0,priority=110,in_port=5,ip,nw_dst=169.254.0.12 " \
           "actions=mod_dl_dst:0a:58:ac:12:00:02,LOCAL" in flows
    # without service steering (no service CIDRs) nothing of it
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1,
                                {DEFAULT_PATCH: 2, BLUE_PATCH: 5}, [blue], "breth0",
                                "ovn-worker", MASQ)
    assert not [f for f in flows if "169.254.0.12" in f]


def test_allowed_default_services_without_the_default_router_are_still_not_leaked() -> None:
    steering = DefaultServiceSteering(("10.96.0.0/16",), ("10.96.0.10",))
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1, {BLUE_PATCH: 5},
                                [GatewayNetwork("blue_net", "169.254.0.11")], "breth0",
                                "ovn-worker", MASQ, default_services=steering)
    assert "table=0,priority=105,in_port=LOCAL,ip,nw_dst=10.96.0.0/16 actions=drop" in flows
    assert not [f for f in flows if "10.96.0.10" in f]


def service(namespace: str, name: str, *cluster_ips: str) -> dict[str, object]:
    return {"metadata": {"namespace": namespace, "name": name},
            "spec": {"clusterIP": cluster_ips[0] if cluster_ips else "None",
                     "clusterIPs": list(cluster_ips) or ["None"],
                     "ports": [{"port": 53, "protocol": "UDP"}]}}


def test_allowed_default_cluster_ips_only_names_existing_default_services() -> None:
    services = {"kube-system/kube-dns": service("kube-system", "kube-dns", "10.96.0.10",
                                                "fd00:10:96::a"),
                "blue/kube-dns": service("blue", "kube-dns", "10.96.0.99"),
                "default/headless": service("default", "headless")}
    found = allowed_default_cluster_ips(
        services.get, ["kube-system/kube-dns", "default/kubernetes", "blue/kube-dns",
                       "default/headless"], {"blue": "blue_net"})
    # both families; missing, UDN-namespace and headless left out
    assert found == ("10.96.0.10", "fd00:10:96::a")


def test_external_ips_go_to_their_network_router_and_its_replies_to_the_uplink() -> None:
    external = {"blue_net": [("tcp", "192.0.2.80", 80), ("tcp", "192.0.2.80", 80),
                             ("udp", "192.0.2.80", 53)],
                "default": [("tcp", "192.0.2.90", 443)],
                "green_net": [("tcp", "192.0.2.99", 80)]}  # not served on this node
    flows = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1,
                                {DEFAULT_PATCH: 2, BLUE_PATCH: 5},
                                [GatewayNetwork("blue_net", "169.254.0.11")], "breth0",
                                "ovn-worker", MASQ, external_ips=external)
    steering = [f for f in flows if "192.0.2." in f]
    assert sorted(steering) == sorted([
        "table=0,priority=105,in_port=1,tcp,nw_dst=192.0.2.80,tp_dst=80 actions=output:5",
        "table=0,priority=105,in_port=1,udp,nw_dst=192.0.2.80,tp_dst=53 actions=output:5",
        "table=0,priority=100,in_port=5,ip,nw_src=192.0.2.80 actions=output:1",
        "table=0,priority=105,in_port=1,tcp,nw_dst=192.0.2.90,tp_dst=443 actions=output:2",
        "table=0,priority=100,in_port=2,ip,nw_src=192.0.2.90 actions=output:1"])


def test_service_external_ips_by_network() -> None:
    services = [
        {"metadata": {"namespace": "blue", "name": "web"},
         "spec": {"clusterIP": "10.96.0.2", "externalIPs": ["192.0.2.80", "2001:db8::1"],
                  "ports": [{"port": 80, "protocol": "TCP"}]},
         "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.81"}]}}},
        {"metadata": {"namespace": "plain", "name": "web"},
         "spec": {"clusterIP": "10.96.0.3", "ports": [{"port": 80}]}}]
    assert service_external_ips(parsed_services(services), {"blue": "blue_net"}) == {
        "blue_net": [("tcp", "192.0.2.80", 80), ("tcp", "2001:db8::1", 80),
                     ("tcp", "192.0.2.81", 80)]}


def test_the_gateway_mapping_keeps_the_administrators_other_mappings() -> None:
    assert with_bridge_mapping("", "physnet", "breth0") == "physnet:breth0"
    assert with_bridge_mapping("tenant:br-tenant,physnet:old", "physnet", "breth0") == \
        "tenant:br-tenant,physnet:breth0"
    assert with_bridge_mapping("physnet:breth0,tenant:br-tenant", "physnet", "breth0") == \
        "physnet:breth0,tenant:br-tenant"  # unchanged: nothing written
    assert parse_bridge_mappings("a:b, junk ,:x,c:") == {"a": "b"}


# -- IPv6: the same structure, neighbour discovery for ARP ------------------------------------
MASQ6 = "fd69::/112"
NODE6 = "fc00:f853:ccd:e793::2"


def test_ipv6_flows_use_neighbour_discovery_and_the_ipv6_masquerade_subnet() -> None:
    patches = {DEFAULT_PATCH: 2, BLUE_PATCH: 5}
    blue = GatewayNetwork("blue_net", "fd69::b", "fd69::c", packet_mark(1))
    flows = build_gateway_flows(NODE6, "0a:58:ac:12:00:02", 1, patches, [blue], "breth0",
                                "ovn-worker", MASQ6, {"blue_net": [("tcp", 30080)],
                                                      "default": [("udp", 30090)]},
                                DefaultServiceSteering(("10.96.0.0/16", "fd00:10:96::/112"),
                                                       ("10.96.0.10", "fd00:10:96::a")))
    assert not [f for f in flows if "arp" in f or "nw_" in f or "10.96." in f], \
        "an IPv6 table has no IPv4 flow"
    for flow in (
            # masquerade neighbour discovery never crosses the uplink
            f"table=0,priority=95,in_port=1,icmp6,icmp_type=135,ipv6_src={MASQ6} actions=drop",
            f"table=0,priority=95,in_port=1,icmp6,icmp_type=136,nd_target={MASQ6} actions=drop",
            f"table=0,priority=95,in_port=LOCAL,icmp6,icmp_type=135,nd_target={MASQ6} "
            "actions=drop",
            # the uplink's neighbour discovery reaches the host and every router
            "table=0,priority=90,in_port=1,icmp6,icmp_type=135 actions=LOCAL,2,5",
            "table=0,priority=90,in_port=1,icmp6,icmp_type=136 actions=LOCAL,2,5",
            "table=0,priority=90,in_port=5,icmp6,icmp_type=135 actions=1,LOCAL",
            f"table=0,priority=100,in_port=1,udp6,ipv6_dst={NODE6},tp_dst=6081 actions=LOCAL",
            # the default router's egress, committed, and its replies steered back
            f"table=0,priority=100,in_port=2,ipv6,ipv6_src={NODE6} actions=ct(commit,"
            "zone=64000,exec(set_field:1->ct_mark)),output:1",
            f"table=0,priority=85,in_port=1,ipv6,ipv6_dst={NODE6} actions=ct(zone=64000,"
            "table=1)",
            # a UDN router's egress to the host, and back
            "table=0,priority=100,in_port=5,ipv6,ipv6_src=fd69::b "
            "actions=mod_dl_dst:0a:58:ac:12:00:02,LOCAL",
            "table=0,priority=100,in_port=LOCAL,ipv6,ipv6_dst=fd69::b actions=5",
            "table=0,priority=100,in_port=LOCAL,icmp6,icmp_type=135,nd_target=fd69::b "
            "actions=5",
            # NodePorts on the node's IPv6 address
            f"table=0,priority=105,in_port=1,tcp6,ipv6_dst={NODE6},tp_dst=30080 "
            "actions=output:5",
            f"table=0,priority=105,in_port=1,udp6,ipv6_dst={NODE6},tp_dst=30090 "
            "actions=output:2",
            # the host's service traffic from fd69::2, UDN pods' to the allowed ones only
            "table=0,priority=112,in_port=LOCAL,ipv6,ipv6_src=fd69::2,"
            "ipv6_dst=fd00:10:96::/112 actions=output:2",
            f"table=0,priority=110,in_port=LOCAL,ipv6,ipv6_src={MASQ6},ipv6_dst=fd00:10:96::a "
            "actions=output:2",
            "table=0,priority=105,in_port=LOCAL,ipv6,ipv6_dst=fd00:10:96::/112 actions=drop",
            "table=0,priority=112,in_port=LOCAL,ipv6,ipv6_src=fd69::c,"
            "ipv6_dst=fd00:10:96::/112 actions=output:5",
            # the hairpin to an endpoint on the host, from OVN's masquerade IP fd69::1
            f"table=0,priority=115,in_port=2,ipv6,ipv6_src={NODE6},ipv6_dst=fd69::2 "
            f"actions=set_field:{NODE6}->ipv6_dst,ct(commit,zone=64002,nat(src=fd69::1),"
            "table=3)",
            "table=5,priority=100,ipv6,ct_state=+trk+est actions=set_field:fd69::2->ipv6_src,"
            "mod_dl_dst:0a:58:ac:12:00:02,output:2"):
        assert flow in flows, flow
    # every router's solicitation for the next hop fd69::4 is answered with a MAC that is
    # not its own: the advertisement is made in two steps (OVS sets the target link-layer
    # address only on a flow that matches an advertisement)
    for port in (2, 5):
        [solicited] = [f for f in flows if f.startswith(
            f"table=0,priority=110,in_port={port},icmp6,icmp_type=135,nd_target=fd69::4 ")]
        assert "set_field:136->icmpv6_type" in solicited and "set_field:2->nd_options_type" \
            in solicited and solicited.endswith("resubmit(,6)")
        assert "mod_dl_src:0a:58:" in solicited and "set_field:fd69::4->ipv6_src" in solicited
    mac = [f for f in flows if "nd_tll" in f]
    assert len(mac) == 1 and mac[0].startswith(
        "table=6,priority=100,icmp6,icmp_type=136,nd_target=fd69::4 actions=set_field:")
    assert mac[0].endswith("->nd_tll,IN_PORT")


def test_a_dual_stack_bridge_has_both_families_flows_once() -> None:
    patches = {DEFAULT_PATCH: 2}
    v4 = build_gateway_flows("172.18.0.2", "0a:58:ac:12:00:02", 1, patches, [], "breth0",
                             "ovn-worker", MASQ)
    v6 = build_gateway_flows(NODE6, "0a:58:ac:12:00:02", 1, patches, [], "breth0",
                             "ovn-worker", MASQ6)
    merged = merge_flows(v4, v6)
    assert set(merged) == set(v4) | set(v6) and len(merged) == len(set(merged))
    assert merged.count("table=0,priority=0 actions=drop") == 1
    assert "table=0,priority=90,in_port=1,arp actions=LOCAL,2" in merged
    assert "table=0,priority=90,in_port=1,icmp6,icmp_type=136 actions=LOCAL,2" in merged


def test_ipv6_external_ips_are_steered_on_the_ipv6_table_only() -> None:
    external = {"default": [("tcp", "192.0.2.90", 443), ("tcp", "2001:db8::90", 443)]}
    v6 = build_gateway_flows(NODE6, "0a:58:ac:12:00:02", 1, {DEFAULT_PATCH: 2}, [],
                             "breth0", "ovn-worker", MASQ6, external_ips=external)
    assert [f for f in v6 if "2001:db8::90" in f] == [
        "table=0,priority=105,in_port=1,tcp6,ipv6_dst=2001:db8::90,tp_dst=443 "
        "actions=output:2",
        "table=0,priority=100,in_port=2,ipv6,ipv6_src=2001:db8::90 actions=output:1"]
    assert not [f for f in v6 if "192.0.2.90" in f]


def test_a_dual_stack_host_table_is_inet_with_each_familys_rules() -> None:
    redirects = [ServiceRedirect("tcp", 30080, "10.96.0.5", 80),
                 ServiceRedirect("tcp", 30080, "fd00:10:96::5", 80),
                 ServiceRedirect("tcp", 443, "fd00:10:96::5", 443, external_ip="2001:db8::80",
                                 mark=0x1001)]
    table = build_host_table([MASQ6, MASQ], "breth0", ["10.96.0.0/16", "fd00:10:96::/112"],
                             redirects, {0x1001: ["169.254.0.12", "fd69::c"]})
    assert (table.family, table.name) == ("inet", "ovnk-gateway")
    script = build_table_script(table)
    for rule in (
            f'ip saddr {MASQ} ip daddr != {{ {MASQ}, 10.96.0.0/16 }} oifname "breth0" '
            "masquerade",
            f'ip6 saddr {MASQ6} ip6 daddr != {{ {MASQ6}, fd00:10:96::/112 }} '
            'oifname "breth0" masquerade',
            'meta mark 0x1001 ip6 daddr { fd00:10:96::/112 } oifname "breth0" snat ip6 to '
            "fd69::c",
            'ip6 daddr { fd00:10:96::/112 } ip6 saddr != fd69::2 oifname "breth0" '
            "fib saddr type local snat ip6 to fd69::2",
            "ip daddr != 127.0.0.0/8 fib daddr type local tcp dport 30080 dnat ip to "
            "10.96.0.5:80",
            "ip6 daddr != ::1 fib daddr type local tcp dport 30080 dnat ip6 to "
            "[fd00:10:96::5]:80",
            "ip6 daddr 2001:db8::80 tcp dport 443 meta mark set 0x1001 dnat ip6 to "
            "[fd00:10:96::5]:443"):
        assert rule in script, rule
    # an IPv4-only node's table has no IPv6 rule, not even for an IPv6 ClusterIP
    assert "ip6" not in build_table_script(build_host_table(
        [MASQ], "breth0", ["10.96.0.0/16", "fd00:10:96::/112"], redirects))


def test_service_redirects_of_the_ipv6_cluster_ip() -> None:
    services = parsed_services([
        {"metadata": {"namespace": "plain", "name": "web"},
         "spec": {"type": "NodePort", "clusterIPs": ["10.96.0.5", "fd00::5"],
                  "externalIPs": ["192.0.2.80", "2001:db8::1"],
                  "ports": [{"port": 80, "nodePort": 30080}]}}])
    assert service_redirects(services, {}, {}, version=6) == [
        ServiceRedirect("tcp", 30080, "fd00::5", 80),
        ServiceRedirect("tcp", 80, "fd00::5", 80, "2001:db8::1")]


def test_a_family_the_kernel_lacks_is_left_out_and_said_on_the_node(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ovnk_core.errors import CapabilityError
    from ovnk_core.kube.factory import InformerFactory
    from ovnk_core.node import gateway as gateway_module

    set_up: list[str] = []

    def ensure(_netns: object, masquerade: str, *_args: object) -> None:
        if ":" in masquerade:
            raise CapabilityError("IPv6", "/proc/sys/net/ipv6/conf/all/forwarding is missing: "
                                          "the kernel has no IPv6")
        set_up.append(masquerade)

    class Recorder:
        events: list[tuple[str, str, str]] = []

        def event(self, _obj: object, kind: str, reason: str, message: str) -> None:
            self.events.append((kind, reason, message))

    monkeypatch.setattr(gateway_module, "ensure_host_gateway", ensure)
    monkeypatch.setattr(gateway_module.nft, "delete_table", lambda *_a, **_k: None)
    recorder = Recorder()
    node_gateway = gateway_module.NodeGateway(
        InformerFactory(None), "ovn-worker", lambda *_a: "", Path("/run"), "netns",  # type: ignore[arg-type]
        [MASQ, MASQ6], "physnet", recorder=recorder)  # type: ignore[arg-type]
    ips = {4: "172.18.0.2", 6: NODE6}
    for _ in range(2):  # said once
        assert node_gateway.serve_host_families({}, ips, "breth0", "0a:58:ac:12:00:02") == {
            4: "172.18.0.2"}
    assert set_up == [MASQ]
    assert recorder.events == [(
        "Warning", "IPFamilyUnsupported",
        f"the node's IPv6 address {NODE6} is not served by its gateway: kernel capability "
        "'IPv6' is not available: /proc/sys/net/ipv6/conf/all/forwarding is missing: the "
        "kernel has no IPv6")]
