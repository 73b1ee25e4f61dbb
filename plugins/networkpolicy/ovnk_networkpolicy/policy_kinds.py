"""Where a kind of policy object is rendered: NetworkPolicy on its namespace's primary
network, MultiNetworkPolicy on the secondary networks its ``policy-for`` names.

One engine (``controller.PolicyController``) renders both; what differs is said here:
the API resource, the owners' feature (so neither converges the other's rows), which
networks a policy object is placed on, which address of a pod is on a network, which
namespaces' pods a network can hold, and what a network cannot render (selector peers on
a network without IPAM).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ovnk_core.kube.client import JSON
from ovnk_core.kube.resources import Resource
from ovnk_networkpolicy.peers import PodFacts
from ovnk_networkpolicy.pod_facts import pod_facts
from ovnk_networkpolicy.policy_spec import Policy, PolicyError
from ovnk_networkpolicy.rows import NetworkScope

NETWORK_POLICIES = Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True)


@dataclass
class Placement:
    """The networks a policy object is rendered on now.

    :ivar scopes: the rendered networks it applies to.
    :ivar waiting: a network it applies to is not rendered yet (nothing is moved or
        deleted meanwhile: the reconcile waits).
    :ivar problems: what it names that is no network (said in a Warning; the rest renders).
    """

    scopes: list[NetworkScope] = field(default_factory=list)
    waiting: bool = False
    problems: list[str] = field(default_factory=list)


class PolicyKind(Protocol):
    feature: str
    resource: Resource
    network_rows: bool  # the per-network and per-node rows upstream keeps (clusterPortGroup...)
    pod_role: str  # the pod attachments whose ports join the groups

    def place(self, obj: JSON) -> Placement: ...

    def check(self, policy: Policy, scope: NetworkScope) -> None:
        """:raises PolicyError: the policy cannot be rendered on that network."""

    def pod_facts(self, pod: JSON, network: str) -> PodFacts: ...

    def namespace_on(self, namespace: str, network: str) -> bool: ...

    def scope(self, network: str) -> NetworkScope | None: ...

    def gone(self, network: str) -> bool: ...

    def networks(self) -> Iterable[NetworkScope]: ...


class NetworkPolicyKind:
    """NetworkPolicy: on its namespace's network (the default one or its primary UDN).

    :param network_of: a namespace's network (``None``: not rendered yet).
    :param networks: the networks rendered now (their always-present rows).
    :param scope_of: a network by name (``None``: not rendered now); default: looked up
        in ``networks``.
    :param gone: whether a network that is not rendered is gone for good (its rows are
        then deleted) rather than not rendered yet (its rows are kept: a restarting zone
        renders its networks after this controller starts)."""

    feature = "networkpolicy"
    resource = NETWORK_POLICIES
    network_rows = True
    pod_role = "primary"

    def __init__(self, network_of: Callable[[str], NetworkScope | None],
                 networks: Callable[[], Iterable[NetworkScope]],
                 scope_of: Callable[[str], NetworkScope | None] | None = None,
                 gone: Callable[[str], bool] = lambda _network: True) -> None:
        self.network_of = network_of
        self._networks = networks
        self._scope_of = scope_of or (
            lambda name: next((s for s in networks() if s.network == name), None))
        self._gone = gone

    def place(self, obj: JSON) -> Placement:
        scope = self.network_of(str((obj.get("metadata") or {}).get("namespace", "")))
        return Placement([scope]) if scope is not None else Placement(waiting=True)

    def check(self, policy: Policy, scope: NetworkScope) -> None:
        return None

    def pod_facts(self, pod: JSON, network: str) -> PodFacts:
        return pod_facts(pod)  # its primary network's: the one its namespace's policies use

    def namespace_on(self, namespace: str, network: str) -> bool:
        scope = self.network_of(namespace)
        return scope is not None and scope.network == network

    def scope(self, network: str) -> NetworkScope | None:
        return self._scope_of(network)

    def gone(self, network: str) -> bool:
        return self._gone(network)

    def networks(self) -> Iterable[NetworkScope]:
        return self._networks()


def checked_scopes(kind: PolicyKind, policy: Policy, placement: Placement
                   ) -> tuple[list[NetworkScope], PolicyError | None]:
    """The networks of ``placement`` the policy can be rendered on (``kind.check``), and
    why it cannot be on the first other one: there it has no rows, joins no group and
    makes no default deny, as upstream's failed add."""
    usable: list[NetworkScope] = []
    error: PolicyError | None = None
    for scope in placement.scopes:
        try:
            kind.check(policy, scope)
        except PolicyError as exc:
            error = error or exc
            continue
        usable.append(scope)
    return usable, error


def usable_scopes(kind: PolicyKind, policy: Policy, placement: Placement
                  ) -> list[NetworkScope]:
    return checked_scopes(kind, policy, placement)[0]


def ipamless_problem(policy: Policy) -> str:
    """Upstream's refusal of a selector peer on a network without IPAM ('' if none)."""
    for rule in policy.rules:
        if rule.selector_peers:
            direction = "ingress" if rule.direction == "Ingress" else "egress"
            return (f"invalid {direction} peer in multi-network policy {policy.name}; "
                    "IPAM-less networks can only have `ipBlock` peers")
    return ""


def check_ipam(policy: Policy, scope: NetworkScope) -> None:
    problem = "" if scope.has_ipam else ipamless_problem(policy)
    if problem:
        raise PolicyError(problem)


def annotation(obj: JSON, name: str) -> Any:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(name)
