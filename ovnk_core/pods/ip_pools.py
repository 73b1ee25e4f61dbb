"""Where a pod's addresses in a network come from, and which of them no pod may have.

Shared by the pod IPAM (cluster manager), which hands addresses out, and the
zone's attachment checks, which refuse an entry the IPAM could not have
written.  Both read the network's ``NetworkNeeds``, never its topology name.
"""

from __future__ import annotations

import ipaddress

from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.addressing import gateway_ip, management_ip
from ovnk_core.networks.netinfo import NetInfo


def uses_node_subnets(netinfo: NetInfo | None) -> bool:
    """Whether a network's pods take addresses from their node's host subnet (the default
    network, and networks whose topology asks for node subnets) rather than from the
    network's own subnets (cluster-wide IPAM).  ``None`` is the default network."""
    return netinfo is None or netinfo.is_default or netinfo.needs.node_subnets


def excluded_subnets(netinfo: NetInfo | None, subnet: IPNetwork) -> list[IPNetwork]:
    """The ranges of ``subnet`` never given to pods (besides its network and broadcast
    addresses): the gateway (.1) and management port (.2) addresses of per-node subnets
    and of primary networks, and a network's ``excludeSubnets``.  ``netinfo`` is ``None``
    for the default network."""
    reserved: list[IPNetwork] = [
        ipaddress.ip_network(f"{gateway_ip(subnet)}/{subnet.max_prefixlen}"),
        ipaddress.ip_network(f"{management_ip(subnet)}/{subnet.max_prefixlen}")]
    if not uses_node_subnets(netinfo):
        assert netinfo is not None
        if not netinfo.is_primary:
            reserved = []
        reserved += list(netinfo.exclude_subnets)
    return reserved
