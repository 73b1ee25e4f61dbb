"""The core's own network checks, as plain functions.

The plugin host registers them as an internal plugin
(``ovnk_core.plugins.BuiltinNetworkChecks``), so the core uses the same path a
plugin would, and the order "plugins first, core last" is the one pluggy gives
by registration.
"""

from __future__ import annotations

from ovnk_core.config import Config
from ovnk_core.config.validation import builtin_subnets
from ovnk_core.config.values import IPNetwork
from ovnk_core.errors import NetworkConfigError
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.special_ranges import unusable_subnet_problems

UNUSABLE_SUBNET_REASON = "UnusableSubnet"
"""The reason of a network whose subnets no pod can use (a range, or no address left)."""


def check_network(netinfo: NetInfo, config: Config) -> None:
    """Subnet rules every user-defined network must satisfy: its subnets and join subnets
    clear of the cluster's built-in subnets and of each other (upstream checks them all
    pairwise), and of the address ranges its pods can never use (``special_ranges``:
    upstream accepts those and its pods fail one by one).  The default network is not
    checked.

    :raises NetworkConfigError: (reason ``SubnetOverlap``) naming every overlap with a
        built-in subnet, else (reason ``UnusableSubnet``) every unusable range.
    """
    if netinfo.is_default:
        return
    overlaps = find_internal_overlaps(netinfo, config)
    if overlaps:
        raise NetworkConfigError(
            "pod or join subnet overlaps with already configured internal subnets: "
            + "; ".join(overlaps),
            reason="SubnetOverlap",
        )
    unusable = unusable_subnet_problems(netinfo)
    if unusable:
        raise NetworkConfigError(
            "pod or join subnet overlaps an address range pods cannot use: "
            + "; ".join(unusable),
            reason=UNUSABLE_SUBNET_REASON,
        )


def find_internal_overlaps(netinfo: NetInfo, config: Config) -> list[str]:
    """Pairs (network subnet, built-in subnet) that overlap, as readable phrases."""
    own: list[tuple[str, IPNetwork]] = [("user defined subnet", s.cidr) for s in netinfo.subnets]
    own += [("user defined join subnet", s) for s in netinfo.join_subnets]
    reserved = [
        (kind, subnet)
        for kind, _flag, subnet in builtin_subnets(config)
        if kind != "transit switch subnet" or netinfo.needs.transit_switch_subnet
    ]
    # A built-in subnet entirely excluded from the network's IPAM cannot clash.
    reserved = [
        (kind, subnet) for kind, subnet in reserved
        if not any(subnet.version == ex.version and subnet.subnet_of(ex)  # type: ignore[arg-type]
                   for ex in netinfo.exclude_subnets)
    ]
    phrases = []
    for own_kind, own_subnet in own:
        for kind, subnet in reserved:
            if own_subnet.version == subnet.version and own_subnet.overlaps(subnet):
                phrases.append(f"{own_kind} {own_subnet} overlaps {kind} {subnet}")
    # The network's own join subnet: its router ports would take the pods' addresses.
    for join in netinfo.join_subnets:
        for pod_subnet in netinfo.subnets:
            if join.version == pod_subnet.cidr.version and join.overlaps(pod_subnet.cidr):
                phrases.append(f"user defined join subnet {join} overlaps user defined "
                               f"subnet {pod_subnet.cidr}")
    return phrases
