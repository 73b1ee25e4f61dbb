"""The node's OVS bridge mappings: which bridge carries each physical network.

``external_ids:ovn-bridge-mappings`` of the node's Open_vSwitch row
(``physnet:breth0,tenant:br-tenant``) tells ovn-controller where a physical port's
physical network leaves the node.  The gateway writes only its own entry (the gateway
bridge's); every other one is the administrator's, as upstream leaves them, and is kept.
Topologies read them through ``OvsHost`` (``ovnk_core.topology.NodeHost``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

Vsctl = Callable[..., str]
KEY = "external_ids:ovn-bridge-mappings"


def parse_bridge_mappings(raw: str) -> dict[str, str]:
    """``ovn-bridge-mappings`` (``physnet:bridge,physnet2:bridge2``) as physical network →
    bridge; malformed entries are left out."""
    found: dict[str, str] = {}
    for entry in raw.split(","):
        network, sep, bridge = entry.strip().partition(":")
        if sep and network and bridge:
            found[network] = bridge
    return found


def with_bridge_mapping(raw: str, physical_network: str, bridge: str) -> str:
    """``raw`` with ``physical_network`` mapped to ``bridge``: the administrator's other
    mappings (other networks' physical networks, say) are kept, in their order."""
    mappings = parse_bridge_mappings(raw)
    mappings[physical_network] = bridge
    return ",".join(f"{network}:{name}" for network, name in mappings.items())


def read_bridge_mappings(vsctl: Vsctl) -> str:
    """The raw value (empty when unset)."""
    return vsctl("--if-exists", "get", "open_vswitch", ".", KEY).strip('"')


def write_bridge_mappings(vsctl: Vsctl, raw: str) -> None:
    vsctl("set", "open_vswitch", ".", f'{KEY}="{raw}"')


class OvsHost:
    """``NodeHost`` of a node agent: its answers come from its OVS, read when asked."""

    def __init__(self, vsctl: Vsctl, gateway_physical_network: str | None = None) -> None:
        self.vsctl = vsctl
        self._gateway_physical_network = gateway_physical_network

    def bridge_mappings(self) -> Mapping[str, str]:
        return parse_bridge_mappings(read_bridge_mappings(self.vsctl))

    def gateway_physical_network(self) -> str | None:
        return self._gateway_physical_network
