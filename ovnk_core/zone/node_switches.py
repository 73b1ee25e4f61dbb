"""The switches each node's pods are on in a network, with the node's management addresses.

Features that hang rows on a node's switch (NetworkPolicy's ``NetpolNode`` ACL letting
the node's own health checks in, as upstream's ``addAllowACLFromNode``) ask the zone for
them instead of knowing how a topology names its switches: the switches are those the
topology gives for the node's services (``Topology.service_attachment``), named as the
topology builds them, and the management addresses are the second address of each of the
node's subnets in the network, as the node agent configures its management port.
"""

from __future__ import annotations

from collections.abc import Iterable

from ovnk_core.networks.addressing import management_ip
from ovnk_core.render_state import NetworkState, NodeState, NodeSwitch
from ovnk_core.topology import RenderingNotSupported, Topology


def node_switches(topology: Topology, state: NetworkState, nodes: Iterable[NodeState]
                  ) -> list[NodeSwitch]:
    found: list[NodeSwitch] = []
    try:
        network_rows = topology.build_network(state)
        for node in nodes:
            attachment = topology.service_attachment(state, node)
            if attachment is None:
                continue
            names = {row.ids.primary_id: str(row.columns.get("name", ""))
                     for row in [*network_rows, *topology.build_node(state, node)]
                     if row.table == "Logical_Switch"}
            ips = tuple(str(management_ip(subnet)) for subnet in node.subnets)
            found += [NodeSwitch(node.name, names[ref.primary_id], ref, ips)
                      for ref in attachment.switches if names.get(ref.primary_id)]
    except RenderingNotSupported:
        return []
    return found
