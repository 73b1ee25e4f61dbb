"""Whether a node can attach a Localnet network's pods: its OVS must map the physical
network to a bridge of its own (never the gateway's)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from ovnk_localnet.topology import LocalnetTopology

from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.testing.configs import udn_config

pytestmark = pytest.mark.unit
TOPOLOGY = LocalnetTopology(udn_config())


class Host:
    def __init__(self, mappings: Mapping[str, str], gateway: str | None = "physnet") -> None:
        self.mappings, self.gateway = mappings, gateway

    def bridge_mappings(self) -> Mapping[str, str]:
        return self.mappings

    def gateway_physical_network(self) -> str | None:
        return self.gateway


def network(physical: str) -> NetInfo:
    return NetInfo(name="cluster_udn_phys", topology="localnet", role="secondary", mtu=1500,
                   physical_network_name=physical, nad_key="ns/phys")


def test_a_mapped_physical_network_is_attachable() -> None:
    host = Host({"physnet": "breth0", "tenant": "br-tenant"})
    assert TOPOLOGY.node_attachment_problem(network("tenant"), host) is None


def test_an_unmapped_physical_network_names_what_is_missing() -> None:
    problem = TOPOLOGY.node_attachment_problem(network("tenant"), Host({"physnet": "breth0"}))
    assert problem is not None
    assert "no bridge mapping for physical network 'tenant'" in problem
    assert "(it has: physnet:breth0)" in problem


def test_the_gateway_bridges_physical_network_is_refused() -> None:
    problem = TOPOLOGY.node_attachment_problem(network("physnet"), Host({"physnet": "breth0"}))
    assert problem is not None and "is the node's gateway bridge's" in problem
    # a node agent without a gateway has no such restriction
    assert TOPOLOGY.node_attachment_problem(
        network("physnet"), Host({"physnet": "breth0"}, gateway=None)) is None
