"""Readers for netconf keys that several topologies share.

Each reader takes a ``NetConf`` and returns typed values, raising
``NetworkConfigError`` with the upstream message when the value is not
allowed.  Topology plugins (bundled or third-party) compose them in their
``parse_netconf``.
"""

from __future__ import annotations

import ipaddress

from ovnk_core.config import Config
from ovnk_core.config.values import ClusterSubnet, IPNetwork, parse_str_list
from ovnk_core.errors import NetworkConfigError
from ovnk_core.networks.addressing import IPAddress
from ovnk_core.networks.join_subnets import join_subnet_problems
from ovnk_core.networks.netconf import NetConf

DEFAULT_UDN_JOIN_SUBNETS = (ipaddress.ip_network("100.65.0.0/16"),
                            ipaddress.ip_network("fd99::/64"))


def check_dual_stack(cidrs: tuple[IPNetwork, ...], key: str) -> None:
    versions = [cidr.version for cidr in cidrs]
    if len(versions) != len(set(versions)):
        raise NetworkConfigError(f"netconf {key!r} may hold at most one CIDR per IP family")


def read_plain_subnets(conf: NetConf) -> tuple[ClusterSubnet, ...]:
    """``subnets`` as plain CIDRs shared by every node (cluster-wide IPAM, no per-node
    slices)."""
    cidrs = conf.get_cidrs("subnets")
    check_dual_stack(cidrs, "subnets")
    return tuple(ClusterSubnet(cidr, cidr.prefixlen) for cidr in cidrs)


def read_join_subnets(conf: NetConf, subnets: tuple[ClusterSubnet, ...] = ()) -> tuple[
        IPNetwork, ...]:
    """``joinSubnet``: primary networks only; defaults to 100.65.0.0/16,fd99::/64.  Given
    the network's ``subnets``, a join CIDR of each of their families is required, each
    large enough for every node's gateway router (``join_subnets``)."""
    cidrs = conf.get_cidrs("joinSubnet")
    if conf.role != "primary":
        if cidrs:
            raise NetworkConfigError("JoinSubnets is only supported for Primary network")
        return ()
    if not cidrs:
        return DEFAULT_UDN_JOIN_SUBNETS
    check_dual_stack(cidrs, "joinSubnet")
    problems = join_subnet_problems("joinSubnet", cidrs, {s.cidr.version for s in subnets})
    if problems:
        raise NetworkConfigError("; ".join(problems))
    return cidrs


def read_exclude_subnets(conf: NetConf, subnets: tuple[ClusterSubnet, ...]) -> tuple[
        IPNetwork, ...]:
    """``excludeSubnets``: each must lie inside one of the network's subnets."""
    return read_subnets_within(conf, "excludeSubnets", subnets, "excluded subnets")


def read_subnets_within(conf: NetConf, key: str, subnets: tuple[ClusterSubnet, ...],
                        noun: str = "") -> tuple[IPNetwork, ...]:
    """A CIDR list each of whose entries lies inside one of the network's subnets."""
    found = conf.get_cidrs(key)
    if found and not subnets:
        raise NetworkConfigError(f"{key} must be unset when subnets is unset")
    for cidr in found:
        if not any(cidr.version == s.cidr.version and cidr.subnet_of(s.cidr)  # type: ignore[arg-type]
                   for s in subnets):
            raise NetworkConfigError(
                f"the provided network subnets {','.join(str(s.cidr) for s in subnets)} "
                f"do not contain {noun or key} {cidr}"
            )
    return found


def read_ips(conf: NetConf, key: str) -> tuple[IPAddress, ...]:
    """A comma-joined list of IP addresses (``"10.1.0.1,fd00::1"``)."""
    result = []
    for item in parse_str_list(conf.get_str(key)):
        try:
            result.append(ipaddress.ip_address(item))
        except ValueError:
            raise NetworkConfigError(f"netconf {key!r}: {item!r} is not an IP address") from None
    return tuple(result)


def read_persistent_ips(conf: NetConf, config: Config) -> bool:
    allow = conf.get_bool("allowPersistentIPs")
    if allow and not config.enable_persistent_ips:
        raise NetworkConfigError("allowPersistentIPs is set but persistentIPs is Disabled")
    return allow


def read_mtu(conf: NetConf, default: int,
             subnets: tuple[ClusterSubnet, ...]) -> int:
    mtu = conf.mtu or default
    if any(s.cidr.version == 6 for s in subnets) and mtu < 1280:
        raise NetworkConfigError(
            "MTU should be greater than or equal to 1280 when IPv6 subnet is used"
        )
    return mtu
