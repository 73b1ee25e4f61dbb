"""Consistency checks across options: what cannot be judged one flag at a time.

Each check returns the problems it finds as messages that name the flags
involved; the loader joins them into one ``ConfigError`` so an operator sees
every mistake at once instead of fixing them one restart at a time.
"""

from __future__ import annotations

import logging
from itertools import combinations

from ovnk_core.config.model import Config
from ovnk_core.config.values import IPNetwork

log = logging.getLogger(__name__)

_LOGLEVELS = {"debug", "info", "warning", "error", "critical", "0", "1", "2", "3", "4", "5"}


def check_features(config: Config) -> list[str]:
    problems = []
    if config.enable_network_segmentation and not config.enable_multi_network:
        problems.append(
            "the Network Segmentation feature cannot be enabled without also enabling "
            "Multi Network (--enable-network-segmentation requires --enable-multi-network)"
        )
    if config.enable_dynamic_udn_allocation and not config.enable_network_segmentation:
        problems.append(
            "the Dynamic UDN Allocation feature cannot be enabled without also enabling "
            "Network Segmentation (--enable-dynamic-udn-allocation requires "
            "--enable-network-segmentation)"
        )
    return problems


def check_scalars(config: Config) -> list[str]:
    problems = []
    if not 576 <= config.mtu <= 65536:
        problems.append(f"--mtu {config.mtu} is out of range (576..65536)")
    if 6 in config.ip_families and config.mtu < 1280:
        problems.append(f"--mtu {config.mtu} is below 1280, the minimum for IPv6 cluster subnets")
    if config.loglevel.lower() not in _LOGLEVELS:
        problems.append(
            f"--loglevel {config.loglevel!r} is not one of debug, info, warning, error or 0-5"
        )
    if not config.cluster_subnets:
        problems.append("--cluster-subnets must name at least one subnet")
    return problems


def check_families(config: Config) -> list[str]:
    problems = []
    cluster = config.ip_families
    service: set[int] = {cidr.version for cidr in config.service_cidrs}
    if not config.service_cidrs:
        problems.append("--service-cluster-ip-range must name at least one CIDR")
    elif cluster and service != cluster:
        problems.append(
            "--service-cluster-ip-range must have the same IP families as --cluster-subnets "
            f"(services: {_families(service)}, cluster: {_families(cluster)})"
        )
    if len(config.service_cidrs) != len(service):
        problems.append("--service-cluster-ip-range may name at most one CIDR per IP family")
    for version, flag in ((4, "--gateway-v4"), (6, "--gateway-v6")):
        for name, subnet in (("masquerade", config.masquerade_subnet(version)),
                             ("join", config.join_subnet(version))):
            if subnet.version != version:
                problems.append(f"{flag}-{name}-subnet {subnet} is not an IPv{version} CIDR")
        transit = config.transit_subnet(version)
        if transit.version != version:
            problems.append(
                f"--cluster-manager-v{version}-transit-subnet {transit} is not an IPv{version} CIDR"
            )
    return problems


def check_masquerade_capacity(config: Config) -> list[str]:
    """With UDNs every network takes two masquerade IPs: the subnet must hold them."""
    if not config.enable_network_segmentation:
        return []
    problems = []
    for version in sorted(config.ip_families):
        subnet = config.masquerade_subnet(version)
        capacity = config.masquerade_network_capacity(version)
        flag = f"--gateway-v{version}-masquerade-subnet"
        suggestion = "169.254.0.0/17" if version == 4 else "fd69::/112"
        if capacity < 1:
            problems.append(
                f"{flag} {subnet} is too small for network segmentation: it holds "
                f"{subnet.num_addresses} addresses and user-defined networks need 10 reserved "
                f"plus 2 per network; use a larger subnet such as {suggestion}"
            )
        elif capacity < 4095:
            log.warning(
                "%s %s holds masquerade IPs for only %d user-defined networks (of 4095); "
                "consider %s", flag, subnet, capacity, suggestion,
            )
    return problems


def builtin_subnets(config: Config) -> list[tuple[str, str, IPNetwork]]:
    """(description, flag, subnet) of every subnet the cluster reserves for itself."""
    subnets: list[tuple[str, str, IPNetwork]] = [
        ("cluster subnet", "--cluster-subnets", entry.cidr) for entry in config.cluster_subnets
    ]
    subnets += [("service subnet", "--service-cluster-ip-range", c) for c in config.service_cidrs]
    for version in (4, 6):
        subnets += [
            ("built-in join subnet", f"--gateway-v{version}-join-subnet",
             config.join_subnet(version)),
            ("masquerade subnet", f"--gateway-v{version}-masquerade-subnet",
             config.masquerade_subnet(version)),
            ("transit switch subnet", f"--cluster-manager-v{version}-transit-subnet",
             config.transit_subnet(version)),
        ]
    return subnets


def check_overlaps(config: Config) -> list[str]:
    problems = []
    for (kind_a, flag_a, a), (kind_b, flag_b, b) in combinations(builtin_subnets(config), 2):
        if a.version == b.version and a.overlaps(b):
            problems.append(
                f"illegal network configuration: {kind_a} {a} ({flag_a}) overlaps "
                f"{kind_b} {b} ({flag_b})"
            )
    return problems


CHECKS = (check_features, check_scalars, check_families, check_masquerade_capacity,
          check_overlaps)


def validate(config: Config) -> list[str]:
    """Every problem found in ``config``; empty when it is consistent."""
    problems: list[str] = []
    for check in CHECKS:
        problems.extend(check(config))
    return problems


def _families(versions: set[int] | frozenset[int]) -> str:
    return ", ".join(f"IPv{v}" for v in sorted(versions)) or "none"
