"""A NetworkPolicy object read into what the row builders need, or a clear error.

The API server checks and defaults a NetworkPolicy, but a controller must not trust that
(an object written before a check existed, another API server): everything the rows are
built from is checked here, and a policy that cannot be rendered raises ``PolicyError``
with a message naming the field, so the controller reports it on the policy and renders
every other policy.

``policyTypes`` follows Kubernetes: when the list is empty, ``Ingress`` is implied, and
``Egress`` too when the policy has egress rules (``SetDefaults_NetworkPolicy``).  A port
without protocol is TCP; a port is a number, a name (a container port's name, resolved on
pods) or absent (every port of the protocol); ``endPort`` makes a numeric port a range.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ovnk_core.kube.selectors import selector_problem

INGRESS, EGRESS = "Ingress", "Egress"
PROTOCOLS = {"TCP": "tcp", "UDP": "udp", "SCTP": "sctp"}
STATELESS_ANNOTATION = "k8s.ovn.org/acl-stateless"

Selector = Mapping[str, Any]


class PolicyError(ValueError):
    """The policy cannot be rendered; the message names the field and the problem."""


@dataclass(frozen=True)
class PolicyPort:
    """One entry of a rule's ``ports``: ``protocol`` in OVN's spelling (``tcp``...);
    ``port`` 0 means every port; ``name`` set for a named port (then ``port`` is 0)."""

    protocol: str
    port: int = 0
    end_port: int = 0
    name: str = ""


@dataclass(frozen=True)
class IPBlock:
    cidr: str
    excepts: tuple[str, ...] = ()

    @property
    def family(self) -> str:
        return "ip6" if ":" in self.cidr else "ip4"


@dataclass(frozen=True)
class Peer:
    """A rule's peer: an ``ip_block``, or selectors (a ``None`` selector is absent)."""

    pod_selector: Selector | None = None
    namespace_selector: Selector | None = None
    ip_block: IPBlock | None = None


@dataclass(frozen=True)
class Rule:
    """One ingress (``from``) or egress (``to``) rule, with its index in the spec."""

    direction: str
    index: int
    ports: tuple[PolicyPort, ...]
    peers: tuple[Peer, ...]

    @property
    def selector_peers(self) -> tuple[Peer, ...]:
        return tuple(p for p in self.peers if p.ip_block is None
                     and (p.pod_selector is not None or p.namespace_selector is not None))

    @property
    def ip_blocks(self) -> tuple[IPBlock, ...]:
        return tuple(p.ip_block for p in self.peers if p.ip_block is not None)

    @property
    def allows_all_peers(self) -> bool:
        """No selector and no ipBlock peer: every source (ingress) or destination (egress).
        (A peer with neither field is refused by the API server; upstream, and so ovnk,
        read a rule of only such peers as one without peers.)"""
        return not self.selector_peers and not self.ip_blocks

    @property
    def named_ports(self) -> tuple[PolicyPort, ...]:
        return tuple(p for p in self.ports if p.name)


@dataclass(frozen=True)
class Policy:
    namespace: str
    name: str
    pod_selector: Selector
    ingress: tuple[Rule, ...]
    egress: tuple[Rule, ...]
    is_ingress: bool
    is_egress: bool

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self.ingress + self.egress


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PolicyError(f"{where}: must be an object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PolicyError(f"{where}: must be a list")
    return value


def _selector(value: Any, where: str) -> Selector | None:
    if value is None:
        return None
    selector = _mapping(value, where)
    problem = selector_problem(selector)
    if problem:
        raise PolicyError(f"{where}: {problem}")
    return selector


def _cidr(text: Any, where: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    try:
        return ipaddress.ip_network(str(text), strict=False)
    except ValueError:
        raise PolicyError(f"{where}: Invalid value: {str(text)!r}: must be a valid CIDR "
                          "value, (e.g. 10.9.8.0/24 or 2001:db8::/64)") from None


def _ip_block(raw: Any, where: str) -> IPBlock:
    block = _mapping(raw, where)
    network = _cidr(block.get("cidr"), f"{where}.cidr")
    excepts = []
    for index, text in enumerate(_list(block.get("except"), f"{where}.except")):
        inner = _cidr(text, f"{where}.except[{index}]")
        if inner.version != network.version or not inner.subnet_of(network):  # type: ignore[arg-type]
            raise PolicyError(f"{where}.except[{index}]: Invalid value: {str(text)!r}: must "
                              f"be a strict subset of `cidr`")
        excepts.append(str(text))
    return IPBlock(str(block["cidr"]), tuple(excepts))


def _port_number(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise PolicyError(f"{where}: Invalid value: {value!r}: must be between 1 and 65535, "
                          "inclusive")
    return value


def _port(raw: Any, where: str) -> PolicyPort:
    entry = _mapping(raw, where)
    protocol_text = entry.get("protocol") or "TCP"
    protocol = PROTOCOLS.get(str(protocol_text))
    if protocol is None:
        raise PolicyError(f"{where}.protocol: Unsupported value: {str(protocol_text)!r}: "
                          'supported values: "SCTP", "TCP", "UDP"')
    value = entry.get("port")
    end = entry.get("endPort")
    if value is None:
        if end is not None:
            raise PolicyError(f"{where}.endPort: Invalid value: {end!r}: may not be specified "
                              "when port is not specified")
        return PolicyPort(protocol)
    if isinstance(value, str) and not value.isdigit():
        if end is not None:
            raise PolicyError(f"{where}.endPort: Invalid value: {end!r}: may not be specified "
                              "when port is non-numeric")
        if not value:
            raise PolicyError(f"{where}.port: Invalid value: '': must be a port name")
        return PolicyPort(protocol, name=value)
    number = _port_number(int(value) if isinstance(value, str) else value, f"{where}.port")
    if end is None:
        return PolicyPort(protocol, number)
    end_number = _port_number(end, f"{where}.endPort")
    if end_number < number:
        raise PolicyError(f"{where}.endPort: Invalid value: {end!r}: must be greater than or "
                          "equal to `port`")
    return PolicyPort(protocol, number, end_number)


def _peer(raw: Any, where: str) -> Peer:
    entry = _mapping(raw, where)
    if entry.get("ipBlock") is not None:
        if entry.get("podSelector") is not None or entry.get("namespaceSelector") is not None:
            raise PolicyError(f"{where}: Forbidden: may not specify more than 1 peer type")
        return Peer(ip_block=_ip_block(entry["ipBlock"], f"{where}.ipBlock"))
    return Peer(_selector(entry.get("podSelector"), f"{where}.podSelector"),
                _selector(entry.get("namespaceSelector"), f"{where}.namespaceSelector"))


def _rules(spec: Mapping[str, Any], direction: str) -> tuple[Rule, ...]:
    field, peers_field = ("ingress", "from") if direction == INGRESS else ("egress", "to")
    rules = []
    for index, raw in enumerate(_list(spec.get(field), f"spec.{field}")):
        where = f"spec.{field}[{index}]"
        entry = _mapping(raw, where)
        ports = tuple(_port(p, f"{where}.ports[{i}]")
                      for i, p in enumerate(_list(entry.get("ports"), f"{where}.ports")))
        peers = tuple(_peer(p, f"{where}.{peers_field}[{i}]")
                      for i, p in enumerate(_list(entry.get(peers_field),
                                                  f"{where}.{peers_field}")))
        rules.append(Rule(direction, index, ports, peers))
    return tuple(rules)


def policy_types(spec: Mapping[str, Any]) -> tuple[bool, bool]:
    """``(is_ingress, is_egress)``: explicit ``policyTypes``, or Kubernetes' default."""
    types = _list(spec.get("policyTypes"), "spec.policyTypes")
    for index, value in enumerate(types):
        if value not in (INGRESS, EGRESS):
            raise PolicyError(f"spec.policyTypes[{index}]: Unsupported value: {value!r}: "
                              'supported values: "Egress", "Ingress"')
    if not types:
        return True, bool(spec.get("egress"))
    return INGRESS in types, EGRESS in types


def parse_policy(obj: Mapping[str, Any]) -> Policy:
    """The policy as the builders read it.

    :raises PolicyError: a field cannot be rendered (the message names it).
    """
    meta = _mapping(obj.get("metadata"), "metadata")
    spec = _mapping(obj.get("spec"), "spec")
    pod_selector = _selector(spec.get("podSelector"), "spec.podSelector") or {}
    is_ingress, is_egress = policy_types(spec)
    return Policy(str(meta.get("namespace", "")), str(meta.get("name", "")), pod_selector,
                  _rules(spec, INGRESS), _rules(spec, EGRESS), is_ingress, is_egress)
