"""Where a pod's addresses in a network come from, and which of them no pod may have.

Shared by the pod IPAM (cluster manager), which hands addresses out, and the
zone's attachment checks, which refuse an entry the IPAM could not have
written.  Both read the network's ``NetworkNeeds``, never its topology name.
Every component refuses a network whose subnet leaves its pods no address
(``check_pod_pools``, one of the core's network checks) instead of failing its
pods one by one.
"""

from __future__ import annotations

import ipaddress

from ovnk_core.allocators.ips import free_addresses
from ovnk_core.config.values import IPNetwork
from ovnk_core.errors import NetworkConfigError
from ovnk_core.networks.addressing import IPAddress, gateway_ip, management_ip
from ovnk_core.networks.builtin_checks import UNUSABLE_SUBNET_REASON
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


def kept_ranges(netinfo: NetInfo | None, subnet: IPNetwork) -> list[tuple[str, IPNetwork]]:
    """``excluded_subnets``, each with what keeps it (``gateway``, ``excludeSubnets``...)."""
    def host(ip: IPAddress) -> IPNetwork:
        return ipaddress.ip_network(f"{ip}/{subnet.max_prefixlen}")
    if uses_node_subnets(netinfo):
        return [("gateway", host(gateway_ip(subnet))),
                ("management port", host(management_ip(subnet)))]
    assert netinfo is not None
    kept: list[tuple[str, IPNetwork]] = []
    if netinfo.is_primary:
        gateway, management = infrastructure_ips(netinfo, subnet)
        kept = [("gateway", host(gateway)), ("management port", host(management))]
    for name, nets in (("excludeSubnets", netinfo.exclude_subnets),
                       ("infrastructureSubnets", netinfo.infrastructure_subnets),
                       ("reservedSubnets", netinfo.reserved_subnets)):
        kept += [(name, net) for net in nets]
    return kept


def excluded_subnets(netinfo: NetInfo | None, subnet: IPNetwork) -> list[IPNetwork]:
    """The ranges of ``subnet`` never given to pods (besides its network and broadcast
    addresses): the gateway (.1) and management port (.2) addresses of per-node subnets
    and of primary networks (or the network's preconfigured ones), and a network's
    ``excludeSubnets``, ``infrastructureSubnets`` and ``reservedSubnets``.  ``netinfo`` is
    ``None`` for the default network."""
    return [net for _, net in kept_ranges(netinfo, subnet)]


def empty_pool_problems(netinfo: NetInfo) -> list[str]:
    """The subnets of a network with cluster-wide IPAM that leave no address for pods once
    the addresses an allocator never hands out are kept (``allocators.ips``: network and
    IPv4 broadcast addresses, ``excluded_subnets``): a primary network's shared ``/30``,
    say, whose every pod would fail with ``subnet ... is full``.  Per-node subnets are left to
    their topology's prefix rules."""
    if uses_node_subnets(netinfo):
        return []
    problems = []
    for cluster_subnet in netinfo.subnets:
        subnet = cluster_subnet.cidr
        kept = kept_ranges(netinfo, subnet)
        if free_addresses(subnet, [net for _, net in kept]) > 0:
            continue
        what = ["its network address"]
        if subnet.version == 4 and subnet.prefixlen < 31:
            what.append("its broadcast address")
        what += [f"{name} {net.network_address if net.num_addresses == 1 else net}"
                 for name, net in kept if net.version == subnet.version and
                 net.overlaps(subnet)]  # type: ignore[arg-type]
        count = subnet.num_addresses
        held = "its only address is kept" if count == 1 else \
            f"all {count} of its addresses are kept"
        problems.append(f"subnet {subnet} of network {netinfo.name} leaves no address for "
                        f"pods: {held} ({', '.join(what)})")
    return problems


def check_pod_pools(netinfo: NetInfo) -> None:
    """The core's network check on ``empty_pool_problems``.

    :raises NetworkConfigError: (reason ``UnusableSubnet``) naming every such subnet.
    """
    problems = [] if netinfo.is_default else empty_pool_problems(netinfo)
    if problems:
        raise NetworkConfigError("; ".join(problems), reason=UNUSABLE_SUBNET_REASON)
