"""Upstream's names for service load balancers, their groups and their external_ids.

``Service_<ns>/<svc>_<PROTO>_<scope>`` with the network's prefix, scopes
``cluster``, ``node_router+switch_<node>``, ``node_router_<node>``,
``node_switch_<node>`` and ``node_local_router_<node>``; groups
``clusterLBGroup``, ``clusterSwitchLBGroup`` and ``clusterRouterLBGroup``.
"""

from __future__ import annotations

from ovnk_core.networks.netinfo import NetInfo, network_prefix

CLUSTER_LB_GROUP = "clusterLBGroup"
CLUSTER_SWITCH_LB_GROUP = "clusterSwitchLBGroup"
CLUSTER_ROUTER_LB_GROUP = "clusterRouterLBGroup"
LB_GROUPS = (CLUSTER_LB_GROUP, CLUSTER_SWITCH_LB_GROUP, CLUSTER_ROUTER_LB_GROUP)

SCOPE_CLUSTER = "cluster"
SCOPE_ROUTER_AND_SWITCH = "node_router+switch_"
SCOPE_ROUTER = "node_router_"
SCOPE_SWITCH = "node_switch_"
SCOPE_LOCAL_ROUTER = "node_local_router_"

KIND_KEY = "k8s.ovn.org/kind"
KIND_SERVICE = "Service"



def group_name(netinfo: NetInfo | str, group: str) -> str:
    """A load balancer group's name in a network: ``<P>clusterLBGroup`` (no prefix on the
    default network)."""
    return _scoped(netinfo, group)


def lb_name(netinfo: NetInfo | str, namespace: str, service: str, protocol: str,
            scope: str) -> str:
    """``<P>Service_<ns>/<svc>_<PROTO>_<scope>``."""
    return _scoped(netinfo, f"Service_{namespace}/{service}_{protocol.upper()}_{scope}")


def _scoped(netinfo: NetInfo | str, name: str) -> str:
    return network_prefix(netinfo.name if isinstance(netinfo, NetInfo) else netinfo) + name
