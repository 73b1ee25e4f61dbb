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

DEFAULT_NETWORK_NAME = "default"

ROLE_PRIMARY = "primary"
ROLE_SECONDARY = "secondary"
ROLE_DEFAULT = "default"
ROLE_INFRASTRUCTURE_LOCKED = "infrastructure-locked"
NETWORK_ROLES = (ROLE_PRIMARY, ROLE_SECONDARY)


@dataclass(frozen=True)
class NetInfo:
    """One network, as every component sees it.

    :ivar name: network name (``<ns>_<udn>``, ``cluster_udn_<cudn>`` or ``default``).
    :ivar topology: topology string from the netconf (``layer3``, ``layer2``, ``localnet``
        or a third-party topology's name).
    :ivar role: ``primary``, ``secondary`` or ``default``.
    :ivar subnets: pod subnets; ``host_prefix`` is the per-node slice for Layer3 and the
        subnet's own prefix for topologies that share one subnet across nodes.
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
    vlan_id: int | None = None
    physical_network_name: str = ""
    allow_persistent_ips: bool = False
    nad_key: str = ""
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
