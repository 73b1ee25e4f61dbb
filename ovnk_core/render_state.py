"""What a topology plugin is given to render: a network, one node, one pod attachment.

These are plain frozen values assembled by the zone controller from the
Kubernetes objects (NADs, Node annotations, pod annotations).  A topology's
``build_*`` methods turn them into ``DesiredRow`` lists and never look
anything up themselves, which keeps them pure and testable without a
cluster.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

# NodeState.gateway's type: plugins take it from the render model
from ovnk_core.annotations.node_gateway import GatewayConfig as GatewayConfig
from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.addressing import IPAddress
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.capabilities import CURRENT, NbCapabilities
from ovnk_core.ovn.declarative import Ref


@dataclass(frozen=True)
class NodeState:
    """One node as one network sees it.

    :ivar subnets: the node's host subnets in this network (when its topology asks for
        node subnets; empty otherwise).
    :ivar node_id: ``k8s.ovn.org/node-id`` (join and transit addresses derive from it).
    :ivar chassis_id: ``k8s.ovn.org/node-chassis-id`` (gateway routers are pinned to it).
    :ivar gateway: the node's gateway config, or ``None`` while the node has not published
        one; gateway pieces are then left out and added when it appears.
    :ivar transit_addresses: ``k8s.ovn.org/node-transit-switch-port-ifaddr`` (IPv4 first;
        empty while not written): the node's addresses on the transit switches.
    :ivar remote: the node is in another zone (interconnect, ``NetworkState.interconnect``):
        only its transit switch port and the routes to it are rendered, never its switch,
        gateway or pods; always ``False`` in the single zone.
    """

    name: str
    subnets: tuple[IPNetwork, ...] = ()
    node_id: int | None = None
    chassis_id: str = ""
    gateway: GatewayConfig | None = None
    transit_addresses: tuple[ipaddress.IPv4Interface | ipaddress.IPv6Interface, ...] = ()
    remote: bool = False


@dataclass(frozen=True)
class NetworkState:
    """One network as the zone renders it.

    :ivar netinfo: the parsed network (name, topology, role, subnets, ...).
    :ivar network_id: ``k8s.ovn.org/network-id`` from its NADs (0 for the default network).
    :ivar masquerade_subnets: the cluster's masquerade subnets (v4 first); per-network
        masquerade IPs derive from them and ``network_id``.
    :ivar default_join_subnets: the default network's join subnets (``--gateway-v4-join-subnet``).
    :ivar tunnel_keys: for a network whose topology asks for extra tunnel keys, every key
        of the network as its NAD lists them (``k8s.ovn.org/tunnel-keys``: ``BASE +
        networkID`` first, then the extra ones); empty otherwise.
    :ivar nb: what the zone's Northbound supports (``ovnk_core.ovn.capabilities``): the
        builders render upstream's rows where it can hold them.
    :ivar interconnect: the zone is one of several (``--zone``): a topology with
        ``Topology.interconnect`` adds the network's transit switch and its local nodes'
        ports on it, and is given the other zones' nodes with ``NodeState.remote``
        (docs/design/interconnect.md).  ``False`` in the single zone.
    """

    netinfo: NetInfo
    network_id: int
    masquerade_subnets: tuple[IPNetwork, ...]
    default_join_subnets: tuple[IPNetwork, ...]
    tunnel_keys: tuple[int, ...] = ()
    nb: NbCapabilities = CURRENT
    interconnect: bool = False

    @property
    def join_subnets(self) -> tuple[IPNetwork, ...]:
        """The join subnets of the IP families the network uses."""
        subnets = self.default_join_subnets if self.netinfo.is_default else \
            self.netinfo.join_subnets
        families = {s.cidr.version for s in self.netinfo.subnets}
        return tuple(s for s in subnets if s.version in families)


@dataclass(frozen=True)
class PodAttachment:
    """One pod's port on one network (its ``k8s.ovn.org/pod-networks`` entry)."""

    namespace: str
    name: str
    uid: str
    node: str
    nad_key: str  # "default" or "ns/nad"
    mac: str
    ips: tuple[str, ...]  # CIDR form, e.g. "10.100.1.5/24"; empty on a network without IPAM
    role: str = "primary"
    tunnel_id: int | None = None  # on networks whose topology asks for pod tunnel IDs
    node_id: int | None = None  # the pod's node's k8s.ovn.org/node-id, when known

    @property
    def addresses(self) -> tuple[IPAddress, ...]:
        return tuple(ipaddress.ip_interface(ip).ip for ip in self.ips)


@dataclass(frozen=True)
class NodeSwitch:
    """A switch a node's pods are on in one network, as its topology rendered it (for
    features that hang rows on it, such as NetworkPolicy's allow-from-node ACL).

    :ivar node: the node's name.
    :ivar name: the switch's ``name`` column (``<node>``, ``<network>_<node>`` ...).
    :ivar ref: the switch row (a ``Ref`` into the topology's rows).
    :ivar management_ips: the node's management port addresses in the network.
    """

    node: str
    name: str
    ref: Ref
    management_ips: tuple[str, ...] = ()
