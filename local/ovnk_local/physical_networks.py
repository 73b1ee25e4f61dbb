"""Physical networks of the local cluster, for Localnet networks to bridge pods onto.

Each physical network (``ovnk local up --physical-networks physnet1,...``; ``physnet1``
by default with a real dataplane) is a segment of its own: an OVS bridge ``seg`` in a
namespace ``<prefix>-seg-<name>`` (OVS's userspace datapath, so VLANs need no kernel
module, which this machine lacks), acting as a VLAN-aware switch.  Every node gets an
OVS bridge ``br-<name>`` whose uplink is a trunk port of the segment, and, playing the
administrator (ovnk never invents bridge mappings), the mapping ``<name>:br-<name>`` in
its ``ovn-bridge-mappings``.  A host ``<prefix>-host-<name>`` hangs off access ports of
the segment, the k-th physical network's (from 0) at:

* untagged (interface ``eth0``): ``10.<100+k>.0.254/24``
* VLAN 10 (``vlan10``): ``10.<100+k>.10.254/24``
* VLAN 20 (``vlan20``): ``10.<100+k>.20.254/24``

so a Localnet network with ``physicalNetworkName: physnet1``, VLAN 10 and subnet
``10.100.10.0/24`` (excluding ``.254``) puts its pods beside that host.  The segment's
MAC table (``ovs-appctl fdb/show seg``) shows on which VLAN each pod's frames came in.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

from ovnk_core.node import netlink
from ovnk_core.node.bridge_mappings import (
    read_bridge_mappings,
    with_bridge_mapping,
    write_bridge_mappings,
)
from ovnk_local.dataplane import (
    DataplaneError,
    NodeDataplane,
    create_ovs_database,
    ensure_netns,
)
from ovnk_local.runtime import disable_tx_checksum_offload

DEFAULT_PHYSICAL_NETWORKS = ("physnet1",)
VLANS = (10, 20)
SEGMENT_BRIDGE = "seg"
_NAME = re.compile(r"^[a-z][a-z0-9]{0,9}$")


def check_names(names: list[str], reserved: str) -> list[str]:
    """The physical network names, checked: lower-case letters and digits, at most 10
    (they go into interface names), each once, not ``reserved`` (the gateway's)."""
    for name in names:
        if not _NAME.match(name):
            raise DataplaneError(f"physical network name {name!r}: use 1-10 lower-case "
                                 "letters and digits, starting with a letter")
        if name == reserved:
            raise DataplaneError(f"physical network name {name!r} is the gateway bridge's "
                                 "(breth0) own mapping")
    if len(set(names)) != len(names):
        raise DataplaneError(f"physical network names repeat: {', '.join(names)}")
    if len(names) > 100:
        raise DataplaneError("at most 100 physical networks")
    return names


@dataclass(frozen=True)
class PhysicalNetwork:
    """One physical network of a local cluster (``index`` k picks its host's addresses)."""

    name: str
    index: int
    prefix: str  # the cluster's namespace prefix

    @property
    def segment_netns(self) -> str:
        return f"{self.prefix}-seg-{self.name}"

    @property
    def host_netns(self) -> str:
        return f"{self.prefix}-host-{self.name}"

    @property
    def bridge(self) -> str:
        """The OVS bridge of each node on this physical network."""
        return f"br-{self.name}"

    def node_uplink(self) -> str:
        """The node's end of its trunk into the segment (a port of ``bridge``)."""
        return f"{self.name}-up"

    @staticmethod
    def segment_port(node: NodeDataplane) -> str:
        return f"n{node.index}"

    def segment_ovs(self, nodes_dir: Path) -> NodeDataplane:
        """The segment's own OVS (database and daemons), run like a node's."""
        return NodeDataplane(f"segment-{self.name}", 0, self.segment_netns,
                             nodes_dir / f"segment-{self.name}")

    def host_address(self, vlan: int | None) -> ipaddress.IPv4Interface:
        """The host's address untagged (``None``) or on ``vlan``."""
        return ipaddress.IPv4Interface(f"10.{100 + self.index}.{vlan or 0}.254/24")

    @staticmethod
    def host_interface(vlan: int | None) -> str:
        return "eth0" if vlan is None else f"vlan{vlan}"


def create_segment(network: PhysicalNetwork, ovs: NodeDataplane) -> None:
    """The segment's and its host's namespaces and the segment's OVS database."""
    ensure_netns(network.segment_netns)
    ensure_netns(network.host_netns)
    create_ovs_database(ovs)


def configure_segment(network: PhysicalNetwork, ovs: NodeDataplane) -> None:
    """The segment's bridge (its OVS running) and the host on an access port per VLAN
    (untagged: a port trunking VLAN 0 alone)."""
    ovs.vsctl("init")
    ovs.vsctl("--may-exist", "add-br", SEGMENT_BRIDGE, "--", "set", "bridge", SEGMENT_BRIDGE,
              "datapath_type=netdev")
    for vlan in (None, *VLANS):
        port, ifname = f"h{vlan or 0}", network.host_interface(vlan)
        if netlink.link_index(ifname, netns=network.host_netns) is None:
            netlink.delete_link(port, netns=network.segment_netns)  # a half-made earlier try
            temporary = f"hp{vlan or 0}"
            netlink.ensure_veth(port, temporary, netns=network.segment_netns,
                                peer_netns=network.host_netns)
            netlink.rename_link(temporary, ifname, netns=network.host_netns)
        netlink.set_link(port, netns=network.segment_netns, up=True)
        access = [f"tag={vlan}"] if vlan else ["trunks=0"]
        ovs.vsctl("--may-exist", "add-port", SEGMENT_BRIDGE, port, "--", "set", "port", port,
                  *access)
        netlink.ensure_address(ifname, str(network.host_address(vlan)),
                               netns=network.host_netns)
        netlink.set_link(ifname, netns=network.host_netns, up=True)
    disable_tx_checksum_offload(network.host_netns)


def attach_node(network: PhysicalNetwork, segment: NodeDataplane, node: NodeDataplane
                ) -> None:
    """The node's bridge, trunked into the segment, and its bridge mapping (both OVS
    running)."""
    uplink, port = network.node_uplink(), network.segment_port(node)
    if netlink.link_index(uplink, netns=node.netns) is None:
        netlink.delete_link(port, netns=network.segment_netns)  # a half-made earlier try
        temporary = f"pn{network.index}-{node.index}"
        netlink.ensure_veth(port, temporary, netns=network.segment_netns, peer_netns=node.netns)
        netlink.rename_link(temporary, uplink, netns=node.netns)
    netlink.set_link(port, netns=network.segment_netns, up=True)
    segment.vsctl("--may-exist", "add-port", SEGMENT_BRIDGE, port)
    netlink.set_link(uplink, netns=node.netns, up=True)
    node.vsctl("--may-exist", "add-br", network.bridge, "--", "set", "bridge", network.bridge,
               "datapath_type=netdev")
    node.vsctl("--may-exist", "add-port", network.bridge, uplink)
    current = read_bridge_mappings(node.vsctl)
    wanted = with_bridge_mapping(current, network.name, network.bridge)
    if wanted != current:
        write_bridge_mappings(node.vsctl, wanted)
