"""Peer address sets: which selector a peer becomes, its upstream key, and its members.

Upstream shares one address set per IP family among every policy of a network whose peer
has the same selectors (``addresssetmanager``, owner type ``PodSelector``).  The set's name
(``k8s.ovn.org/name``) is the selector key ``<namespace or namespaceSelector>_<podSelector>``
with selectors printed as upstream prints them (``LS{ML:{app: web,},}``, sorted), and a
``_LNM`` suffix for a peer with only a ``namespaceSelector`` ("legacy netpol mode", where
upstream once used per-namespace address sets).  Same key, same rows: a selector in use by
two policies is written once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ovnk_core.kube.selectors import selector_matches
from ovnk_networkpolicy.matches import NamedTarget
from ovnk_networkpolicy.policy_spec import Peer, PolicyPort, Selector

LEGACY_SUFFIX = "_LNM"


def _requirement_text(requirement: Mapping[str, Any]) -> str:
    values = sorted(str(v) for v in requirement.get("values") or [])
    return (f"LSR{{Key:{requirement.get('key')},Operator:{requirement.get('operator')},"
            f"Values:[{' '.join(values)}],}}")


def selector_text(selector: Selector | None) -> str:
    """Upstream's ``shortLabelSelectorString``: equal for equivalent selectors."""
    if selector is None:
        return "nil"
    text = "LS{"
    labels = selector.get("matchLabels") or {}
    if labels:
        text += "ML:{" + "".join(f"{k}: {labels[k]}," for k in sorted(labels)) + "},"
    expressions = selector.get("matchExpressions") or []
    if expressions:
        text += "ME:{" + ",".join(sorted(_requirement_text(e) for e in expressions)) + "},"
    return text + "}"


@dataclass(frozen=True)
class PeerSelector:
    """The pods one address set holds: ``pod_selector`` in the static ``namespace`` or in
    the namespaces ``namespace_selector`` selects."""

    pod_selector: Selector
    namespace: str | None = None
    namespace_selector: Selector | None = None
    legacy: bool = False

    @property
    def key(self) -> str:
        scope = self.namespace if self.namespace_selector is None else \
            selector_text(self.namespace_selector)
        key = f"{scope}_{selector_text(self.pod_selector)}"
        return key + LEGACY_SUFFIX if self.legacy else key

    def selects_namespace(self, name: str, labels: Mapping[str, str]) -> bool:
        if self.namespace_selector is None:
            return name == self.namespace
        return selector_matches(self.namespace_selector, labels)

    def selects_pod(self, labels: Mapping[str, str]) -> bool:
        return selector_matches(self.pod_selector, labels)


def peer_selector(peer: Peer, policy_namespace: str) -> PeerSelector | None:
    """The address set a selector peer uses (``None`` for an ipBlock or an empty peer)."""
    if peer.ip_block is not None or (peer.pod_selector is None
                                     and peer.namespace_selector is None):
        return None
    if peer.namespace_selector is not None:
        return PeerSelector(peer.pod_selector if peer.pod_selector is not None else {},
                            None, peer.namespace_selector, legacy=peer.pod_selector is None)
    return PeerSelector(peer.pod_selector or {}, policy_namespace)


@dataclass(frozen=True)
class PodFacts:
    """What the builders read of a pod on one network.

    :ivar ips: its addresses on the network (plain IPs; none: not wired yet, or no IPAM).
    :ivar port: its logical switch port on the network (empty: none in this zone).
    :ivar named_ports: ``(name, protocol, number)`` of its containers' named ports,
        protocol in OVN's spelling.
    """

    namespace: str
    name: str
    labels: Mapping[str, str]
    ips: tuple[str, ...] = ()
    port: str = ""
    named_ports: tuple[tuple[str, str, int], ...] = ()


@dataclass(frozen=True)
class NamespaceFacts:
    name: str
    labels: Mapping[str, str]


def members(selector: PeerSelector, namespaces: Iterable[NamespaceFacts],
            pods_of: Any) -> list[PodFacts]:
    """The pods ``selector`` selects: those of ``pods_of(namespace)`` (an index lookup) in
    each selected namespace of ``namespaces``, matching the pod selector."""
    found = []
    for namespace in namespaces:
        if not selector.selects_namespace(namespace.name, namespace.labels):
            continue
        found += [pod for pod in pods_of(namespace.name) if selector.selects_pod(pod.labels)]
    return found


def resolve_named_ports(rule_ports: Iterable[PolicyPort], pods: Iterable[PodFacts]
                        ) -> list[NamedTarget]:
    """The rule's named ports resolved on ``pods`` (``NamedTarget`` per pod address with a
    container port of that name and protocol).  Ingress resolves on the pods the policy
    selects, egress on the rule's peers (every pod of the network for a rule without
    peers): Kubernetes resolves a named port on the destination pod."""
    wanted = {(port.name, port.protocol) for port in rule_ports if port.name}
    targets = []
    for pod in pods:
        for name, protocol, number in pod.named_ports:
            if (name, protocol) in wanted:
                targets += [NamedTarget(ip, protocol, number) for ip in pod.ips]
    return targets
