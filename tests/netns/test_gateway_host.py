"""The host's part of the shared gateway, in a real network namespace."""

from __future__ import annotations

import json
import subprocess

import pytest

from ovnk_core.node import netlink, nft
from ovnk_core.node.gateway import GATEWAY_TABLE, ensure_host_gateway

pytestmark = pytest.mark.netns
MASQ = "169.254.0.0/17"


def test_host_gateway_forwards_masquerades_and_pins_router_neighbours(netns: str) -> None:
    subprocess.run(["ip", "-n", netns, "link", "add", "breth0", "type", "veth", "peer", "name",
                    "uplink"], check=True)
    netlink.set_link("breth0", netns=netns, up=True)
    ensure_host_gateway(netns, MASQ, "breth0")
    ensure_host_gateway(netns, MASQ, "breth0")  # idempotent
    forward = subprocess.run(["ip", "netns", "exec", netns, "cat",
                              "/proc/sys/net/ipv4/ip_forward"], capture_output=True, text=True,
                             check=True).stdout.strip()
    assert forward == "1"
    routes = json.loads(subprocess.run(["ip", "-n", netns, "-j", "route"], capture_output=True,
                                       text=True, check=True).stdout)
    assert any(r.get("dst") == "169.254.0.0/17" and r.get("dev") == "breth0" for r in routes)
    rules = nft.list_table("ip", GATEWAY_TABLE, netns=netns)
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
    [entry] = [n for n in neighbours if n["dst"] == "169.254.0.4"]
    assert entry["lladdr"] == "0a:58:ac:12:00:02" and "PERMANENT" in entry["state"]
    redirects = subprocess.run(["ip", "netns", "exec", netns, "cat",
                                "/proc/sys/net/ipv4/conf/breth0/send_redirects"],
                               capture_output=True, text=True, check=True).stdout.strip()
    assert redirects == "0"
    rules = json.dumps(nft.list_table("ip", GATEWAY_TABLE, netns=netns))
    assert "10.96.0.0" in rules  # kept out of the masquerade
