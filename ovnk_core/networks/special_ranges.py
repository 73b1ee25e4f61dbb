"""Address ranges a network's pods can never use, and the subnets that fall into them.

Upstream's CRDs accept any CIDR (``isCIDR``) and its cluster manager checks only overlaps
with the cluster's own subnets, so a network on ``127.0.0.0/8`` is created, and then every
pod fails on its node (``FailedCreatePodSandBox ... Network is unreachable``, a management
port route the kernel refuses).  Some ranges cannot work anywhere:

* **loopback** (``127.0.0.0/8``, ``::1/128``): the kernel drops packets to and from
  them on any device but ``lo``, and OVN's routers drop them as martians;
* **multicast** (``224.0.0.0/4``, ``ff00::/8``): never a host's address (the kernel
  refuses an IPv6 one, and a route via one);
* **IPv4-mapped** (``::ffff:0:0/96``): never valid on the wire (RFC 4291).

Others only where packets are routed — a network whose pods take addresses from per-node
subnets (reached through the network's router) or a primary network (a gateway is its
pods' way out); one flat segment (a secondary network without per-node subnets) can use
them like any link:

* **link-local** (``169.254.0.0/16``, ``fe80::/10``): routers must not forward them
  (RFC 3927, RFC 4291), and every IPv6 interface already routes ``fe80::/64`` itself;
* **"this network"** (``0.0.0.0/8``): OVN's routers drop it as a martian.

``unusable_subnet_problems`` lists every subnet and join subnet of a network that
overlaps one of them (a range entirely in its ``excludeSubnets`` gives no pod an
address), as phrases like the overlap check's.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.netinfo import NetInfo


@dataclass(frozen=True)
class SpecialRange:
    name: str
    subnet: IPNetwork
    why: str
    routed_only: bool = False


def _range(name: str, cidr: str, why: str, routed_only: bool = False) -> SpecialRange:
    return SpecialRange(name, ipaddress.ip_network(cidr), why, routed_only)


_LOOPBACK = "packets to and from it never leave a host"
_MULTICAST = "a multicast address is never a host's address"
_LINK_LOCAL = "routers must not forward it (RFC 3927, RFC 4291), and this network's pods " \
    "are routed"
SPECIAL_RANGES = (
    _range("loopback", "127.0.0.0/8", _LOOPBACK),
    _range("loopback", "::1/128", _LOOPBACK),
    _range("multicast", "224.0.0.0/4", _MULTICAST),
    _range("multicast", "ff00::/8", _MULTICAST),
    _range("IPv4-mapped", "::ffff:0:0/96", "it is never valid on the wire"),
    _range("link-local", "169.254.0.0/16", _LINK_LOCAL, routed_only=True),
    _range("link-local", "fe80::/10", _LINK_LOCAL, routed_only=True),
    _range('"this network"', "0.0.0.0/8", "routers drop it, and this network's pods are "
                                          "routed", routed_only=True),
)


def is_routed(netinfo: NetInfo) -> bool:
    """Whether the network's pods are reached through routers: per-node subnets (a router
    joins them) or a primary network (its gateway is the pods' way out)."""
    return netinfo.needs.node_subnets or netinfo.is_primary


def _excluded(netinfo: NetInfo, special: IPNetwork) -> bool:
    """A range entirely inside the network's ``excludeSubnets`` gives no pod an address."""
    return any(special.version == ex.version and special.subnet_of(ex)  # type: ignore[arg-type]
               for ex in netinfo.exclude_subnets)


def unusable_subnet_problems(netinfo: NetInfo) -> list[str]:
    """Every (subnet, special range) overlap of the network, as readable phrases (join
    subnets are router addresses: always routed)."""
    own: list[tuple[str, IPNetwork, bool]] = [
        ("user defined subnet", s.cidr, is_routed(netinfo)) for s in netinfo.subnets]
    own += [("user defined join subnet", j, True) for j in netinfo.join_subnets]
    phrases = []
    for kind, subnet, routed in own:
        for special in SPECIAL_RANGES:
            if (special.routed_only and not routed) or _excluded(netinfo, special.subnet):
                continue
            if subnet.version == special.subnet.version and subnet.overlaps(special.subnet):
                phrases.append(f"{kind} {subnet} overlaps the {special.name} range "
                               f"{special.subnet} ({special.why})")
    return phrases


__all__ = ["SPECIAL_RANGES", "SpecialRange", "is_routed", "unusable_subnet_problems"]
