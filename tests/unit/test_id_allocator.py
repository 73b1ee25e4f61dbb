"""Integer ID allocation: round robin, reservations after restart, conflicts, exhaustion."""

from __future__ import annotations

import random

import pytest

from ovnk_core.allocators.ids import IdAllocationError, IdAllocator
from ovnk_core.allocators.tunnel_keys import (
    EXTRA_KEYS_START,
    TunnelKeyAllocator,
    network_tunnel_key,
)
from ovnk_core.networks.netinfo import NetInfo, NetworkNeeds


def test_round_robin_skips_reserved_and_does_not_reuse_at_once() -> None:
    ids = IdAllocator("NetworkIDs", 5, reserved=(0,))
    assert [ids.allocate(n) for n in "abc"] == [1, 2, 3]
    assert ids.allocate("a") == 1  # an owner gets its own ID back
    ids.release("b")
    assert ids.allocate("d") == 4
    assert ids.allocate("e") == 2  # wrapped around to the released one
    with pytest.raises(IdAllocationError, match="NetworkIDs: no ID left for f"):
        ids.allocate("f")


def test_reserve_rules() -> None:
    ids = IdAllocator("NetworkIDs", 4096)
    ids.reserve("blue", 7)
    ids.reserve("blue", 7)
    with pytest.raises(IdAllocationError, match="ID 7 requested by green is already allocated "
                                                "to blue"):
        ids.reserve("green", 7)
    with pytest.raises(IdAllocationError, match="blue already holds ID 7"):
        ids.reserve("blue", 8)
    with pytest.raises(IdAllocationError, match="not allocatable"):
        ids.reserve("x", 0)
    with pytest.raises(IdAllocationError, match="not allocatable"):
        ids.reserve("x", 4096)


def test_ids_beyond_the_allocation_range_can_be_kept_up_to_the_reserve_limit() -> None:
    ids = IdAllocator("NodeIDs", 5, reserved=(0, 1), reserve_limit=10)
    ids.reserve("old", 9)
    with pytest.raises(IdAllocationError, match=r"not allocatable \(range 0..9"):
        ids.reserve("x", 10)
    assert [ids.allocate(n) for n in "abc"] == [2, 3, 4]
    with pytest.raises(IdAllocationError, match="no ID left for d"):
        ids.allocate("d")
    assert ids.get("old") == 9


def test_never_hands_out_one_id_twice_across_restarts() -> None:
    rng = random.Random(42)
    ids = IdAllocator("T", 64)
    for step in range(3000):
        action = rng.random()
        owner = f"o{rng.randrange(80)}"
        if action < 0.6:
            try:
                ids.allocate(owner)
            except IdAllocationError:
                pass
        elif action < 0.9:
            ids.release(owner)
        else:  # restart: a new allocator rebuilt from the persisted state
            persisted = ids.allocated()
            ids = IdAllocator("T", 64)
            for name, value in rng.sample(sorted(persisted.items()), len(persisted)):
                ids.reserve(name, value)
        values = list(ids.allocated().values())
        assert len(values) == len(set(values)), f"duplicate after step {step}"


def test_tunnel_keys() -> None:
    assert network_tunnel_key(2) == 16711685
    # the topology declares how many extra keys its networks need
    l2 = NetInfo(name="ns_l2", topology="two-keys", role="primary", mtu=1400,
                 needs=NetworkNeeds(extra_tunnel_keys=2))
    l3 = NetInfo(name="ns_l3", topology="no-extra", role="primary", mtu=1400)
    keys = TunnelKeyAllocator()
    assert keys.keys_for(l3) == []
    assert keys.keys_for(l2) == [EXTRA_KEYS_START, EXTRA_KEYS_START + 1] == [16715779, 16715780]
    assert keys.keys_for(l2) == [16715779, 16715780]
    restarted = TunnelKeyAllocator()
    restarted.reserve("ns_l2", [16715779, 16715780])
    other = NetInfo(name="ns_other", topology="two-keys", role="primary", mtu=1400,
                    needs=NetworkNeeds(extra_tunnel_keys=2))
    assert restarted.keys_for(other) == [16715781, 16715782]
    restarted.release("ns_l2")
    assert restarted.keys_for(l2) == [16715783, 16715784]
    # the NAD lists the network's own key first (upstream: [16711683+ID, extra...])
    assert restarted.annotation_keys(l2, 2) == [16711685, 16715783, 16715784]
    assert restarted.annotation_keys(l3, 3) == []
    again = TunnelKeyAllocator()
    again.reserve("ns_l2", [16711685, 16715783, 16715784])  # the network's own key skipped
    assert again.keys_for(l2) == [16715783, 16715784]
