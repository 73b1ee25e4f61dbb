"""``k8s.ovn.org/node-transit-switch-port-ifaddr`` and ``k8s.ovn.org/zone-name``: upstream's
formats, and malformed values refused with a specific message."""

from __future__ import annotations

import ipaddress

import pytest

from ovnk_core.annotations import node_transit, node_zone

pytestmark = pytest.mark.unit

V4, V6 = ipaddress.ip_network("100.88.0.0/16"), ipaddress.ip_network("fd97::/64")


def test_addresses_are_the_subnet_base_plus_the_node_id_in_upstreams_json() -> None:
    # upstream's own example (zone_ic_handler.go): node ID 2 → 100.88.0.2/16, fd97::2/64
    addresses = node_transit.addresses_of([V6, V4], 2)
    assert [str(a) for a in addresses] == ["100.88.0.2/16", "fd97::2/64"]
    raw = node_transit.serialize(addresses)
    assert raw == '{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}'
    assert node_transit.parse(raw) == addresses
    assert node_transit.serialize(node_transit.addresses_of([V4], 300)) == \
        '{"ipv4":"100.88.1.44/16"}'


def test_a_node_id_beyond_the_subnet_is_refused() -> None:
    with pytest.raises(ValueError, match="node ID 300 does not fit in transit subnet "
                                         "100.88.0.0/24"):
        node_transit.addresses_of([ipaddress.ip_network("100.88.0.0/24")], 300)


@pytest.mark.parametrize(("raw", "message"), [
    ("100.88.0.2/16", "k8s.ovn.org/node-transit-switch-port-ifaddr is not valid JSON"),
    ('["100.88.0.2/16"]', "k8s.ovn.org/node-transit-switch-port-ifaddr must be a JSON object"),
    ('{"ipv4":"100.88.0.2"}', 'k8s.ovn.org/node-transit-switch-port-ifaddr: ipv4 '
                              '"100.88.0.2" is not an address with a prefix length'),
    ('{"ipv4":"fd97::2/64"}', "k8s.ovn.org/node-transit-switch-port-ifaddr: ipv4 'fd97::2/64' "
                              "is not an IPv4 address"),
    ('{"ipv4":"100.88.0.2/16","v4":"x"}', 'k8s.ovn.org/node-transit-switch-port-ifaddr: '
                                          'unknown key(s) "v4"'),
    ("{}", "k8s.ovn.org/node-transit-switch-port-ifaddr has no address"),
])
def test_malformed_transit_addresses_are_refused(raw: str, message: str) -> None:
    with pytest.raises(node_transit.TransitAddressesError) as err:
        node_transit.parse(raw)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("zone", ["ovn-worker", "global", "a.b-c", "z" * 253])
def test_zone_names(zone: str) -> None:
    assert node_zone.parse(zone) == zone


@pytest.mark.parametrize(("raw", "message"), [
    (None, "k8s.ovn.org/zone-name is not set: the node is in no zone"),
    ("", "k8s.ovn.org/zone-name '' is not a zone name"),
    ("Zone_A", "k8s.ovn.org/zone-name 'Zone_A' is not a zone name"),
    ("-a", "k8s.ovn.org/zone-name '-a' is not a zone name"),
    ("z" * 254, "k8s.ovn.org/zone-name 'zzz"),
])
def test_missing_or_bad_zones_are_refused(raw: str | None, message: str) -> None:
    with pytest.raises(node_zone.NodeZoneError) as err:
        node_zone.parse(raw)
    assert str(err.value).startswith(message)
