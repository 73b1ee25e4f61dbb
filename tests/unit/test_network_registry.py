"""The network registry's namespace index: a namespace's primary NAD is found among that
namespace's own NADs, and stays right as NADs come, change network and go."""

from __future__ import annotations

import pytest

from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.registry import NetworkRegistry

pytestmark = pytest.mark.unit


def netinfo(name: str, role: str) -> NetInfo:
    return NetInfo(name=name, topology="layer3", role=role, mtu=1400)


def test_primary_nad_of_a_namespace_follows_its_nads() -> None:
    registry = NetworkRegistry()
    registry.set_nad("blue/side", netinfo("blue_side", "secondary"))
    assert registry.primary_nad_for_namespace("blue") is None
    registry.set_nad("blue/net", netinfo("blue_net", "primary"))
    registry.set_nad("green/net", netinfo("green_net", "primary"))
    assert registry.primary_nad_for_namespace("blue") == "blue/net"
    assert registry.primary_nad_for_namespace("green") == "green/net"
    assert registry.primary_nad_for_namespace("teal") is None
    registry.remove_nad("blue/net")
    assert registry.primary_nad_for_namespace("blue") is None
    # a NAD that moves to another network is re-indexed
    registry.set_nad("blue/side", netinfo("blue_other", "primary"))
    assert registry.primary_nad_for_namespace("blue") == "blue/side"
    registry.remove_nad("blue/side")
    registry.remove_nad("green/net")
    assert registry.primary_nad_for_namespace("blue") is None
    assert registry.primary_nad_for_namespace("green") is None
