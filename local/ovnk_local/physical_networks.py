"""Physical networks of the local cluster, for Localnet networks to bridge pods onto.

Each physical network (``ovnk local up --physical-networks physnet1,...``; ``physnet1``
by default with a real dataplane) is a segment of its own: a VLAN-aware Linux bridge in a
namespace ``<prefix>-seg-<name>``.  Every node gets an OVS bridge ``br-<name>`` whose
uplink is a trunk port of the segment (untagged plus VLANs 10 and 20), and, playing the
administrator (ovnk never invents bridge mappings), the mapping ``<name>:br-<name>`` in
its ``ovn-bridge-mappings``.  A host ``<prefix>-host-<name>`` on the segment answers on
each of them, the k-th physical network (from 0) at:

* untagged: ``10.<100+k>.0.254/24``
* VLAN 10: ``10.<100+k>.10.254/24``
* VLAN 20: ``10.<100+k>.20.254/24``

so a Localnet network with ``physicalNetworkName: physnet1``, ``vlan`` 10 and subnet
``10.100.10.0/24`` (excluding ``.254``) puts its pods beside that host.
"""

from __future__ import annotations

import ipaddress
import re
import subprocess
from dataclasses import dataclass

from ovnk_core.node import netlink
from ovnk_core.node.bridge_mappings import (
    read_bridge_mappings,
    with_bridge_mapping,
    write_bridge_mappings,
)
from ovnk_local.dataplane import DataplaneError, NodeDataplane, ensure_netns, run_ip
from ovnk_local.runtime import disable_tx_checksum_offload

DEFAULT_PHYSICAL_NETWORKS = ("physnet1",)
VLANS = (10, 20)
SEGMENT_BRIDGE = "seg"
HOST_PORT = "host"
HOST_UPLINK = "eth0"
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

    def host_address(self, vlan: int | None) -> ipaddress.IPv4Interface:
        """The host's address untagged (``None``) or on ``vlan``."""
        return ipaddress.IPv4Interface(f"10.{100 + self.index}.{vlan or 0}.254/24")

    def host_interface(self, vlan: int | None) -> str:
        return HOST_UPLINK if vlan is None else f"{HOST_UPLINK}.{vlan}"


def _bridge(netns: str, *args: str) -> None:
    result = subprocess.run(["bridge", "-netns", netns, *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise DataplaneError(f"bridge -netns {netns} {' '.join(args)}: "
                             f"{result.stderr.strip()}")


def _trunk(network: PhysicalNetwork, port: str) -> None:
    """``port`` of the segment carries every VLAN tagged, untagged frames on VLAN 1."""
    for vlan in VLANS:
        _bridge(network.segment_netns, "vlan", "add", "dev", port, "vid", str(vlan))


def create_segment(network: PhysicalNetwork) -> None:
    """The segment's bridge, and its host answering untagged and on every VLAN."""
    ensure_netns(network.segment_netns)
    netlink.ensure_bridge(SEGMENT_BRIDGE, netns=network.segment_netns)
    run_ip("-n", network.segment_netns, "link", "set", SEGMENT_BRIDGE, "type", "bridge",
           "vlan_filtering", "1")
    netlink.set_link(SEGMENT_BRIDGE, netns=network.segment_netns, up=True)
    ensure_netns(network.host_netns)
    if netlink.link_index(HOST_UPLINK, netns=network.host_netns) is None:
        netlink.ensure_veth(HOST_PORT, "host-peer", netns=network.segment_netns,
                            peer_netns=network.host_netns)
        netlink.rename_link("host-peer", HOST_UPLINK, netns=network.host_netns)
    netlink.set_link(HOST_PORT, netns=network.segment_netns, master=SEGMENT_BRIDGE, up=True)
    _trunk(network, HOST_PORT)
    netlink.set_link(HOST_UPLINK, netns=network.host_netns, up=True)
    for vlan in (None, *VLANS):
        ifname = network.host_interface(vlan)
        if vlan is not None and netlink.link_index(ifname, netns=network.host_netns) is None:
            run_ip("-n", network.host_netns, "link", "add", "link", HOST_UPLINK, "name", ifname,
                   "type", "vlan", "id", str(vlan))
        netlink.ensure_address(ifname, str(network.host_address(vlan)),
                               netns=network.host_netns)
        netlink.set_link(ifname, netns=network.host_netns, up=True)
    disable_tx_checksum_offload(network.host_netns)


def attach_node(network: PhysicalNetwork, node: NodeDataplane) -> None:
    """The node's bridge on the segment and its bridge mapping (OVS running)."""
    uplink, port = network.node_uplink(), network.segment_port(node)
    if netlink.link_index(uplink, netns=node.netns) is None:
        netlink.delete_link(port, netns=network.segment_netns)  # a half-made earlier try
        temporary = f"pn{network.index}-{node.index}"
        netlink.ensure_veth(port, temporary, netns=network.segment_netns, peer_netns=node.netns)
        netlink.rename_link(temporary, uplink, netns=node.netns)
    netlink.set_link(port, netns=network.segment_netns, master=SEGMENT_BRIDGE, up=True)
    _trunk(network, port)
    netlink.set_link(uplink, netns=node.netns, up=True)
    node.vsctl("--may-exist", "add-br", network.bridge, "--", "set", "bridge", network.bridge,
               "datapath_type=netdev")
    node.vsctl("--may-exist", "add-port", network.bridge, uplink)
    current = read_bridge_mappings(node.vsctl)
    wanted = with_bridge_mapping(current, network.name, network.bridge)
    if wanted != current:
        write_bridge_mappings(node.vsctl, wanted)
