"""The node side of a dual-stack cluster in real namespaces: a management port with both
families' addresses, routes and rules; the host's IPv6 gateway routes and its ``inet`` table;
and the gateway bridge's IPv6 flows on a real OVS (userspace datapath) carrying real packets:
the routers' solicitation of the masquerade next hop answered, masquerade neighbour discovery
kept off the uplink, a user-defined network's egress leaving as the node's IPv6 address."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.runtime import disable_tx_checksum_offload

from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.node import netlink, nft
from ovnk_core.node.gateway import (
    GatewayNetwork,
    bridge_ports,
    build_gateway_flows,
    ensure_gateway_flows,
    patch_port_name,
)
from ovnk_core.node.gateway_host import (
    GATEWAY_TABLE,
    ServiceRedirect,
    build_host_table,
    ensure_host_gateway,
)
from ovnk_core.node.management_port import (
    RULE_PRIORITY,
    build_management_port,
    delete_management_port,
    ensure_management_port,
)
from ovnk_core.node.pod_network import Vsctl
from ovnk_core.testing.netns_fixtures import make_netns, remove_netns
from ovnk_core.testing.waiting import wait_until

from .conftest import Ovs

pytestmark = pytest.mark.netns
MASQ, MASQ6 = "169.254.0.0/17", "fd69::/112"
NODE6, EXTERNAL6 = "fd80:172:18::2", "fd80:172:18::fffe"
BRIDGE_MAC = "0a:58:ac:12:00:02"


def ip_json(netns: str, *args: str) -> list[dict[str, object]]:
    result: list[dict[str, object]] = json.loads(subprocess.run(
        ["ip", "-n", netns, "-j", *args], capture_output=True, text=True, check=True).stdout
        or "[]")
    return result


def table_rules(netns: str, table: int) -> set[tuple[Any, ...]]:
    """(version, from, iif, oif), and to where a rule names a destination."""
    return {(rule["version"], rule.get("src"), rule.get("iifname"), rule.get("oifname"))
            + ((rule["dst"],) if rule.get("dst") else ())
            for rule in netlink.list_rules(netns=netns)
            if rule.get("table") == table and rule.get("priority") == RULE_PRIORITY}


def test_a_dual_stack_management_port_has_both_families_routes_and_rules(
        ovs: Vsctl, netns: str) -> None:
    port = build_management_port("ovn-worker", "blue_net", 3,
                                 ["10.80.1.0/24", "fd00:80:1::/64"],
                                 ["10.80.0.0/16", "fd00:80::/48"], [MASQ, MASQ6])
    assert port is not None
    for _ in range(2):  # idempotent
        ensure_management_port(port, ovs, netns, use_vrf=False)
    assert netlink.list_addresses("ovn-k8s-mp3", netns) == ["10.80.1.2/24", "fd00:80:1::2/64"]
    # usable at once: no duplicate address detection holds the IPv6 address back
    [link] = ip_json(netns, "-6", "addr", "show", "dev", "ovn-k8s-mp3", "scope", "global")
    assert [(a["local"], a.get("tentative")) for a in link["addr_info"]  # type: ignore[index]
            if "local" in a] == [("fd00:80:1::2", None)]
    routes = {(r["dst"], r["gateway"]) for r in netlink.list_routes(table=1003, netns=netns)}
    # the network's management-port masquerade IPs (network ID 3: .16, ::10) are answered
    # through the port: the zone SNATs its pods' traffic to the port to them
    assert routes == {("10.80.0.0/16", "10.80.1.1"), ("10.80.1.0/24", None),
                      ("fd00:80::/48", "fd00:80:1::1"), ("fd00:80:1::/64", None),
                      ("169.254.0.16/32", None), ("fd69::10/128", None)}
    # in from the port, out through it, from its address and to its masquerade IP use the
    # network's table, in both families
    assert table_rules(netns, 1003) == {
        (4, None, "ovn-k8s-mp3", None), (4, None, None, "ovn-k8s-mp3"),
        (4, "10.80.1.2/32", None, None), (6, None, "ovn-k8s-mp3", None),
        (6, None, None, "ovn-k8s-mp3"), (6, "fd00:80:1::2/128", None, None),
        (4, None, None, None, "169.254.0.16/32"), (6, None, None, None, "fd69::10/128")}
    delete_management_port(port.ifname, port.table, ovs, netns)
    assert table_rules(netns, 1003) == set()


def test_the_hosts_ipv6_gateway_routes_and_inet_table(netns: str) -> None:
    subprocess.run(["ip", "-n", netns, "link", "add", "breth0", "type", "veth", "peer", "name",
                    "uplink"], check=True)
    netlink.set_link("breth0", netns=netns, up=True)
    for _ in range(2):  # idempotent
        for masquerade in (MASQ, MASQ6):
            ensure_host_gateway(netns, masquerade, "breth0",
                                ["10.96.0.0/16", "fd00:10:96::/112"], BRIDGE_MAC, mtu=1400)
    forwarding = subprocess.run(["ip", "netns", "exec", netns, "cat",
                                 "/proc/sys/net/ipv6/conf/all/forwarding"],
                                capture_output=True, text=True, check=True).stdout.strip()
    assert forwarding == "1"
    [route] = ip_json(netns, "-6", "-d", "route", "show", "fd00:10:96::/112")
    assert (route["gateway"], route["dev"], route["prefsrc"]) == ("fd69::4", "breth0",
                                                                 "fd69::2")
    assert "onlink" in route["flags"] and route["metrics"] == [{"mtu": 1400}]  # type: ignore[operator]
    assert any(r.get("dst") == MASQ6 and r.get("dev") == "breth0"
               for r in ip_json(netns, "-6", "route"))
    assert netlink.list_addresses("breth0", netns) == ["169.254.0.2/32", "fd69::2/128"]
    neighbours = {n["dst"]: n for n in ip_json(netns, "-6", "neigh")}
    for pinned in ("fd69::4", "fd69::1"):  # the next hop, OVN's masquerade IP
        assert neighbours[pinned]["lladdr"] == BRIDGE_MAC
        assert "PERMANENT" in neighbours[pinned]["state"]  # type: ignore[operator]
    # the kernel takes the table of both families as written
    table = build_host_table([MASQ, MASQ6], "breth0", ["10.96.0.0/16", "fd00:10:96::/112"], [
        ServiceRedirect("tcp", 30080, "fd00:10:96::5", 80),
        ServiceRedirect("udp", 30081, "10.96.0.5", 81),
        ServiceRedirect("tcp", 443, "fd00:10:96::5", 443, "2001:db8::80", 0x1001)],
        {0x1001: ["169.254.0.12", "fd69::c"]})
    nft.apply_table(table, netns)
    listing = nft.list_table_text("inet", GATEWAY_TABLE, netns)
    assert listing is not None
    for rule in ("ip6 saddr fd69::/112 ip6 daddr != { fd00:10:96::/112, fd69::/112 } "
                 'oifname "breth0" masquerade',
                 "dnat ip6 to [fd00:10:96::5]:80", "snat ip6 to fd69::c",
                 "snat ip6 to fd69::2", "dnat ip to 10.96.0.5:81"):
        assert rule in listing, rule


ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 9000))
print("listening", flush=True)
while True:
    data, peer = s.recvfrom(100)
    s.sendto(peer[0].encode(), peer)
"""
ASK = """
import socket, sys
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.settimeout(2)
s.sendto(b"who", (sys.argv[1], 9000))
print(s.recvfrom(100)[0].decode())
"""


@pytest.fixture
def outside() -> Iterator[tuple[str, str]]:
    """Two more namespaces: (the external host, a gateway router stand-in)."""
    external, router = make_netns(), make_netns()
    yield external, router
    remove_netns(external)
    remove_netns(router)


def veth(netns: str, name: str, peer_netns: str, peer: str, peer_mac: str | None = None
         ) -> None:
    subprocess.run(["ip", "-n", netns, "link", "add", name, "type", "veth", "peer", "name",
                    peer, "netns", peer_netns], check=True)
    if peer_mac:
        subprocess.run(["ip", "-n", peer_netns, "link", "set", peer, "address", peer_mac],
                       check=True)
    for namespace, link in ((netns, name), (peer_netns, peer)):
        netlink.set_link(link, netns=namespace, up=True)


def run(netns: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", "netns", "exec", netns, *command], capture_output=True,
                          text=True, timeout=30)


def test_the_ipv6_bridge_flows_carry_a_udn_routers_egress_and_keep_its_nd_local(
        ovs_daemons: Ovs, netns: str, outside: tuple[str, str]) -> None:
    external, router = outside
    node, vsctl = netns, ovs_daemons.vsctl
    ovs_daemons.add_bridge("breth0")
    vsctl("set", "bridge", "breth0", f'other-config:hwaddr="{BRIDGE_MAC}"')
    veth(node, "eth0", external, "ext")
    # the router shares the node's MAC, as the gateway routers' external ports do
    veth(node, "r0", router, "gr", peer_mac=BRIDGE_MAC)
    for port in ("eth0", "r0"):
        vsctl("--may-exist", "add-port", "breth0", port)
    wait_until(lambda: netlink.link_index("breth0", netns=node) is not None,
               what="the breth0 device")
    netlink.ensure_address("breth0", f"{NODE6}/64", netns=node)
    netlink.set_link("breth0", netns=node, up=True)
    netlink.ensure_address("ext", f"{EXTERNAL6}/64", netns=external)
    # the router: its masquerade IP, the masquerade subnet via the next hop fd69::4
    netlink.ensure_address("gr", "fd69::b/128", netns=router)
    netlink.ensure_route("fd69::4/128", oif="gr", netns=router)
    netlink.ensure_route("::/0", gateway="fd69::4", oif="gr", netns=router)
    for namespace in (external, router):
        disable_tx_checksum_offload(namespace)  # the userspace datapath forwards as is
    ensure_host_gateway(node, MASQ6, "breth0")
    nft.apply_table(build_host_table([MASQ6], "breth0"), node)
    netlink.ensure_neighbor("fd69::b", BRIDGE_MAC, "breth0", netns=node)  # as the gateway pins it
    ports = bridge_ports(vsctl, "breth0")
    flows = build_gateway_flows(
        NODE6, BRIDGE_MAC, ports["eth0"],
        {patch_port_name("breth0", "blue_net", "ovn-worker"): ports["r0"]},
        [GatewayNetwork("blue_net", "fd69::b")], "breth0", "ovn-worker", MASQ6)
    ensure_gateway_flows(f"unix:{ovs_daemons.rundir}/breth0.mgmt", flows)

    echo = subprocess.Popen(["ip", "netns", "exec", external, "python3", "-c", ECHO, EXTERNAL6],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert echo.stdout is not None and echo.stdout.readline() == "listening\n"
        # the router's egress reaches the external host, which sees the node's address
        seen = wait_until(lambda: run(router, "python3", "-c", ASK, EXTERNAL6).stdout.strip(),
                          timeout=20, what="the external host answering the router")
        assert seen == NODE6
    finally:
        echo.kill()
        echo.wait()
    # the bridge answered the router's solicitation of the next hop with a MAC of its own
    neighbours = {n["dst"]: n for n in ip_json(router, "-6", "neigh")}
    assert neighbours["fd69::4"]["lladdr"] == mac_from_ip("fd69::4")
    # masquerade neighbour discovery never crosses the uplink: the external host, though
    # on the same segment as the router, cannot resolve its masquerade address
    netlink.ensure_route(MASQ6, oif="ext", netns=external)
    assert run(external, "ping", "-c", "2", "-i", "0.2", "-W", "1", "fd69::b").returncode != 0
    assert "lladdr" not in {n["dst"]: n for n in ip_json(external, "-6", "neigh")}.get(
        "fd69::b", {})
