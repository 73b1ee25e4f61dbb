"""The host side of UDN isolation as nftables objects: one chain, six sets, eight rules.

Upstream's table ``inet ovn-kubernetes`` (our feature claims that name), chain
``udn-isolation`` on the output hook, and its six sets, with the same names,
types, comments and rule order, so a node looks the same to anyone who knows
upstream's ruleset.  Per family: a pod's open ports, its ICMP opening, the
kubelet (by cgroup, when there is one) are accepted, anything else to a
primary-UDN pod's default-network IP is dropped.  Pure builders only; the
controller (``host_isolation``) writes them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

from ovnk_core.node.nft import NftChain, NftRule, NftSet, NftTable
from ovnk_isolation.kubelet_cgroup import KubeletCgroup

FAMILY = "inet"
CHAIN = "udn-isolation"
CHAIN_COMMENT = "Host isolation for user defined networks"

OPEN_PORTS_V4 = "udn-open-ports-v4"
OPEN_PORTS_V6 = "udn-open-ports-v6"
OPEN_ICMP_V4 = "udn-open-ports-icmp-v4"
OPEN_ICMP_V6 = "udn-open-ports-icmp-v6"
POD_IPS_V4 = "udn-pod-default-ips-v4"
POD_IPS_V6 = "udn-pod-default-ips-v6"


@dataclass(frozen=True)
class SetSpec:
    name: str
    type: str
    comment: str


SETS: tuple[SetSpec, ...] = (
    SetSpec(OPEN_PORTS_V4, "ipv4_addr . inet_proto . inet_service",
            "default network open ports of pods in user defined networks (IPv4)"),
    SetSpec(OPEN_PORTS_V6, "ipv6_addr . inet_proto . inet_service",
            "default network open ports of pods in user defined networks (IPv6)"),
    SetSpec(OPEN_ICMP_V4, "ipv4_addr",
            "default network IPs of pods in user defined networks that allow ICMP (IPv4)"),
    SetSpec(OPEN_ICMP_V6, "ipv6_addr",
            "default network IPs of pods in user defined networks that allow ICMP (IPv6)"),
    SetSpec(POD_IPS_V4, "ipv4_addr",
            "default network IPs of pods in user defined networks (IPv4)"),
    SetSpec(POD_IPS_V6, "ipv6_addr",
            "default network IPs of pods in user defined networks (IPv6)"),
)
SET_NAMES = tuple(spec.name for spec in SETS)

# per IP version: (address match, open ports set, icmp set, icmp protocol, pod IPs set)
_FAMILIES = {4: ("ip", OPEN_PORTS_V4, OPEN_ICMP_V4, "icmp", POD_IPS_V4),
             6: ("ip6", OPEN_PORTS_V6, OPEN_ICMP_V6, "icmpv6", POD_IPS_V6)}


def build_rules(kubelet: KubeletCgroup | None, ip_versions: Collection[int]) -> list[str]:
    """The chain's rules in upstream's order: every IPv4 rule, then every IPv6 rule; the
    kubelet's only when its cgroup is known."""
    rules = []
    for version in (4, 6):
        if version not in ip_versions:
            continue
        proto, open_ports, open_icmp, icmp, pod_ips = _FAMILIES[version]
        rules.append(f"{proto} daddr . meta l4proto . th dport @{open_ports} accept")
        rules.append(f"{proto} daddr @{open_icmp} meta l4proto {icmp} accept")
        if kubelet is not None:
            rules.append(f'socket cgroupv2 level {kubelet.level} "{kubelet.rule_path}" '
                         f"{proto} daddr @{pod_ips} accept")
        rules.append(f"{proto} daddr @{pod_ips} drop")
    return rules


def build_table(table: str, kubelet: KubeletCgroup | None, ip_versions: Collection[int],
                elements: Mapping[str, Collection[str]]) -> NftTable:
    """The whole table with the given set elements (set name → elements in nft syntax)."""
    return NftTable(
        FAMILY, table,
        chains=(NftChain(CHAIN, "filter", "output", "filter", comment=CHAIN_COMMENT),),
        sets=tuple(NftSet(spec.name, spec.type, comment=spec.comment,
                          elements=tuple(sorted(elements.get(spec.name, ()))))
                   for spec in SETS),
        rules=tuple(NftRule(CHAIN, rule) for rule in build_rules(kubelet, ip_versions)))


def build_listing(table: str, kubelet: KubeletCgroup | None,
                  ip_versions: Collection[int]) -> str:
    """What ``nft -t list table`` (no elements) prints for ``build_table``'s table: equal
    to the live listing when the table is already as wanted (including a kubelet rule
    still resolving to the same cgroup), so a restart can leave it alone."""
    sets = "\n".join(f'\tset {spec.name} {{\n\t\ttype {spec.type}\n'
                     f'\t\tcomment "{spec.comment}"\n\t}}\n' for spec in SETS)
    rules = "".join(f"\t\t{rule.replace('meta l4proto icmpv6', 'meta l4proto ipv6-icmp')}\n"
                    for rule in build_rules(kubelet, ip_versions))
    return (f"table {FAMILY} {table} {{\n{sets}\n\tchain {CHAIN} {{\n"
            f'\t\tcomment "{CHAIN_COMMENT}"\n'
            "\t\ttype filter hook output priority filter; policy accept;\n"
            f"{rules}\t}}\n}}\n")
