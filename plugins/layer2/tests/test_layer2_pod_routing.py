"""Layer2's pod routing: what a pod's pod-networks entry carries for a Layer2 network."""

from __future__ import annotations

import ipaddress

import pytest
from ovnk_layer2.topology import Layer2Topology

from ovnk_core.config import load_config
from ovnk_core.networks.addressing import link_local_from_mac
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.pods.annotation import build_pod_network

pytestmark = pytest.mark.unit
CONFIG = load_config({}, env={})
TOPOLOGY = Layer2Topology(CONFIG)


def test_primary_ipv6_gets_the_link_local_gateway() -> None:
    assert str(link_local_from_mac("0a:58:0a:64:00:01")) == "fe80::858:aff:fe64:1"
    netinfo = NetInfo(name="ns_l2", topology="layer2", role="primary", mtu=1400,
                      join_subnets=(ipaddress.ip_network("100.65.0.0/16"),
                                    ipaddress.ip_network("fd99::/64")))
    entry = build_pod_network(CONFIG, netinfo, "primary", [
        ipaddress.ip_interface("10.100.0.5/24"), ipaddress.ip_interface("fd00:100::5/64")],
        topology=TOPOLOGY)
    assert entry.to_json()["ipv6_lla_gateway_ip"] == "fe80::858:aff:fe64:1"
    assert entry.gateway_ips == ("10.100.0.1", "fd00:100::1")
    assert ("fd99::/64", "fd00:100::1") in entry.routes
    assert ("10.96.0.0/16", "10.100.0.1") in entry.routes


def test_secondary_has_neither_gateway_nor_routes() -> None:
    netinfo = NetInfo(name="ns_side", topology="layer2", role="secondary", mtu=1400)
    entry = build_pod_network(CONFIG, netinfo, "secondary",
                              [ipaddress.ip_interface("192.168.0.5/24")], topology=TOPOLOGY)
    assert entry.gateway_ips == () and entry.routes == ()
    assert entry.ipv6_lla_gateway_ip == ""
