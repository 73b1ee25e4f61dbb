"""netlink helpers inside throwaway namespaces, checked with ip(8) and pyroute2 dumps."""

from __future__ import annotations

import json
import subprocess

import pytest

from ovnk_core.errors import CapabilityError
from ovnk_core.node import netlink
from ovnk_core.testing.netns_fixtures import NetnsPair


def ip_json(netns: str, *args: str) -> list[dict[str, object]]:
    out = subprocess.run(["ip", "-n", netns, "-j", *args], check=True, capture_output=True,
                         text=True).stdout
    result: list[dict[str, object]] = json.loads(out or "[]")
    return result


def test_veth_between_namespaces_carries_traffic(netns_pair: NetnsPair) -> None:
    left, right = netns_pair.left, netns_pair.right
    netlink.ensure_veth("v-a", "v-b", netns=left, peer_netns=right)
    netlink.ensure_veth("v-a", "v-b", netns=left, peer_netns=right)  # idempotent
    assert netlink.ensure_address("v-a", "198.51.100.1/24", left)
    assert not netlink.ensure_address("v-a", "198.51.100.1/24", left)
    netlink.ensure_address("v-b", "198.51.100.2/24", right)
    netlink.set_link("v-a", left, up=True, mtu=1400, mac="0a:58:c6:33:64:01")
    netlink.set_link("v-b", right, up=True)
    info = netlink.link_info("v-a", left)
    assert info is not None and (info["mtu"], info["mac"], info["kind"]) == (
        1400, "0a:58:c6:33:64:01", "veth")
    assert netlink.list_addresses("v-a", left) == ["198.51.100.1/24"]
    ping = subprocess.run(["ip", "netns", "exec", left, "ping", "-c", "1", "-W", "2",
                           "198.51.100.2"], capture_output=True, text=True)
    assert ping.returncode == 0, ping.stdout + ping.stderr
    assert netlink.delete_address("v-a", "198.51.100.1/24", left)
    assert not netlink.delete_address("v-a", "198.51.100.1/24", left)
    assert netlink.delete_link("v-a", left)
    assert not netlink.delete_link("v-a", left)
    assert netlink.link_index("v-b", right) is None  # the peer went with it


def test_routes_in_a_table_and_rules_are_idempotent(netns_pair: NetnsPair) -> None:
    ns = netns_pair.left
    for _ in range(2):
        netlink.ensure_route("10.200.0.0/16", gateway="192.0.2.2", table=100, netns=ns)
        netlink.ensure_route("0.0.0.0/0", gateway="192.0.2.2", table=100, netns=ns)
        netlink.ensure_rule(1000, 100, src="10.10.0.0/24", netns=ns)
        netlink.ensure_rule(1001, 100, iifname=netns_pair.left_if, netns=ns)
        netlink.ensure_rule(1002, 100, fwmark=0x1001, netns=ns)
    routes = ip_json(ns, "route", "show", "table", "100")
    assert sorted((r["dst"], r.get("gateway")) for r in routes) == [
        ("10.200.0.0/16", "192.0.2.2"), ("default", "192.0.2.2")]
    assert sorted(r["dst"] for r in netlink.list_routes(100, ns)) == ["0.0.0.0/0",
                                                                      "10.200.0.0/16"]
    rules = [r for r in ip_json(ns, "rule") if r.get("table") == "100"]
    assert sorted(r["priority"] for r in rules) == [1000, 1001, 1002]
    netlink.ensure_route("10.200.0.0/16", oif=netns_pair.left_if, table=100, metric=5,
                         netns=ns)  # replace changes it in place
    changed = [r for r in ip_json(ns, "route", "show", "table", "100")
               if r["dst"] == "10.200.0.0/16"]
    assert len(changed) == 1 and changed[0]["dev"] == netns_pair.left_if
    assert netlink.delete_route("10.200.0.0/16", 100, ns)
    assert not netlink.delete_route("10.200.0.0/16", 100, ns)
    assert netlink.delete_rule(1000, 100, src="10.10.0.0/24", netns=ns)
    assert not netlink.delete_rule(1000, 100, src="10.10.0.0/24", netns=ns)


def test_route_errors_name_the_route(netns: str) -> None:
    with pytest.raises(netlink.NetlinkOperationError,
                       match=r"route 10.1.0.0/16 via 203.0.113.1 table 100 in netns .*"):
        netlink.ensure_route("10.1.0.0/16", gateway="203.0.113.1", table=100, netns=netns)


def test_bridge_and_master(netns: str) -> None:
    netlink.ensure_bridge("br-test", netns)
    netlink.ensure_veth("p1", "p1-peer", netns=netns)
    netlink.set_link("p1", netns, master="br-test", up=True)
    info = netlink.link_info("p1", netns)
    bridge = netlink.link_info("br-test", netns)
    assert info is not None and bridge is not None and info["master"] == bridge["index"]


def test_vrf_is_created_or_reported_as_missing_capability(netns: str) -> None:
    if netlink.vrf_supported(netns):
        netlink.ensure_vrf("vrf-blue", 10, netns)
        info = netlink.link_info("vrf-blue", netns)
        assert info is not None and info["kind"] == "vrf"
    else:
        with pytest.raises(CapabilityError, match="kernel does not support VRF"):
            netlink.ensure_vrf("vrf-blue", 10, netns)
        assert netlink.link_index("vrf-blue", netns) is None
