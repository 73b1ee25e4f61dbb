"""A Layer3 UDN's management-port SNAT: upstream's row in a zone, none in the single zone.

Upstream's ``addOrUpdateUDNNodeSubnetEgressSNAT``: ``snat <management-port masquerade IP>
<node subnet> logical_port=rtos-<P><node> match="eth.dst == <management port MAC>"`` on the
cluster router, one per IP family.  It acts only on a distributed gateway port, which
``rtos-`` is in a zone (its node's ``gateway_chassis``); the single zone renders none, nor
does a zone on an NB without ``NAT.match`` or for the default network.
"""

from __future__ import annotations

import dataclasses
import ipaddress

import pytest
from ovnk_layer3.desired import build_node

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.capabilities import LEGACY
from ovnk_core.ovn.declarative import DesiredRow
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState

pytestmark = pytest.mark.unit
net = ipaddress.ip_network
MASQUERADE = (net("169.254.0.0/17"), net("fd69::/112"))
NODE = NodeState("ovn-worker", (net("10.100.0.0/24"), net("fd00:100::/64")), 2, "chassis-1",
                 GatewayConfig("shared", "breth0", mac_from_ip("172.18.0.2"),
                               ("172.18.0.2/16",), ("172.18.0.1",)))


def network(name: str = "ns1_blue", network_id: int = 3, interconnect: bool = True
            ) -> NetworkState:
    role = "default" if name == "default" else "primary"
    netinfo = NetInfo(name=name, topology="layer3", role=role, mtu=1400,
                      subnets=(ClusterSubnet(net("10.100.0.0/16"), 24),
                               ClusterSubnet(net("fd00:100::/48"), 64)),
                      join_subnets=(net("100.65.0.0/16"), net("fd99::/64"))
                      if role == "primary" else ())
    return NetworkState(netinfo, 0 if name == "default" else network_id, MASQUERADE,
                        (net("100.64.0.0/16"), net("fd98::/64")), interconnect=interconnect)


def snats(rows: list[DesiredRow]) -> list[dict[str, object]]:
    return [dict(row.columns) for row in rows
            if row.table == "NAT" and row.columns.get("match")]


def test_a_zone_renders_upstreams_management_port_snat_per_family() -> None:
    mgmt_mac = mac_from_ip("10.100.0.2")
    assert snats(build_node(network(), NODE)) == [
        {"type": "snat", "external_ip": "169.254.0.16", "logical_ip": "10.100.0.0/24",
         "logical_port": ["rtos-ns1_blue_ovn-worker"], "match": f"eth.dst == {mgmt_mac}",
         "options": {"stateless": "false"}},
        {"type": "snat", "external_ip": "fd69::10", "logical_ip": "fd00:100::/64",
         "logical_port": ["rtos-ns1_blue_ovn-worker"], "match": f"eth.dst == {mgmt_mac}",
         "options": {"stateless": "false"}}]


def test_none_in_the_single_zone_without_nat_match_or_on_the_default_network() -> None:
    assert snats(build_node(network(interconnect=False), NODE)) == []
    assert snats(build_node(dataclasses.replace(network(), nb=LEGACY), NODE)) == []
    assert snats(build_node(network("default"), NODE)) == []
    assert snats(build_node(network(), dataclasses.replace(NODE, chassis_id=""))) == []
