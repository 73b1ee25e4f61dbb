"""The table of every configuration option ovnk understands.

One row per option: its flag name (upstream's where one exists), the
``Config`` field it fills, its parser and default, and its help text.  The
command-line parser, the ``OVNK_*`` environment lookup and the TOML loader
are all generated from this table, so an option is declared exactly once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovnk_core.config import defaults, values


@dataclass(frozen=True)
class Option:
    flag: str
    field: str
    parse: Callable[[Any], Any]
    default: Any
    help: str
    is_bool: bool = False
    aliases: tuple[str, ...] = ()

    @property
    def env_var(self) -> str:
        return "OVNK_" + self.flag.upper().replace("-", "_")


def _bool(flag: str, field: str, help: str) -> Option:
    return Option(flag, field, values.parse_bool, False, help, is_bool=True)


def _enables(field: str) -> str:
    """The feature plugins a feature flag enables, as its help text names them."""
    return "feature plugins: " + ", ".join(defaults.FEATURES_BY_FLAG[field])


OPTIONS: tuple[Option, ...] = (
    # Features (upstream [ovnkubernetesfeature])
    _bool("enable-multi-network", "enable_multi_network",
          "Enable secondary networks through NetworkAttachmentDefinitions."),
    _bool("enable-multi-networkpolicy", "enable_multi_networkpolicy",
          "Enable MultiNetworkPolicy (k8s.cni.cncf.io/v1beta1) on secondary networks "
          f"({_enables('enable_multi_networkpolicy')}). Requires --enable-multi-network."),
    _bool("enable-network-segmentation", "enable_network_segmentation",
          "Enable user-defined networks (UDN/CUDN) and primary networks "
          f"({_enables('enable_network_segmentation')}). Requires --enable-multi-network."),
    _bool("enable-dynamic-udn-allocation", "enable_dynamic_udn_allocation",
          "Render a user-defined network only on nodes that have pods (or EgressIPs) using it "
          f"({_enables('enable_dynamic_udn_allocation')}). "
          "Requires --enable-network-segmentation."),
    Option("udn-deletion-grace-period", "udn_deletion_grace_period", values.parse_duration,
           120.0, "How long a node keeps an unused network before it stops rendering it there "
           "(with --enable-dynamic-udn-allocation; Go duration, e.g. 120s, 2m)."),
    _bool("enable-persistent-ips", "enable_persistent_ips",
          "Allow ipam.lifecycle: Persistent (IPAMClaims) on networks whose topology supports "
          "it."),
    _bool("enable-preconfigured-udn-addresses", "enable_preconfigured_udn_addresses",
          "Allow reservedSubnets, infrastructureSubnets and defaultGatewayIPs on user-defined "
          "networks whose topology supports them."),
    Option("enable-feature", "extra_features", values.parse_str_list, (),
           "Comma-separated extra feature plugins to enable (entry points in ovnk.features)."),
    Option("disable-feature", "disabled_features", values.parse_str_list, (),
           "Comma-separated feature plugins to keep off even when they are on by default "
           f"({', '.join(defaults.DEFAULT_FEATURES)}) or their flag enables them."),
    Option("topologies", "topologies", values.parse_str_list, (),
           "Comma-separated topology plugins to load (entry points in ovnk.topologies). "
           "Empty: every installed topology."),
    Option("default-network-topology", "default_network_topology", values.parse_name,
           defaults.DEFAULT_NETWORK_TOPOLOGY,
           "The topology plugin that renders the cluster default network (it must be "
           "installed and enabled)."),
    Option("udn-allowed-default-services", "udn_allowed_default_services",
           values.parse_udn_allowed_default_services, "default/kubernetes,kube-system/kube-dns",
           "Comma-separated <namespace>/<name> of default-network services that pods of "
           "primary user-defined networks may reach (with --enable-network-segmentation)."),
    # Addressing
    Option("cluster-subnets", "cluster_subnets", values.parse_cluster_subnets,
           "10.244.0.0/16/24", "Default-network pod subnets, CIDR/HOSTPREFIX, comma-separated."),
    Option("service-cluster-ip-range", "service_cidrs", values.parse_cidr_list, "10.96.0.0/16",
           "Service CIDRs, comma-separated (one per IP family)."),
    Option("gateway-v4-masquerade-subnet", "v4_masquerade_subnet", values.parse_cidr,
           "169.254.169.0/29", "IPv4 masquerade subnet. User-defined networks need a large one "
           "(169.254.0.0/17)."),
    Option("gateway-v6-masquerade-subnet", "v6_masquerade_subnet", values.parse_cidr,
           "fd69::/125", "IPv6 masquerade subnet. User-defined networks need a large one "
           "(fd69::/112)."),
    Option("gateway-v4-join-subnet", "v4_join_subnet", values.parse_cidr, "100.64.0.0/16",
           "IPv4 join subnet of the default network."),
    Option("gateway-v6-join-subnet", "v6_join_subnet", values.parse_cidr, "fd98::/64",
           "IPv6 join subnet of the default network."),
    Option("cluster-manager-v4-transit-subnet", "v4_transit_subnet", values.parse_cidr,
           "100.88.0.0/16", "IPv4 transit switch subnet."),
    Option("cluster-manager-v6-transit-subnet", "v6_transit_subnet", values.parse_cidr,
           "fd97::/64", "IPv6 transit switch subnet."),
    Option("mtu", "mtu", values.parse_int, 1400,
           "MTU of the default network and default MTU of user-defined networks."),
    # Endpoints
    Option("nb-address", "nb_address", values.parse_ovsdb_remotes,
           "unix:/var/run/ovn/ovnnb_db.sock",
           "OVN Northbound remotes, comma-separated (several = RAFT cluster members)."),
    Option("nb-resync-interval", "nb_resync_interval", values.parse_duration, "10m",
           "How often the zone controller reads its Northbound rows again and repairs rows "
           "changed by other writers (0: only at start and after errors)."),
    Option("informer-sync-timeout", "informer_sync_timeout", values.parse_duration, "20s",
           "How long a component waits for the first list of every resource it watches "
           "(upstream's 20s); one that cannot sync in time exits non-zero saying which "
           "resources and why, so that its supervisor restarts it."),
    Option("zone", "zone", values.parse_zone, "",
           "The OVN zone this zone controller renders (interconnect: nodes whose "
           "k8s.ovn.org/zone-name is this zone are its own, every other node is remote; empty: "
           "one zone renders every node)."),
    Option("sb-address", "sb_address", values.parse_ovsdb_remotes,
           "unix:/var/run/ovn/ovnsb_db.sock", "OVN Southbound remotes, comma-separated."),
    Option("k8s-kubeconfig", "kubeconfig", str, "", "Path of the kubeconfig to use "
           "(empty: in-cluster config, else ~/.kube/config).", aliases=("kubeconfig",)),
    Option("node-name", "node_name", str, "", "Name of this node (node component)."),
    Option("kubelet-cgroup-path", "kubelet_cgroup_path", str, "",
           "The kubelet's cgroup v2 directory, relative to the cgroup v2 mount (e.g. "
           "kubelet.slice/kubelet.service), for host rules that let the kubelet's own "
           "connections (its probes) through to pods (node component; empty: the first "
           "directory named kubelet.service under the mount, as upstream)."),
    Option("metrics-bind-address", "metrics_bind_address", str, "",
           "HOST:PORT for the Prometheus endpoint (empty: off)."),
    Option("loglevel", "loglevel", str, "info",
           "Log level: debug, info, warning, error (or 0-5 as upstream's klog levels)."),
)

OPTIONS_BY_FIELD = {option.field: option for option in OPTIONS}
OPTIONS_BY_FLAG = {option.flag: option for option in OPTIONS}
for _option in OPTIONS:
    for _alias in _option.aliases:
        OPTIONS_BY_FLAG[_alias] = _option
