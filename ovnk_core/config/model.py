"""The typed, validated configuration every component receives.

``Config`` is immutable: it is built once by the loader (which also runs the
consistency checks) and then passed explicitly to whatever needs it.  Derived
facts (which features are on, which subnets are built in) are properties here
so every component answers those questions the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ovnk_core.config.defaults import DEFAULT_FEATURES, FEATURES_BY_FLAG
from ovnk_core.config.values import ClusterSubnet, IPNetwork

# Per-network masquerade IPs start after 10 reserved offsets and use two
# addresses per network ID (gateway router, management port).
MASQUERADE_RESERVED_OFFSETS = 10
MAX_NETWORK_ID = 4095


@dataclass(frozen=True)
class Config:
    """Every option's parsed value; build it with ``load_config`` (defaults live in the
    option table, ``ovnk_core.config.options``)."""

    enable_multi_network: bool
    enable_multi_networkpolicy: bool
    enable_network_segmentation: bool
    enable_dynamic_udn_allocation: bool
    udn_deletion_grace_period: float
    enable_persistent_ips: bool
    enable_preconfigured_udn_addresses: bool
    extra_features: tuple[str, ...]
    disabled_features: tuple[str, ...]
    topologies: tuple[str, ...]
    default_network_topology: str
    udn_allowed_default_services: tuple[str, ...]
    cluster_subnets: tuple[ClusterSubnet, ...]
    service_cidrs: tuple[IPNetwork, ...]
    v4_masquerade_subnet: IPNetwork
    v6_masquerade_subnet: IPNetwork
    v4_join_subnet: IPNetwork
    v6_join_subnet: IPNetwork
    v4_transit_subnet: IPNetwork
    v6_transit_subnet: IPNetwork
    mtu: int
    nb_address: tuple[str, ...]
    nb_resync_interval: float
    informer_sync_timeout: float
    sb_address: tuple[str, ...]
    kubeconfig: str
    node_name: str
    kubelet_cgroup_path: str
    metrics_bind_address: str
    loglevel: str
    # the OVN zone a zone controller renders (--zone; empty: the single zone of every node)
    zone: str = ""
    # Where each field's value came from ("default", "file", "env", "cli"), for `ovnk config`.
    sources: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def enabled_features(self) -> tuple[str, ...]:
        """Feature plugins to load, in a stable order: those on by default
        (``config.defaults.DEFAULT_FEATURES``), those the feature flags that are on enable
        (``config.defaults.FEATURES_BY_FLAG``), then ``--enable-feature``'s, less
        ``--disable-feature``'s."""
        wanted: list[str] = list(DEFAULT_FEATURES)
        for flag, features in FEATURES_BY_FLAG.items():
            if getattr(self, flag):
                wanted.extend(features)
        wanted.extend(self.extra_features)
        seen: list[str] = []
        for name in wanted:
            if name not in seen and name not in self.disabled_features:
                seen.append(name)
        return tuple(seen)

    @property
    def ip_families(self) -> frozenset[int]:
        return frozenset(entry.cidr.version for entry in self.cluster_subnets)

    def masquerade_subnet(self, version: int) -> IPNetwork:
        return self.v4_masquerade_subnet if version == 4 else self.v6_masquerade_subnet

    def join_subnet(self, version: int) -> IPNetwork:
        return self.v4_join_subnet if version == 4 else self.v6_join_subnet

    def transit_subnet(self, version: int) -> IPNetwork:
        return self.v4_transit_subnet if version == 4 else self.v6_transit_subnet

    def masquerade_network_capacity(self, version: int) -> int:
        """How many user-defined networks the masquerade subnet of one family can serve."""
        size = self.masquerade_subnet(version).num_addresses
        # Network ID n uses offsets 10+2n-1 and 10+2n; the last usable offset is size-1.
        return max(0, min(MAX_NETWORK_ID, (size - 1 - MASQUERADE_RESERVED_OFFSETS) // 2))
