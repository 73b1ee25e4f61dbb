"""``ZoneContext.node_switches``: each node's switches in a network, named as the topology
builds them, with the node's management addresses."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Ref
from ovnk_core.ovn.ownership import Owner
from ovnk_core.render_state import NetworkState, NodeState, NodeSwitch
from ovnk_core.topology import RenderingNotSupported, ServiceAttachment
from ovnk_core.zone.node_switches import node_switches

pytestmark = pytest.mark.unit

OWNER = Owner("blue-network-controller", "network")


def switch_ids(node: str) -> Any:
    return OWNER.object_ids("LogicalSwitch", node)


class FakeTopology:
    """Per-node switches ``blue_<node>``; a node without subnets has no services."""

    refuse = False

    def build_network(self, state: NetworkState) -> list[DesiredRow]:
        if self.refuse:
            raise RenderingNotSupported("no")
        return [DesiredRow("Logical_Router", OWNER.object_ids("Router", "r"), {"name": "r"})]

    def build_node(self, state: NetworkState, node: NodeState) -> list[DesiredRow]:
        return [DesiredRow("Logical_Switch", switch_ids(node.name),
                           {"name": f"blue_{node.name}"})]

    def service_attachment(self, state: NetworkState, node: NodeState
                           ) -> ServiceAttachment | None:
        if not node.subnets:
            return None
        return ServiceAttachment((Ref.to("Logical_Switch", switch_ids(node.name)),))


STATE = NetworkState(NetInfo(name="blue", topology="layer3", role="primary", mtu=1400), 1,
                     (), ())


def test_switches_with_names_and_management_addresses() -> None:
    nodes = [NodeState("n1", (ipaddress.ip_network("10.1.0.0/24"),
                              ipaddress.ip_network("fd00:1::/64"))),
             NodeState("n2")]
    assert node_switches(FakeTopology(), STATE, nodes) == [  # type: ignore[arg-type]
        NodeSwitch("n1", "blue_n1", Ref.to("Logical_Switch", switch_ids("n1")),
                   ("10.1.0.2", "fd00:1::2"))]


def test_a_topology_that_cannot_render_has_none() -> None:
    topology = FakeTopology()
    topology.refuse = True
    assert node_switches(topology, STATE, [NodeState("n1")]) == []  # type: ignore[arg-type]
