"""The host's part of the shared gateway, in a real network namespace."""

from __future__ import annotations

import json
import subprocess

import pytest

from ovnk_core.node import netlink, nft
from ovnk_core.node.gateway_host import (
    GATEWAY_TABLE,
    ServiceRedirect,
    build_host_table,
    ensure_host_gateway,
)
from ovnk_core.testing.netns_fixtures import NetnsPair
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.netns
MASQ = "169.254.0.0/17"


def test_host_gateway_forwards_masquerades_and_pins_router_neighbours(netns: str) -> None:
    subprocess.run(["ip", "-n", netns, "link", "add", "breth0", "type", "veth", "peer", "name",
                    "uplink"], check=True)
    netlink.set_link("breth0", netns=netns, up=True)
    ensure_host_gateway(netns, MASQ, "breth0")
    ensure_host_gateway(netns, MASQ, "breth0")  # idempotent
    nft.apply_table(build_host_table([MASQ], "breth0"), netns)
    forward = subprocess.run(["ip", "netns", "exec", netns, "cat",
                              "/proc/sys/net/ipv4/ip_forward"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert forward == "1"
    routes = json.loads(subprocess.run(["ip", "-n", netns, "-j", "route"], capture_output=True,
                                       text=True, check=True).stdout)
    assert any(r.get("dst") == "169.254.0.0/17" and r.get("dev") == "breth0" for r in routes)
    rules = nft.list_table("inet", GATEWAY_TABLE, netns=netns)
    assert any("masquerade" in json.dumps(rule) for rule in rules)
    netlink.ensure_neighbor("169.254.0.11", "0a:58:ac:12:00:02", "breth0", netns=netns)
    netlink.ensure_neighbor("169.254.0.11", "0a:58:ac:12:00:02", "breth0", netns=netns)
    neighbours = json.loads(subprocess.run(["ip", "-n", netns, "-j", "neigh"],
                                           capture_output=True, text=True, check=True).stdout)
    [entry] = [n for n in neighbours if n["dst"] == "169.254.0.11"]
    assert entry["lladdr"] == "0a:58:ac:12:00:02" and "PERMANENT" in entry["state"]


def test_host_routes_the_service_cidr_via_the_masquerade_next_hop(netns: str) -> None:
    subprocess.run(["ip", "-n", netns, "link", "add", "breth0", "type", "veth", "peer", "name",
                    "uplink"], check=True)
    netlink.set_link("breth0", netns=netns, up=True)
    for _ in range(2):  # idempotent
        ensure_host_gateway(netns, MASQ, "breth0", ["10.96.0.0/16"], "0a:58:ac:12:00:02",
                            mtu=1400)
    nft.apply_table(build_host_table([MASQ], "breth0", ["10.96.0.0/16"]), netns)
    routes = json.loads(subprocess.run(["ip", "-n", netns, "-j", "-d", "route", "show",
                                        "10.96.0.0/16"], capture_output=True, text=True,
                                       check=True).stdout)
    [route] = routes
    assert (route["gateway"], route["dev"], route["prefsrc"]) == ("169.254.0.4", "breth0",
                                                                 "169.254.0.2")
    assert "onlink" in route["flags"] and route["metrics"] == [{"mtu": 1400}]
    assert netlink.list_addresses("breth0", netns) == ["169.254.0.2/32"]
    neighbours = json.loads(subprocess.run(["ip", "-n", netns, "-j", "neigh"],
                                           capture_output=True, text=True, check=True).stdout)
    for pinned in ("169.254.0.4", "169.254.0.1"):  # the next hop, OVN's masquerade IP
        [entry] = [n for n in neighbours if n["dst"] == pinned]
        assert entry["lladdr"] == "0a:58:ac:12:00:02" and "PERMANENT" in entry["state"]
    redirects = subprocess.run(["ip", "netns", "exec", netns, "cat",
                                "/proc/sys/net/ipv4/conf/breth0/send_redirects"],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert redirects == "0"
    rules = json.dumps(nft.list_table("inet", GATEWAY_TABLE, netns=netns))
    assert "10.96.0.0" in rules  # kept out of the masquerade


# A peer in the other namespace stands for the gateway router: it holds the ClusterIP and
# answers every connection with the address it came from.
PEER = """
import socket, sys, threading
def tcp():
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("10.96.0.5", int(sys.argv[1]))); s.listen()
    while True:
        c, addr = s.accept(); c.sendall(addr[0].encode()); c.close()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("10.96.0.5", int(sys.argv[2])))
    while True:
        data, addr = s.recvfrom(100); s.sendto(addr[0].encode(), addr)
threading.Thread(target=udp, daemon=True).start()
tcp()
"""
CLIENT = """
import socket, sys
kind, ip, port, bind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_STREAM if kind == "tcp" else socket.SOCK_DGRAM)
s.settimeout(2)
if bind:
    s.bind((bind, 0))
if kind == "tcp":
    s.connect((ip, port)); print(s.recv(100).decode())
else:
    s.sendto(b"x", (ip, port)); print(s.recvfrom(100)[0].decode())
"""


def _link_mac(netns: str, ifname: str) -> str:
    [link] = json.loads(subprocess.run(["ip", "-n", netns, "-j", "link", "show", ifname],
                                       capture_output=True, text=True, check=True).stdout)
    return str(link["address"])


def _seen_by_peer(netns: str, kind: str, ip: str, port: int, bind: str = "") -> str:
    result = subprocess.run(["ip", "netns", "exec", netns, "python3", "-c", CLIENT, kind, ip,
                             str(port), bind], capture_output=True, text=True)
    return result.stdout.strip() or f"failed: {result.stderr.strip()[-200:]}"


def test_host_connections_to_node_ports_and_cluster_ips_leave_from_the_masquerade_ips(
        netns_pair: NetnsPair) -> None:
    host, router = netns_pair.left, netns_pair.right
    node_ip = netns_pair.left_addr.split("/")[0]
    ensure_host_gateway(host, MASQ, netns_pair.left_if, ["10.96.0.0/16"],
                        _link_mac(router, netns_pair.right_if))
    nft.apply_table(build_host_table([MASQ], netns_pair.left_if, ["10.96.0.0/16"], [
        ServiceRedirect("tcp", 30080, "10.96.0.5", 80),
        ServiceRedirect("udp", 30081, "10.96.0.5", 81),
        ServiceRedirect("tcp", 30090, "10.96.0.5", 80, mark=0x1001)],
        {0x1001: ["169.254.0.12"]}), host)
    # the "router": the ClusterIP, and its way back to the masquerade subnet
    for args in (["addr", "add", "10.96.0.5/32", "dev", netns_pair.right_if],
                 ["route", "add", MASQ, "dev", netns_pair.right_if],
                 ["neigh", "replace", "169.254.0.12", "lladdr",
                  _link_mac(host, netns_pair.left_if), "dev", netns_pair.right_if]):
        subprocess.run(["ip", "-n", router, *args], check=True)
    peer = subprocess.Popen(["ip", "netns", "exec", router, "python3", "-c", PEER, "80", "81"])
    try:
        wait_until(lambda: _seen_by_peer(host, "tcp", "10.96.0.5", 80) == "169.254.0.2",
                   timeout=10, what="the peer answering the host on the ClusterIP")
        # a socket bound to the node IP leaves from the host masquerade IP too
        assert _seen_by_peer(host, "tcp", "10.96.0.5", 80, bind=node_ip) == "169.254.0.2"
        # the host's own NodePorts are its services' ClusterIPs, TCP and UDP
        assert _seen_by_peer(host, "tcp", node_ip, 30080) == "169.254.0.2"
        assert _seen_by_peer(host, "udp", node_ip, 30081) == "169.254.0.2"
        # a user-defined network's NodePort leaves from the network's host-service IP
        assert _seen_by_peer(host, "tcp", node_ip, 30090) == "169.254.0.12"
        # loopback is never redirected (a packet from 127.0.0.1 cannot leave the host)
        assert _seen_by_peer(host, "tcp", "127.0.0.1", 30080).startswith("failed")
    finally:
        peer.kill()
        peer.wait()
