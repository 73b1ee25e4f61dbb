"""ACL match strings, spelled exactly as upstream spells them.

``<l3> && <l4> && <lport>``: the peers (address sets, ipBlocks, every IP), the ports
(``tcp && tcp.dst==80``, ``tcp && tcp.dst=={80,443}``, ``tcp && (tcp.dst==80 ||
1000<=tcp.dst<=2000)``; absent when the rule has no ports) and the policy's port group
(``outport == @pg`` for ingress, ``inport == @pg`` for egress).

One deliberate difference: a port entry without a number allows every port of its
protocol, as Kubernetes defines it, even when the rule lists numbered ports of the same
protocol too (upstream then keeps only the numbered ones).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ovnk_networkpolicy.policy_spec import INGRESS, IPBlock, PolicyPort


def lport_match(direction: str, port_group: str) -> str:
    return f"{'outport' if direction == INGRESS else 'inport'} == @{port_group}"


def ip_direction(direction: str) -> str:
    """The peer is the source of ingress traffic and the destination of egress traffic."""
    return "src" if direction == INGRESS else "dst"


def all_ips_match(families: Sequence[int]) -> str:
    if 4 in families and 6 in families:
        return "(ip4 || ip6)"
    return "ip6" if 6 in families else "ip4"


def address_set_match(direction: str, v4_sets: Iterable[str], v6_sets: Iterable[str]) -> str:
    """``ip4.src == {$a1, $a2}`` (and ``ip6``, both in parentheses on a dual-stack network);
    empty when there is no set."""
    where = ip_direction(direction)
    parts = [f"{family}.{where} == {{{', '.join(sorted('$' + n for n in names))}}}"
             for family, names in (("ip4", list(v4_sets)), ("ip6", list(v6_sets))) if names]
    if len(parts) == 2:
        return f"({parts[0]} || {parts[1]})"
    return parts[0] if parts else ""


def ip_block_match(direction: str, blocks: Sequence[IPBlock]) -> str:
    where = ip_direction(direction)
    parts = []
    for block in blocks:
        family = block.family
        if block.excepts:
            parts.append(f"({family}.{where} == {block.cidr} && {family}.{where} != "
                         f"{{{', '.join(block.excepts)}}})")
        else:
            parts.append(f"{family}.{where} == {block.cidr}")
    return parts[0] if len(parts) == 1 else f"({' || '.join(parts)})"


def numeric_l4_matches(ports: Sequence[PolicyPort]) -> dict[str, str]:
    """Protocol → L4 match of the rule's numbered (and number-less) ports; named ports are
    left out (``named_l4_matches``)."""
    singles: dict[str, list[str]] = {}
    ranges: dict[str, list[str]] = {}
    whole: set[str] = set()
    for port in ports:
        if port.name:
            continue
        singles.setdefault(port.protocol, [])
        ranges.setdefault(port.protocol, [])
        if port.end_port and port.end_port != port.port:
            ranges[port.protocol].append(f"{port.port}<={port.protocol}.dst<={port.end_port}")
        elif port.port:
            singles[port.protocol].append(str(port.port))
        else:
            whole.add(port.protocol)
    matches = {}
    for protocol, numbers in singles.items():
        parts = []
        if numbers:
            parts.append(f"{protocol}.dst=={numbers[0]}" if len(numbers) == 1
                         else f"{protocol}.dst=={{{','.join(numbers)}}}")
        parts += ranges[protocol]
        if protocol in whole or not parts:
            matches[protocol] = protocol
        elif len(parts) == 1:
            matches[protocol] = f"{protocol} && {parts[0]}"
        else:
            matches[protocol] = f"{protocol} && ({' || '.join(parts)})"
    return matches


@dataclass(frozen=True, order=True)
class NamedTarget:
    """A named port resolved on one pod: traffic to ``ip`` on ``protocol``/``port``."""

    ip: str
    protocol: str
    port: int


def named_l4_matches(targets: Iterable[NamedTarget]) -> dict[str, str]:
    """Protocol → ``tcp && ((ip4.dst == IP && tcp.dst == N) || ...)`` (upstream's
    named-port match of AdminNetworkPolicy), in a stable order."""
    by_protocol: dict[str, list[str]] = {}
    for target in sorted(set(targets)):
        family = "ip6" if ipaddress.ip_address(target.ip).version == 6 else "ip4"
        by_protocol.setdefault(target.protocol, []).append(
            f"({family}.dst == {target.ip} && {target.protocol}.dst == {target.port})")
    return {protocol: f"{protocol} && ({' || '.join(parts)})"
            for protocol, parts in by_protocol.items()}


def join(*parts: str) -> str:
    return " && ".join(part for part in parts if part)
