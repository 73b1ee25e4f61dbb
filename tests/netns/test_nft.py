"""nftables helpers inside throwaway namespaces, checked against the real ruleset."""

from __future__ import annotations

import json
import subprocess

import pytest

from ovnk_core.errors import CapabilityError
from ovnk_core.node import nft
from ovnk_core.node.netns import NetnsError
from ovnk_core.node.nft import NftChain, NftRule, NftSet, NftTable


def table(extra_elements: tuple[str, ...] = ()) -> NftTable:
    return NftTable(
        "inet", "ovnk-test",
        chains=(NftChain("out", "filter", "output", 0, "accept"), NftChain("helper")),
        sets=(NftSet("blocked", "ipv4_addr", ("interval",), ("10.0.0.0/24", *extra_elements)),
              NftSet("open_ports", "ipv4_addr . inet_proto . inet_service")),
        rules=(NftRule("out", "ip daddr @blocked counter drop", "udn-block"),
               NftRule("out", "ip daddr . meta l4proto . th dport @open_ports accept")))


def ruleset(netns: str) -> str:
    return subprocess.run(["ip", "netns", "exec", netns, "nft", "list", "ruleset"],
                          check=True, capture_output=True, text=True).stdout


def nft_json(netns: str) -> list[dict[str, object]]:
    out = subprocess.run(["ip", "netns", "exec", netns, "nft", "-j", "list", "ruleset"],
                         check=True, capture_output=True, text=True).stdout
    items: list[dict[str, object]] = json.loads(out)["nftables"]
    return items


def test_apply_is_atomic_replace_and_idempotent(netns: str) -> None:
    nft.apply_table(table(), netns)
    first = ruleset(netns)
    assert "table inet ovnk-test" in first
    assert 'ip daddr @blocked counter packets 0 bytes 0 drop comment "udn-block"' in first
    nft.apply_table(table(), netns)
    assert ruleset(netns) == first
    nft.apply_table(table(extra_elements=("10.9.0.0/16",)), netns)
    assert "10.9.0.0/16" in ruleset(netns)
    assert sum(1 for item in nft_json(netns) if "rule" in item) == 2


def test_rules_land_in_the_namespace_not_the_host(netns: str) -> None:
    nft.apply_table(table(), netns)
    assert ("inet", "ovnk-test") in nft.list_tables(netns)
    assert ("inet", "ovnk-test") not in nft.list_tables()


def test_foreign_tables_are_untouched(netns: str) -> None:
    subprocess.run(["ip", "netns", "exec", netns, "nft", "add table ip foreign; "
                    "add chain ip foreign c { type filter hook input priority 0; }; "
                    "add rule ip foreign c tcp dport 22 accept"], check=True)
    before = [i for i in nft_json(netns) if "foreign" in json.dumps(i)]
    nft.apply_table(table(), netns)
    nft.delete_table("inet", "ovnk-test", netns)
    nft.delete_table("inet", "ovnk-test", netns)  # absent: fine
    after = nft_json(netns)
    assert [i for i in after if "foreign" in json.dumps(i)] == before
    assert ("inet", "ovnk-test") not in nft.list_tables(netns)


def test_set_elements_are_edited_idempotently(netns: str) -> None:
    nft.apply_table(table(), netns)
    nft.add_elements("inet", "ovnk-test", "open_ports", ["10.96.0.10 . tcp . 80"], netns)
    nft.add_elements("inet", "ovnk-test", "open_ports", ["10.96.0.10 . tcp . 80",
                                                         "10.96.0.11 . udp . 53"], netns)
    assert sorted(nft.set_elements("inet", "ovnk-test", "open_ports", netns)) == [
        "10.96.0.10 . tcp . 80", "10.96.0.11 . udp . 53"]
    nft.delete_elements("inet", "ovnk-test", "open_ports",
                        ["10.96.0.11 . udp . 53", "10.1.1.1 . tcp . 1"], netns)
    nft.delete_elements("inet", "ovnk-test", "open_ports", ["10.96.0.11 . udp . 53"], netns)
    assert nft.set_elements("inet", "ovnk-test", "open_ports", netns) == [
        "10.96.0.10 . tcp . 80"]
    assert "10.96.0.10 . tcp . 80" in ruleset(netns)


def test_bad_rule_is_a_clear_error_and_keeps_the_previous_table(netns: str) -> None:
    nft.apply_table(table(), netns)
    before = ruleset(netns)
    broken = NftTable("inet", "ovnk-test", chains=(NftChain("out", "filter", "output", 0),),
                      rules=(NftRule("out", "ip daddr @no_such_set drop"),))
    with pytest.raises(nft.NftError, match="nft apply table inet ovnk-test failed: .*"):
        nft.apply_table(broken, netns)
    assert ruleset(netns) == before


def test_socket_cgroupv2_rules_or_a_capability_error(netns: str) -> None:
    supported = nft.probe_socket_cgroupv2(netns)
    root = nft.cgroup2_root()
    if supported:
        assert root is not None
        child = root / "ovnk-test-cg"
        child.mkdir(exist_ok=True)
        try:
            path = nft.cgroup2_rule_path(child)
            nft.apply_table(NftTable("inet", "ovnk-cg", chains=(
                NftChain("out", "filter", "output", 0),), rules=(
                NftRule("out", f'socket cgroupv2 level 1 "{path}" ip daddr 10.0.0.1 drop'),)),
                netns)
            assert "socket cgroupv2 level 1" in ruleset(netns)
        finally:
            nft.delete_table("inet", "ovnk-cg", netns)
            child.rmdir()
    else:
        with pytest.raises(CapabilityError, match="socket-cgroupv2"):
            nft.require_socket_cgroupv2(netns)
    # The probe leaves nothing behind.
    assert ("inet", "ovnk-probe-cgroupv2") not in nft.list_tables(netns)


def test_missing_namespace_is_a_clear_error() -> None:
    with pytest.raises(NetnsError, match="does not exist"):
        nft.apply_table(table(), "ovnkt-no-such-namespace")
