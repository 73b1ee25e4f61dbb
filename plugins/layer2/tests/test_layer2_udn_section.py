"""Layer2's UDN/CUDN section: immutable as a whole, transit subnet, preconfigured keys."""

from __future__ import annotations

import pytest
from ovnk_layer2.topology import Layer2Topology
from ovnk_layer2.udn_section import Layer2Section

from ovnk_core.config import load_config
from ovnk_core.udn_section import EVPN, MAC_VRF, NO_OVERLAY

pytestmark = pytest.mark.unit
CONFIG = load_config({}, env={})
PRECONFIGURED = load_config({"enable_preconfigured_udn_addresses": "true"}, env={})
SECTION = Layer2Section()
PRIMARY_NET = {"role": "Primary", "subnets": ["10.200.0.0/16"],
               "infrastructureSubnets": ["10.200.0.0/30"], "defaultGatewayIPs": ["10.200.0.1"]}


def test_the_topology_offers_the_section() -> None:
    assert isinstance(Layer2Topology(CONFIG).udn_section, Layer2Section)
    assert (SECTION.topology, SECTION.key, SECTION.namespaced) == ("Layer2", "layer2", True)
    assert SECTION.supports_transport(EVPN, "Primary")
    assert not SECTION.supports_transport(NO_OVERLAY, "Primary")
    assert SECTION.evpn_vrfs == ((MAC_VRF, True),)


def test_rules_and_immutability() -> None:
    assert SECTION.validate(PRIMARY_NET, None, "spec.layer2") == []
    assert [str(e) for e in SECTION.validate({**PRIMARY_NET, "role": "Secondary"}, None,
                                             "spec.layer2")] == [
        'spec.layer2: Invalid value: defaultGatewayIPs is only supported for Primary '
        "network",
        'spec.layer2: Invalid value: infrastructureSubnets is only supported for '
        "Primary network"]
    assert [str(e) for e in SECTION.validate({**PRIMARY_NET, "mtu": 1400}, PRIMARY_NET,
                                             "spec.layer2")] == [
        'spec.layer2: Invalid value: Layer2 is immutable']


def test_render() -> None:
    assert SECTION.render(PRIMARY_NET, "primary", CONFIG) == {
        "subnets": "10.200.0.0/16", "transitSubnet": "100.88.0.0/16"}
    assert SECTION.render(PRIMARY_NET, "primary", PRECONFIGURED) == {
        "subnets": "10.200.0.0/16", "transitSubnet": "100.88.0.0/16",
        "infrastructureSubnets": "10.200.0.0/30", "defaultGatewayIPs": "10.200.0.1"}
    secondary = {"role": "Secondary", "ipam": {"mode": "Disabled"}}
    assert SECTION.render(secondary, "secondary", CONFIG) == {}


def test_what_render_leaves_out_is_said() -> None:
    """Without the flag the preconfigured keys are not rendered (upstream), and the section
    says which ones (the cluster manager's FieldsIgnored warning)."""
    assert SECTION.ignored_fields(PRIMARY_NET, CONFIG) == (
        "infrastructureSubnets, defaultGatewayIPs are ignored: preconfigured UDN addresses are "
        "disabled (--enable-preconfigured-udn-addresses); pods may get any address of the "
        "subnets, and the gateway and management addresses are the subnets' first two")
    assert SECTION.ignored_fields(PRIMARY_NET, PRECONFIGURED) is None
    assert SECTION.ignored_fields({"role": "Primary", "subnets": ["10.200.0.0/16"]},
                                  CONFIG) is None
