"""The core's checks of subnets no pod can use (issue 30, item 2), through the plugin host's
full netconf parse every component runs: address ranges that never work (loopback,
multicast, IPv4-mapped), ranges that do not work where pods are routed (link-local,
0.0.0.0/8), and cluster-wide pools that leave no address once the kept ones are out."""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest

from ovnk_core.allocators.ips import IpAllocator, free_addresses
from ovnk_core.errors import NetworkConfigError
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config

HOST = PluginHost.load(udn_config(enable_preconfigured_udn_addresses="true"))


def parse(topology: str, role: str, subnets: str, **extra: Any) -> None:
    HOST.parse_netconf(json.dumps({
        "cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": "ns_net",
        "netAttachDefName": "ns/net", "topology": topology, "role": role, "subnets": subnets,
        **extra}))


def refusal(topology: str, role: str, subnets: str, **extra: Any) -> str:
    with pytest.raises(NetworkConfigError) as info:
        parse(topology, role, subnets, **extra)
    assert info.value.reason == "UnusableSubnet", info.value
    return str(info.value)


@pytest.mark.parametrize(("topology", "role", "subnets", "phrase"), [
    ("layer3", "primary", "127.0.0.0/8", "the loopback range 127.0.0.0/8"),
    ("layer3", "secondary", "120.0.0.0/5/24", "the loopback range 127.0.0.0/8"),  # holds it
    ("layer2", "secondary", "127.1.0.0/24", "the loopback range 127.0.0.0/8"),
    ("layer2", "secondary", "10.7.0.0/24,::/64", "the loopback range ::1/128"),
    ("layer2", "secondary", "239.0.0.0/24", "the multicast range 224.0.0.0/4"),
    ("localnet", "secondary", "ff05::/64", "the multicast range ff00::/8"),
    ("layer2", "secondary", "::ffff:10.0.0.0/120", "the IPv4-mapped range ::ffff:0:0/96"),
    ("layer3", "secondary", "169.254.128.0/17/24", "the link-local range 169.254.0.0/16"),
    ("layer2", "primary", "fe80::/64", "the link-local range fe80::/10"),
    ("layer3", "primary", "0.0.0.0/8/24", 'the "this network" range 0.0.0.0/8'),
])
def test_subnets_in_ranges_pods_cannot_use_are_refused(topology: str, role: str,
                                                       subnets: str, phrase: str) -> None:
    message = refusal(topology, role, subnets)
    assert message.startswith("pod or join subnet overlaps an address range pods cannot use: ")
    assert phrase in message


def test_a_join_subnet_is_routed_whatever_the_network() -> None:
    assert "user defined join subnet 127.0.0.0/16 overlaps the loopback range" in refusal(
        "layer2", "primary", "10.7.0.0/24", joinSubnet="127.0.0.0/16")


@pytest.mark.parametrize(("topology", "subnets", "extra"), [
    ("layer2", "169.254.200.0/24", {}),  # one segment: link-local works like on any link
    ("localnet", "fe80:1::/64", {}),
    ("layer2", "0.1.0.0/24", {}),
    # a range entirely excluded from the pods' addresses cannot clash
    ("localnet", "126.0.0.0/7", {"excludeSubnets": "127.0.0.0/8"}),
])
def test_flat_secondary_networks_keep_what_works_on_one_link(topology: str, subnets: str,
                                                             extra: dict[str, str]) -> None:
    parse(topology, "secondary", subnets, **extra)


@pytest.mark.parametrize(("topology", "role", "subnets", "extra", "kept"), [
    ("layer2", "primary", "10.7.0.0/30", {},
     "all 4 of its addresses are kept (its network address, its broadcast address, gateway "
     "10.7.0.1, management port 10.7.0.2)"),
    ("layer2", "primary", "10.7.0.0/31", {},
     "all 2 of its addresses are kept (its network address, gateway 10.7.0.1)"),
    ("layer2", "secondary", "10.7.0.0/32", {}, "its only address is kept (its network address)"),
    ("layer2", "secondary", "fd00::/128", {}, "its only address is kept (its network address)"),
    ("localnet", "secondary", "10.7.0.0/28", {"excludeSubnets": "10.7.0.0/29,10.7.0.8/29"},
     "all 16 of its addresses are kept (its network address, its broadcast address, "
     "excludeSubnets 10.7.0.0/29, excludeSubnets 10.7.0.8/29)"),
    ("layer2", "primary", "10.7.0.0/29",
     {"infrastructureSubnets": "10.7.0.0/30", "reservedSubnets": "10.7.0.4/30"},
     "all 8 of its addresses are kept (its network address, its broadcast address, gateway "
     "10.7.0.1, management port 10.7.0.2, infrastructureSubnets 10.7.0.0/30, reservedSubnets "
     "10.7.0.4/30)"),
])
def test_a_pool_without_room_for_one_pod_is_refused(topology: str, role: str, subnets: str,
                                                    extra: dict[str, str], kept: str) -> None:
    assert refusal(topology, role, subnets, **extra) == (
        f"subnet {subnets} of network ns_net leaves no address for pods: {kept}")


@pytest.mark.parametrize(("role", "subnets"), [
    ("primary", "10.7.0.0/29"), ("secondary", "10.7.0.0/30"), ("secondary", "10.7.0.0/31"),
    ("secondary", "fd00::/127"), ("primary", "172.16.0.0/12,fd00::/64")])
def test_a_pool_with_room_is_accepted(role: str, subnets: str) -> None:
    parse("layer2", role, subnets)


@pytest.mark.parametrize(("subnet", "excluded"), [
    ("10.7.0.0/30", []), ("10.7.0.0/31", []), ("10.7.0.0/32", []), ("fd00::/126", []),
    ("10.7.0.0/28", ["10.7.0.1/32", "10.7.0.0/30", "10.7.0.12/31", "10.9.0.0/16"]),
    ("10.7.0.0/29", ["10.0.0.0/8"]), ("10.7.0.0/29", ["fd00::/64"]),
])
def test_free_addresses_counts_what_an_allocator_hands_out(subnet: str,
                                                           excluded: list[str]) -> None:
    net = ipaddress.ip_network(subnet)
    nets = [ipaddress.ip_network(e) for e in excluded]
    allocator = IpAllocator(net, nets)
    handed = 0
    while True:
        try:
            allocator.allocate(f"pod{handed}")
        except ValueError:
            break
        handed += 1
    assert free_addresses(net, nets) == handed
