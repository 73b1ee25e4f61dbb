"""What Kubernetes' NetworkPolicy API says a new connection may do: the oracle of the probe
matrix, written from the API's documentation, independent of the plugin that renders it.

A connection from pod S to pod D on (protocol, port) is allowed when S's side lets it out
(no policy of S's namespace with type Egress selects S, or one of their egress rules admits
D and the port) and D's side lets it in (likewise with ingress rules and S).  Peers:
``podSelector`` alone picks pods of the policy's namespace, ``namespaceSelector`` alone every
pod of the namespaces it picks, both together the pods it picks in those namespaces,
``ipBlock`` addresses in ``cidr`` outside every ``except``.  Ports: a missing protocol is TCP,
a missing port every port, a named port the target pod's container port of that name and
protocol, ``endPort`` a range.  ``policyTypes`` missing: Ingress, plus Egress when the
policy has egress rules.  Only pods of one network are compared: a selector never picks a
pod of another network (the caller gives the pods of one network).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ModelPod:
    """A pod as the model needs it: where it is, its labels, address and named ports."""

    namespace: str
    name: str
    ip: str
    labels: Mapping[str, str]
    # (name, protocol) -> container port
    named_ports: Mapping[tuple[str, str], int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A LabelSelector's verdict on ``labels`` (an empty selector selects everything)."""
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        values = set(expression.get("values") or [])
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def policy_types(policy: Mapping[str, Any]) -> set[str]:
    spec = policy.get("spec") or {}
    if spec.get("policyTypes"):
        return set(spec["policyTypes"])
    return {"Ingress", "Egress"} if spec.get("egress") else {"Ingress"}


class Model:
    """The policies of one network and the labels of its namespaces."""

    def __init__(self, policies: Iterable[Mapping[str, Any]],
                 namespace_labels: Mapping[str, Mapping[str, str]]) -> None:
        self.policies = list(policies)
        self.namespace_labels = namespace_labels

    def _peer_matches(self, peer: Mapping[str, Any], policy_namespace: str,
                      other: ModelPod) -> bool:
        if "ipBlock" in peer:
            block = peer["ipBlock"]
            address = ipaddress.ip_address(other.ip)
            if address not in ipaddress.ip_network(block["cidr"], strict=False):
                return False
            return not any(address in ipaddress.ip_network(cidr, strict=False)
                           for cidr in block.get("except") or [])
        if "namespaceSelector" in peer:
            labels = self.namespace_labels.get(other.namespace, {})
            if not selects(peer["namespaceSelector"], labels):
                return False
        elif other.namespace != policy_namespace:
            return False
        return "podSelector" not in peer or selects(peer["podSelector"], other.labels)

    @staticmethod
    def _port_matches(entries: list[Mapping[str, Any]] | None, target: ModelPod,
                      protocol: str, port: int) -> bool:
        if not entries:
            return True
        for entry in entries:
            if str(entry.get("protocol", "TCP")).upper() != protocol.upper():
                continue
            wanted = entry.get("port")
            if wanted is None:
                return True
            if isinstance(wanted, str):
                if target.named_ports.get((wanted, protocol.upper())) == port:
                    return True
                continue
            if wanted <= port <= int(entry.get("endPort") or wanted):
                return True
        return False

    def _side_allows(self, direction: str, pod: ModelPod, other: ModelPod,
                     target: ModelPod, protocol: str, port: int) -> bool:
        kind = "Ingress" if direction == "ingress" else "Egress"
        peers_key = "from" if direction == "ingress" else "to"
        selecting = [p for p in self.policies
                     if p["metadata"]["namespace"] == pod.namespace
                     and kind in policy_types(p)
                     and selects((p.get("spec") or {}).get("podSelector"), pod.labels)]
        if not selecting:
            return True
        for policy in selecting:
            for rule in (policy.get("spec") or {}).get(direction) or []:
                peers = rule.get(peers_key)
                if peers and not any(self._peer_matches(peer, policy["metadata"]["namespace"],
                                                        other) for peer in peers):
                    continue
                if self._port_matches(rule.get("ports"), target, protocol, port):
                    return True
        return False

    def allows(self, source: ModelPod, target: ModelPod, protocol: str, port: int) -> bool:
        """Whether a new ``protocol`` connection from ``source`` to ``target:port`` passes."""
        return (self._side_allows("egress", source, target, target, protocol, port)
                and self._side_allows("ingress", target, source, target, protocol, port))
