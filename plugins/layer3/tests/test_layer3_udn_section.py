"""Layer3's UDN/CUDN section: per-field immutability, transports, its NAD subnets."""

from __future__ import annotations

import pytest
from ovnk_layer3.topology import Layer3Topology
from ovnk_layer3.udn_section import Layer3Section

from ovnk_core.config import load_config
from ovnk_core.udn_section import EVPN, IP_VRF, MAC_VRF, NO_OVERLAY

pytestmark = pytest.mark.unit
CONFIG = load_config({}, env={})
SECTION = Layer3Section()


def test_the_topology_offers_the_section() -> None:
    assert isinstance(Layer3Topology(CONFIG).udn_section, Layer3Section)
    assert (SECTION.topology, SECTION.key, SECTION.namespaced) == ("Layer3", "layer3", True)
    assert SECTION.supports_transport(NO_OVERLAY, "Primary")
    assert SECTION.supports_transport(EVPN, "Primary")
    assert not SECTION.supports_transport(EVPN, "Secondary")
    assert SECTION.evpn_vrfs == ((IP_VRF, True), (MAC_VRF, False))


def test_fields_are_immutable_one_by_one() -> None:
    old = {"role": "Primary", "subnets": [{"cidr": "10.1.0.0/16", "hostSubnet": 24}]}
    grown = {**old, "subnets": [*old["subnets"], {"cidr": "10.2.0.0/16", "hostSubnet": 24}]}
    assert SECTION.validate(grown, old, "spec.layer3") == []  # a primary network may grow
    assert [str(e) for e in SECTION.validate({**old, "mtu": 1400}, old, "spec.layer3")] == [
        'spec.layer3.mtu: Invalid value: 1400: mtu is immutable']


def test_render_writes_host_subnets() -> None:
    section = {"role": "Primary", "subnets": [{"cidr": "10.1.0.0/16", "hostSubnet": 24},
                                              {"cidr": "2001:db8::/60"}]}
    assert SECTION.render(section, "primary", CONFIG) == {
        "subnets": "10.1.0.0/16/24,2001:db8::/60"}
