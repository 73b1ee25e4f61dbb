"""``NetInfo``: the parsed, immutable description of one network.

Everything downstream (allocators, topology controllers, features) works from
a ``NetInfo``, never from raw NAD JSON.  Two NADs that describe the same
network produce equal ``NetInfo`` values, which is how conflicting NADs for
one network name are detected.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ovnk_core.config.values import ClusterSubnet, IPNetwork
from ovnk_core.networks.addressing import IPAddress

DEFAULT_NETWORK_NAME = "default"

ROLE_PRIMARY = "primary"
ROLE_SECONDARY = "secondary"
ROLE_DEFAULT = "default"
ROLE_INFRASTRUCTURE_LOCKED = "infrastructure-locked"
NETWORK_ROLES = (ROLE_PRIMARY, ROLE_SECONDARY)


@dataclass(frozen=True)
class NetworkNeeds:
    """What the core allocates and plumbs for a network, as its topology declares it.

    The core never asks which topology a network has; it reads these facts, set by the
    topology plugin's ``parse_netconf`` (``ovnk_core.topology``):

    :ivar node_subnets: each node gets a host subnet (``host_prefix`` long) of every subnet,
        annotated in ``k8s.ovn.org/node-subnets``, and a pod takes its addresses from its
        node's slice; otherwise pods take addresses from the network's whole subnets
        (cluster-wide IPAM), if it has any.
    :ivar pod_tunnel_ids: every pod attachment gets a ``tunnel_id`` in its pod-networks entry.
    :ivar extra_tunnel_keys: datapath tunnel keys the network needs besides
        ``BASE + networkID`` (recorded on the NAD as ``k8s.ovn.org/tunnel-keys``).
    :ivar transit_switch_subnet: the network's routers take addresses from the cluster's
        transit switch subnet, so its subnets must not overlap it.
    :ivar node_gateway: a primary network whose nodes get the gateway plumbing (masquerade
        addresses, the gateway router's patch on the external bridge).
    :ivar management_port: each node gets a management port into the network, with an
        address from the node's host subnet (needs ``node_subnets``).
    """

    node_subnets: bool = False
    pod_tunnel_ids: bool = False
    extra_tunnel_keys: int = 0
    transit_switch_subnet: bool = False
    node_gateway: bool = False
    management_port: bool = False


# The cluster default network: per-node host subnets, a gateway and a management port on
# every node — whichever topology renders it.
DEFAULT_NETWORK_NEEDS = NetworkNeeds(node_subnets=True, transit_switch_subnet=True,
                                     node_gateway=True, management_port=True)


@dataclass(frozen=True)
class NetInfo:
    """One network, as every component sees it.

    :ivar name: network name (``<ns>_<udn>``, ``cluster_udn_<cudn>`` or ``default``).
    :ivar topology: topology string from the netconf: the name of the topology plugin
        that parsed it (a bundled one or a third party's).
    :ivar role: ``primary``, ``secondary`` or ``default``.
    :ivar subnets: pod subnets; ``host_prefix`` is the per-node slice when the network
        has ``needs.node_subnets``, else the subnet's own prefix (one subnet across nodes).
    :ivar reserved_subnets: never handed out by the pod IPAM (upstream keeps them for static
        requests, which ovnk refuses).
    :ivar infrastructure_subnets: kept for the network's own addresses: its gateway and
        management addresses come from them (``pods.ip_pools.infrastructure_ips``).
    :ivar default_gateway_ips: the network's gateway per family, instead of each subnet's
        first address.
    :ivar needs: what the core allocates and plumbs for it (set by the topology).
    :ivar extra: topology-specific settings of third-party topologies.
    """

    name: str
    topology: str
    role: str
    mtu: int
    subnets: tuple[ClusterSubnet, ...] = ()
    exclude_subnets: tuple[IPNetwork, ...] = ()
    join_subnets: tuple[IPNetwork, ...] = ()
    transit_subnets: tuple[IPNetwork, ...] = ()
    reserved_subnets: tuple[IPNetwork, ...] = ()
    infrastructure_subnets: tuple[IPNetwork, ...] = ()
    default_gateway_ips: tuple[IPAddress, ...] = ()
    vlan_id: int | None = None
    physical_network_name: str = ""
    allow_persistent_ips: bool = False
    nad_key: str = ""
    needs: NetworkNeeds = NetworkNeeds()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def is_default(self) -> bool:
        return self.name == DEFAULT_NETWORK_NAME

    @property
    def is_primary(self) -> bool:
        return self.role == ROLE_PRIMARY

    @property
    def prefix(self) -> str:
        """Prefix of every OVN object name of this network (empty for the default network)."""
        return network_prefix(self.name)

    def scoped_name(self, name: str) -> str:
        return self.prefix + name


def network_prefix(network_name: str) -> str:
    """Upstream's name prefix: ``-`` and ``/`` become ``.``, then ``_`` is appended."""
    if network_name == DEFAULT_NETWORK_NAME:
        return ""
    return network_name.replace("-", ".").replace("/", ".") + "_"
