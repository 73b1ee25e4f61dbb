"""Where a pod's addresses in a network come from, and which of them no pod may have.

Shared by the pod IPAM (cluster manager), which hands addresses out, and the
zone's attachment checks, which refuse an entry the IPAM could not have
written.  Both read the network's ``NetworkNeeds``, never its topology name.
"""

from __future__ import annotations

import ipaddress

from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.addressing import IPAddress, gateway_ip, management_ip
from ovnk_core.networks.netinfo import NetInfo


def uses_node_subnets(netinfo: NetInfo | None) -> bool:
    """Whether a network's pods take addresses from their node's host subnet (the default
    network, and networks whose topology asks for node subnets) rather than from the
    network's own subnets (cluster-wide IPAM).  ``None`` is the default network."""
    return netinfo is None or netinfo.is_default or netinfo.needs.node_subnets


def infrastructure_ips(netinfo: NetInfo | None, subnet: IPNetwork
                       ) -> tuple[IPAddress, IPAddress]:
    """(gateway, management) addresses of one of a network's subnets, as upstream's
    ``allocateInfrastructureIPs``: the ``defaultGatewayIPs`` entry of the subnet's family,
    else the first address of the ``infrastructureSubnets`` inside it, else ``.1``; the
    management address is the next infrastructure address, else ``.2`` (``.1`` when ``.2``
    is a custom gateway).  Network and IPv4 broadcast addresses are never used."""
    if netinfo is None:
        return gateway_ip(subnet), management_ip(subnet)
    unusable = {subnet.network_address}
    if subnet.version == 4:
        unusable.add(subnet.broadcast_address)
    custom = next((ip for ip in netinfo.default_gateway_ips if ip in subnet), None)
    pool = (ip for infra in netinfo.infrastructure_subnets
            if infra.version == subnet.version and infra.subnet_of(subnet)  # type: ignore[arg-type]
            for ip in (infra.network_address + offset for offset in range(
                min(infra.num_addresses, 1024)))
            if ip not in unusable and ip != custom)
    gateway = custom if custom is not None else next(pool, gateway_ip(subnet))
    management = next(pool, None)
    if management is None:
        management = management_ip(subnet)
        if management == gateway:
            management = gateway_ip(subnet)
    return gateway, management


def pod_gateway(netinfo: NetInfo | None, subnet: IPNetwork) -> IPAddress:
    """The gateway of a pod's address in ``subnet`` (``netinfo`` None: the default
    network): the subnet's first address unless the network preconfigures its own."""
    if netinfo is None or uses_node_subnets(netinfo):
        return gateway_ip(subnet)
    return infrastructure_ips(netinfo, subnet)[0]


def excluded_subnets(netinfo: NetInfo | None, subnet: IPNetwork) -> list[IPNetwork]:
    """The ranges of ``subnet`` never given to pods (besides its network and broadcast
    addresses): the gateway (.1) and management port (.2) addresses of per-node subnets
    and of primary networks (or the network's preconfigured ones), and a network's
    ``excludeSubnets``, ``infrastructureSubnets`` and ``reservedSubnets``.  ``netinfo`` is
    ``None`` for the default network."""
    reserved: list[IPNetwork] = [
        ipaddress.ip_network(f"{gateway_ip(subnet)}/{subnet.max_prefixlen}"),
        ipaddress.ip_network(f"{management_ip(subnet)}/{subnet.max_prefixlen}")]
    if not uses_node_subnets(netinfo):
        assert netinfo is not None
        reserved = []
        if netinfo.is_primary:
            reserved = [ipaddress.ip_network(f"{ip}/{subnet.max_prefixlen}")
                        for ip in infrastructure_ips(netinfo, subnet)]
        reserved += list(netinfo.exclude_subnets) + list(netinfo.infrastructure_subnets) + \
            list(netinfo.reserved_subnets)
    return reserved
