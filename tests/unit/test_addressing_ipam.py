"""Addresses by formula, and the IP and host-subnet allocators (properties included)."""

from __future__ import annotations

import ipaddress
import random

import pytest

from ovnk_core.allocators.ips import IpAllocationError, IpAllocator
from ovnk_core.allocators.subnets import HostSubnetAllocator, SubnetConflict, SubnetsExhausted
from ovnk_core.config.values import parse_cluster_subnet
from ovnk_core.networks.addressing import gateway_ip, mac_from_ip, management_ip, masquerade_ips

net = ipaddress.ip_network


def test_masquerade_ips_by_network_id() -> None:
    assert masquerade_ips(net("169.254.0.0/17"), 1) == (ipaddress.ip_address("169.254.0.11"),
                                                        ipaddress.ip_address("169.254.0.12"))
    assert [str(ip) for ip in masquerade_ips(net("169.254.0.0/17"), 2)] == ["169.254.0.13",
                                                                           "169.254.0.14"]
    assert [str(ip) for ip in masquerade_ips(net("fd69::/112"), 1)] == ["fd69::b", "fd69::c"]
    with pytest.raises(ValueError, match="ID >= 1"):
        masquerade_ips(net("169.254.0.0/17"), 0)
    assert str(masquerade_ips(net("169.254.169.0/28"), 2)[1]) == "169.254.169.14"
    with pytest.raises(ValueError, match="too small for network ID 3"):
        masquerade_ips(net("169.254.169.0/28"), 3)


def test_gateway_management_and_mac() -> None:
    assert str(gateway_ip(net("10.244.1.0/24"))) == "10.244.1.1"
    assert str(management_ip(net("10.244.1.0/24"))) == "10.244.1.2"
    assert mac_from_ip("10.244.0.6") == "0a:58:0a:f4:00:06"
    assert mac_from_ip("fd00::5").startswith("0a:58:") and len(mac_from_ip("fd00::5")) == 17


def test_ip_allocator_skips_reserved_and_refuses_duplicates() -> None:
    subnet = net("10.0.0.0/29")
    ips = IpAllocator(subnet, [net("10.0.0.1/32"), net("10.0.0.2/32")])
    got = [str(ips.allocate(f"p{i}")) for i in range(4)]
    assert got == ["10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6"]  # no .0 .1 .2 .7
    with pytest.raises(IpAllocationError, match="is full"):
        ips.allocate("p9")
    with pytest.raises(IpAllocationError, match="already allocated to p0"):
        ips.reserve("other", "10.0.0.3")
    with pytest.raises(IpAllocationError, match="not allocatable"):
        ips.reserve("other", "10.0.0.1")


def test_no_ip_is_ever_handed_out_twice_across_restarts() -> None:
    rng = random.Random(7)
    subnet = net("10.9.0.0/26")
    excluded = [net("10.9.0.1/32"), net("10.9.0.2/32")]
    ips = IpAllocator(subnet, excluded)
    for step in range(4000):
        owner = f"pod{rng.randrange(90)}"
        choice = rng.random()
        if choice < 0.55:
            try:
                ips.allocate(owner)
            except IpAllocationError:
                pass
        elif choice < 0.9:
            ips.release(owner)
        else:  # restart: rebuild from what the annotations say, in any order
            state = {o: ips.get(o) for o in (f"pod{i}" for i in range(90)) if ips.get(o)}
            ips = IpAllocator(subnet, excluded)
            for name, address in rng.sample(sorted(state.items()), len(state)):
                ips.reserve(name, address)  # type: ignore[arg-type]
        held = [ips.get(f"pod{i}") for i in range(90)]
        held = [h for h in held if h is not None]
        assert len(held) == len(set(held)), f"duplicate at step {step}"
        assert all(h not in (subnet.network_address, subnet.broadcast_address) for h in held)


def test_host_subnets_dual_stack_and_exhaustion() -> None:
    subnets = [parse_cluster_subnet("10.128.0.0/22/24"), parse_cluster_subnet("fd00:10::/62")]
    alloc = HostSubnetAllocator("blue", subnets)
    assert [str(n) for n in alloc.allocate("a")] == ["10.128.0.0/24", "fd00:10::/64"]
    assert [str(n) for n in alloc.allocate("b")] == ["10.128.1.0/24", "fd00:10:0:1::/64"]
    assert alloc.allocate("a") == alloc.get("a")
    alloc.allocate("c")
    alloc.allocate("d")
    with pytest.raises(SubnetsExhausted, match="error allocating network blue for node e: no "
                                               "available IPv4 host subnets"):
        alloc.allocate("e")
    alloc.release("b")
    assert [str(n) for n in alloc.allocate("e")] == ["10.128.1.0/24", "fd00:10:0:1::/64"]


def test_host_subnet_reservations_after_restart() -> None:
    alloc = HostSubnetAllocator("default", [parse_cluster_subnet("10.244.0.0/16/24")])
    alloc.reserve("n2", ["10.244.5.0/24"])
    assert [str(n) for n in alloc.allocate("n1")] == ["10.244.0.0/24"]
    with pytest.raises(SubnetConflict, match="already allocated to node n2"):
        alloc.reserve("n3", ["10.244.5.0/24"])
    with pytest.raises(SubnetConflict, match="not a host subnet of this network"):
        alloc.reserve("n3", ["10.1.0.0/24"])
