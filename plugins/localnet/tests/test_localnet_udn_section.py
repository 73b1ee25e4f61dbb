"""Localnet's UDN/CUDN section: CUDN only, its own MTU default, its NAD keys."""

from __future__ import annotations

import pytest
from ovnk_localnet.topology import LocalnetTopology
from ovnk_localnet.udn_section import LocalnetSection

from ovnk_core.config import load_config
from ovnk_core.errors import NetworkConfigError
from ovnk_core.udn.sections import UdnSections
from ovnk_core.udn.validation import validate_cudn, validate_udn

pytestmark = pytest.mark.unit
CONFIG = load_config({}, env={})
SECTION = LocalnetSection()
SECTIONS = UdnSections([SECTION])


def test_the_topology_offers_the_section() -> None:
    topology = LocalnetTopology(CONFIG)
    assert isinstance(topology.udn_section, LocalnetSection)
    assert SECTION.netconf_topology == topology.name
    assert (SECTION.topology, SECTION.key, SECTION.namespaced) == ("Localnet", "localnet", False)
    assert SECTION.transports == frozenset()


def test_only_a_cluster_network_may_use_it() -> None:
    udn = {"metadata": {"name": "n", "namespace": "ns"},
           "spec": {"topology": "Localnet", "localnet": {"role": "Secondary"}}}
    assert [str(e) for e in validate_udn(udn, sections=SECTIONS)] == [
        'spec.topology: Unsupported value: "Localnet"']
    assert SECTIONS.namespaced().values() == ()


def test_rules_and_immutability() -> None:
    section = {"role": "Secondary", "physicalNetworkName": "a:b", "subnets": ["10.0.0.0/24"]}
    assert [str(e) for e in SECTION.validate(section, None, "spec.network.localnet")] == [
        'spec.network.localnet.physicalNetworkName: Invalid value: "a:b": '
        "physicalNetworkName cannot contain `,` or `:` characters"]
    section["physicalNetworkName"] = "physnet"
    assert SECTION.validate(section, dict(section), "p") == []
    assert [str(e) for e in SECTION.validate({**section, "mtu": 1500}, section, "p")] == [
        'p: Invalid value: Localnet is immutable']
    cudn = {"metadata": {"name": "n"}, "spec": {"namespaceSelector": {}, "network": {
        "topology": "Localnet", "localnet": section}}}
    assert validate_cudn(cudn, sections=SECTIONS) == []


def test_render() -> None:
    section = {"role": "Secondary", "physicalNetworkName": "physnet",
               "subnets": ["10.0.0.0/24"], "excludeSubnets": ["10.0.0.1/32"],
               "vlan": {"mode": "Access", "access": {"id": 200}}}
    assert SECTION.default_mtu(CONFIG) == CONFIG.mtu + 100
    assert SECTION.render(section, "secondary", CONFIG) == {
        "subnets": "10.0.0.0/24", "physicalNetworkName": "physnet",
        "excludeSubnets": "10.0.0.1/32", "vlanID": 200}
    persistent = {**section, "ipam": {"lifecycle": "Persistent"}}
    with pytest.raises(NetworkConfigError, match="persistentIPs is Disabled"):
        SECTION.render(persistent, "secondary", CONFIG)
    enabled = load_config({"enable_persistent_ips": "true"}, env={})
    assert SECTION.render(persistent, "secondary", enabled)["allowPersistentIPs"] is True
