"""The zone's NetworkPolicy controller: one engine for every network.

Level-driven: informer events only enqueue keys, and each key's reconcile reads the
caches, builds the rows (``rows``) and converges its owners (``ids``) in one transaction
(``ovnk_core.ovn.declarative.apply_many``: nothing is written when nothing changed):

``policy:<ns>/<name>``       the policy's group and ACLs, with the peer address sets they
                             name (written in the same transaction, so an ACL never names
                             a set NB lacks); gone or moved to another network: deleted
``namespace:<ns>``           the default-deny groups, while the namespace has a policy
``addrset:<net>:<selector>`` a peer set's addresses; deleted once no policy uses it
``network:<name>``           the rows upstream keeps on every network
``nodes:<network>``          the ``NetpolNode`` ACLs on the network's node switches

Events enqueue by index (``selector_registry``): a pod event only the sets and named-port
policies whose selectors select the pod, a namespace event only those whose namespace
selector's verdict on it changed (and its own policies when its ACL logging changed).

A policy that cannot be rendered (``PolicyError``) gets a Warning event
(``ErrorAddingResource``, as upstream's retry framework names a failed add) and has no
rows; every other policy is unaffected.  Which kind of object it renders, on which
networks, the ``PolicyKind`` says (``policy_kinds``): NetworkPolicy on its namespace's
network (the default one or its primary UDN), MultiNetworkPolicy on the secondary
networks its ``policy-for`` names.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION
from ovnk_core.contexts import ZoneContext
from ovnk_core.errors import NotReady, PermanentError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING
from ovnk_core.kube.informer import index_by_namespace
from ovnk_core.kube.resources import NAMESPACES, NODES, PODS
from ovnk_core.ovn.declarative import (
    DesiredRow,
    MissingReference,
    apply,
    apply_many,
    delete_owner,
)
from ovnk_core.ovn.ownership import Owner
from ovnk_core.zone.owners import network_of_controller
from ovnk_networkpolicy import ids
from ovnk_networkpolicy.acl_logging import ANNOTATION as ACL_LOGGING
from ovnk_networkpolicy.acl_logging import INVALID_REASON as INVALID_ACL_LOGGING
from ovnk_networkpolicy.acl_logging import AclLogging, parse_acl_logging
from ovnk_networkpolicy.matches import NamedTarget
from ovnk_networkpolicy.peers import (
    NamespaceFacts,
    PeerSelector,
    PodFacts,
    members,
    resolve_named_ports,
)
from ovnk_networkpolicy.pod_facts import named_ports
from ovnk_networkpolicy.policy_kinds import (
    NETWORK_POLICIES,
    Placement,
    PolicyKind,
    checked_scopes,
    usable_scopes,
)
from ovnk_networkpolicy.policy_spec import Policy, PolicyError, parse_policy
from ovnk_networkpolicy.rows import (
    NetworkScope,
    build_address_set_rows,
    build_namespace_rows,
    build_network_rows,
    build_node_rows,
    build_policy_rows,
    named_port_selectors,
    policy_named_port_selectors,
    policy_peer_selectors,
)
from ovnk_networkpolicy.selector_registry import (
    SelectorRegistry,
    SetKey,
    addrset_key,
    policy_queue_key,
)

log = logging.getLogger(__name__)

__all__ = ["NETWORK_POLICIES", "PolicyController"]
ERROR_REASON = "ErrorAddingResource"
NAMESPACE_INDEX = "namespace"

def _labels(obj: JSON | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


def _annotations(obj: JSON | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("annotations") or {})


def _annotation(obj: JSON | None, name: str) -> str | None:
    value = _annotations(obj).get(name)
    return value if isinstance(value, str) else None


class PolicyController:
    """Converges every network's rows of one kind of policy object; ``controller`` is
    what the zone runs."""

    def __init__(self, context: ZoneContext, kind: PolicyKind,
                 hairpin_ips: Sequence[str] = ()) -> None:
        """:param kind: which objects, on which networks (``policy_kinds``).
        :param hairpin_ips: OVN's service hairpin sources (the per-network rows)."""
        self.context = context
        self.kind = kind
        self.feature = kind.feature
        self.scope_of = kind.scope
        self.gone = kind.gone
        self.networks = kind.networks
        self.hairpin_ips = list(hairpin_ips)
        self.policies = context.informers.get(kind.resource,
                                              indexers={NAMESPACE_INDEX: index_by_namespace})
        self.pods = context.informers.get(PODS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self.namespaces = context.informers.get(NAMESPACES)
        self.registry = SelectorRegistry(lambda: [
            (str(ns["metadata"]["name"]), _labels(ns)) for ns in self.namespaces.peek_all()])
        self._lock = threading.Lock()
        # owner scope (``policy:<ns>/<name>``, ``namespace:<ns>``) -> networks it has rows on
        self._rendered: dict[str, set[str]] = {}
        # what decides a policy's members as last rendered: (networks, podSelector, types)
        self._signatures: dict[str, tuple[tuple[str, ...], str, bool, bool]] = {}
        self.controller = Controller(f"{self.feature}-zone-controller", self.reconcile,
                                     initial_sync=self.initial_sync, on_error=self.report)
        self.controller.watch(self.policies, key_func=lambda p: [f"policy:{policy_key(p)}"])
        self.controller.watch(self.namespaces, key_func=lambda ns: [
            f"namespace:{ns['metadata']['name']}"], relevant=namespace_relevant)
        self.namespaces.add_handler(self.namespace_changed)
        self.controller.watch(self.pods, key_func=self.pod_keys, relevant=pod_relevant)
        if kind.network_rows:
            self.nodes = context.informers.get(NODES)
            self.controller.watch(self.nodes, key_func=lambda _node: [
                f"nodes:{scope.network}" for scope in self.networks()])
        self._node_switches: dict[str, set[str]] = {}  # network -> switches with node ACLs

    # -- keys --------------------------------------------------------------------------
    def namespace_changed(self, _event: str, old: JSON | None, new: JSON | None) -> None:
        """The sets and named-port policies whose selectors' verdict on this namespace
        changed (``SelectorRegistry.namespace_changed``), and the namespace's own policies
        when their ACL logging changed."""
        obj = new if new is not None else old
        if obj is None:
            return
        name = str(obj["metadata"]["name"])
        if old is not None and new is not None and _labels(old) == _labels(new):
            keys: set[str] = set()
        else:
            keys = self.registry.namespace_changed(name, None if new is None else _labels(new))
        if old is None or new is None or \
                _annotation(old, ACL_LOGGING) != _annotation(new, ACL_LOGGING):
            keys.update(policy_queue_key(key)
                        for key in self.policies.keys_by_index(NAMESPACE_INDEX, name))
        for key in keys:
            self.controller.queue.add(key)

    def pod_keys(self, pod: JSON) -> list[str]:
        """The sets and named-port policies whose selectors select the pod (called with
        the pod before and after a change): by index, never every policy."""
        meta = pod["metadata"]
        return sorted(self.registry.pod_keys(str(meta.get("namespace", "")),
                                             dict(meta.get("labels") or {})))

    def network_changed(self, network: str) -> None:
        """A network appeared, changed or went: its own rows, and every policy and
        namespace with a policy, whose network may now be another (a namespace's primary
        UDN rendered after its policies were).  Network changes are rare: this lists."""
        self._render_again([network])

    def nb_changed(self) -> None:
        """The NB under the zone supports other things than before (OVN upgraded or
        downgraded: ACL tiers come or go): every network's rows and every policy again."""
        self._render_again([scope.network for scope in self.networks()])

    def _render_again(self, networks: list[str]) -> None:
        queue = self.controller.queue
        for network in networks if self.kind.network_rows else ():
            queue.add(f"network:{network}")
            queue.add(f"nodes:{network}")
        for key in self.policies.list_keys():
            queue.add(f"policy:{key}")
        for namespace in self.policies.index_values(NAMESPACE_INDEX):
            queue.add(f"namespace:{namespace}")

    # -- startup -----------------------------------------------------------------------
    def initial_sync(self) -> None:
        """Learn every policy's peer sets before any worker runs (so no set in use is
        taken for unused), and queue the owners NB holds for objects that are gone."""
        for policy in self.policies.peek_all():
            self._learn(policy_key(policy), policy)
        for owner in self.context.feature_owners(self.feature):
            network = network_of_controller(owner.controller)
            scope = owner.key.split(":", 2)[2]
            kind, _, rest = scope.partition(":")
            if kind in ("policy", "namespace") and network is not None:
                with self._lock:
                    self._rendered.setdefault(scope, set()).add(network)
                self.controller.queue.add(scope)
            elif kind == "addrset" and network is not None:
                self.controller.queue.add(addrset_key((network, rest)))
            elif kind == ids.NETWORK_SCOPE and network is not None:
                self.controller.queue.add(f"network:{network}")  # deleted if gone
            elif kind == "node" and network is not None:
                with self._lock:
                    self._node_switches.setdefault(network, set()).add(rest)
                self.controller.queue.add(f"nodes:{network}")
        for scope_ in self.networks() if self.kind.network_rows else ():
            self.controller.queue.add(f"network:{scope_.network}")
            self.controller.queue.add(f"nodes:{scope_.network}")
        for key in self.policies.list_keys():
            self.controller.queue.add(f"policy:{key}")

    def _learn(self, key: str, obj: JSON | None
               ) -> tuple[Policy | None, Placement, set[SetKey], PolicyError | None]:
        """Parse the policy, place it and record its peer sets on the networks it renders
        on (none when it is gone or invalid); returns it, its placement (only the networks
        it can be rendered on), the sets it used before or uses now, and why it cannot be
        rendered (on some network)."""
        policy: Policy | None = None
        placement = Placement()
        error: PolicyError | None = None
        if obj is not None:
            try:
                policy = parse_policy(obj)
            except PolicyError as exc:
                error = exc
            placement = self.kind.place(obj)
        if policy is not None:
            placement.scopes, refused = checked_scopes(self.kind, policy, placement)
            error = error or refused
        else:
            placement.scopes = []
        sets = [(scope.network, selector) for scope in placement.scopes
                for selector in policy_peer_selectors(policy)] if policy is not None else []
        watched = [(scope.network, selector) for scope in placement.scopes
                   for selector in policy_named_port_selectors(policy)] \
            if policy is not None else []
        return policy, placement, self.registry.set_policy(key, sets, watched), error

    # -- reconcile ---------------------------------------------------------------------
    def reconcile(self, key: str) -> None:
        kind, _, rest = key.partition(":")
        if kind == "policy":
            self.reconcile_policy(rest)
        elif kind == "namespace":
            self.reconcile_namespace(rest)
        elif kind == "addrset":
            network, _, selector_key = rest.partition(":")
            self.reconcile_address_set((network, selector_key))
        elif kind == "network":
            self.reconcile_network(rest)
        elif kind == "nodes":
            self.reconcile_nodes(rest)
        else:
            log.warning("networkpolicy: ignoring key %r of no known kind", key)

    def reconcile_network(self, network: str) -> None:
        scope = self.scope_of(network)
        if scope is not None:
            self._ensure_network_rows(scope)
        elif self.gone(network):
            self.forget_network(network)
        else:
            raise NotReady(f"network {network} is not rendered yet", backoff=True)

    def _ensure_network_rows(self, scope: NetworkScope) -> None:
        """The network's rows; when they are new, every pod port on the network is linked
        again (each joins ``clusterPortGroup``, membership.py): once per network, so that
        a restart finds every link made."""
        cluster = ids.cluster_pg_ids(scope.network, ids.CLUSTER_PORT_GROUP, self.feature)
        existed = self.context.row_exists("Port_Group", cluster.primary_id)
        apply(self.context.nb, ids.network_owner(scope.network, self.feature),
              build_network_rows(scope, self.hairpin_ips))
        if not existed:  # (the zone's writer knows its own commits: the group is seen now)
            self.context.reconcile_pods([
                key for namespace in self.namespaces.list_keys()
                if self.kind.namespace_on(namespace, scope.network)
                for key in self.pods.keys_by_index(NAMESPACE_INDEX, namespace)])

    def forget_network(self, network: str) -> None:
        """Every row of this feature on a network that is gone, in one transaction (the
        groups' ACLs before the address sets they name: OVSDB applies it as one)."""
        controller = ids.owner(network, ids.NETWORK_SCOPE, self.feature).controller
        owners = {owner for owner in self.context.feature_owners(self.feature)
                  if owner.controller == controller}
        if owners:
            apply_many(self.context.nb, {owner: [] for owner in owners})
            log.info("networkpolicy: network %s is gone: removed %d owner(s)", network,
                     len(owners))
        with self._lock:
            for networks in self._rendered.values():
                networks.discard(network)
            self._node_switches.pop(network, None)

    def _converge(self, scope_name: str, rows: dict[str, list[DesiredRow]],
                  extra: dict[Owner, list[DesiredRow]] | None = None) -> None:
        """One transaction: ``rows`` (network → rows) under ``scope_name``'s owner on each
        network, the same scope emptied on every other network it was written on, and
        ``extra`` owners."""
        with self._lock:
            before = set(self._rendered.get(scope_name, ()))
        desired: dict[Owner, list[DesiredRow]] = {
            ids.owner(other, scope_name, self.feature): [] for other in before - set(rows)}
        for network, network_rows in rows.items():
            desired[ids.owner(network, scope_name, self.feature)] = network_rows
        desired.update(extra or {})
        apply_many(self.context.nb, desired)
        with self._lock:
            now = {network for network, network_rows in rows.items() if network_rows}
            if now:
                self._rendered[scope_name] = now
            else:
                self._rendered.pop(scope_name, None)

    def reconcile_nodes(self, network: str) -> None:
        """``NetpolNode``: each node's management addresses may reach the pods on its
        switch (the kubelet's probes), whatever the policies; gone with the node."""
        scope = self.scope_of(network)
        if scope is None:
            if self.gone(network):
                return  # forget_network removes its rows
            raise NotReady(f"network {network} is not rendered yet", backoff=True)
        switches = self.context.node_switches(network)
        desired: dict[Owner, list[DesiredRow]] = {}
        for switch in switches:
            desired[ids.node_owner(network, switch.name, self.feature)] = build_node_rows(
                scope, switch.name, switch.ref, switch.management_ips)
        with self._lock:
            before = set(self._node_switches.get(network, ()))
        for name in before - {switch.name for switch in switches}:
            desired[ids.node_owner(network, name, self.feature)] = []
        try:
            apply_many(self.context.nb, desired)
        except MissingReference as exc:
            raise NotReady(f"network {network}: a node switch is not written yet: {exc}",
                           backoff=True) from exc
        with self._lock:
            self._node_switches[network] = {switch.name for switch in switches}

    def reconcile_policy(self, key: str) -> None:
        """The policy's rows on its networks; none when it is gone or cannot be rendered
        (then a Warning says why, as upstream, whose failed add leaves none)."""
        namespace = key.split("/", 1)[0]
        obj = self.policies.peek(key)
        policy, placement, touched, error = self._learn(key, obj)
        if obj is not None and placement.waiting:
            raise NotReady(f"a network of {key} is not rendered yet")
        if obj is not None and placement.problems and self.context.recorder is not None:
            self.context.recorder.event(obj, WARNING, ERROR_REASON,
                                        f"{key}: {'; '.join(placement.problems)}")
        rows: dict[str, list[DesiredRow]] = {}
        sets: dict[Owner, list[DesiredRow]] = {}
        for scope in placement.scopes if policy is not None else ():
            assert policy is not None
            rows[scope.network] = build_policy_rows(scope, policy, self._logging(namespace),
                                                    self._named_targets(scope, policy))
            for selector in policy_peer_selectors(policy):
                sets[ids.address_set_owner(scope.network, selector.key, self.feature)] = \
                    self._address_set_rows(scope, selector)
            if not self.kind.network_rows:
                # a secondary network's clusterPortGroup, once it has a policy: the ports
                # that join it make their switches stateful (membership.py); gone with the
                # network (forget_network)
                self._ensure_network_rows(scope)
        self._converge(f"policy:{key}", rows, sets)
        signature = None if policy is None or not rows else (
            tuple(sorted(rows)), repr(policy.pod_selector), policy.is_ingress,
            policy.is_egress)
        with self._lock:
            changed = self._signatures.get(key, "unknown") != signature
            if signature is None:
                self._signatures.pop(key, None)
            else:
                self._signatures[key] = signature
        if changed:  # which pods join the policy's group changed: the zone re-links them
            self._reconcile_pods_of(namespace)
        self.controller.queue.add(f"namespace:{namespace}")
        for set_key in touched:
            self.controller.queue.add(addrset_key(set_key))
        if error is not None:
            raise PermanentError(f"failed to create network policy {key}: {error}")

    def _logging(self, namespace: str) -> AclLogging:
        return parse_acl_logging(_annotations(self.namespaces.peek(namespace)))

    def reconcile_namespace(self, namespace: str) -> None:
        """The default-deny groups exist while the namespace has a renderable policy; a
        malformed ``k8s.ovn.org/acl-logging`` gets a Warning on the namespace (what can be
        read of it stays in force, as upstream)."""
        logging = self._logging(namespace)
        obj = self.namespaces.peek(namespace)
        if logging.problems and obj is not None and self.context.recorder is not None:
            self.context.recorder.event(obj, WARNING, INVALID_ACL_LOGGING,
                                        logging.warning(namespace))
        scopes: dict[str, NetworkScope] = {}
        for policy_obj in self.policies.peek_by_index(NAMESPACE_INDEX, namespace):
            try:
                policy = parse_policy(policy_obj)
            except PolicyError:
                continue
            placement = self.kind.place(policy_obj)
            if placement.waiting:
                raise NotReady(f"a network of namespace {namespace}'s policies is not "
                               "rendered yet")
            scopes.update((scope.network, scope)
                          for scope in usable_scopes(self.kind, policy, placement))
        rows = {network: build_namespace_rows(scope, namespace, logging)
                for network, scope in scopes.items()}
        with self._lock:
            before = self._rendered.get(f"namespace:{namespace}")
        self._converge(f"namespace:{namespace}", rows)
        with self._lock:
            after = self._rendered.get(f"namespace:{namespace}")
        if before != after:
            self._reconcile_pods_of(namespace)

    def _reconcile_pods_of(self, namespace: str) -> None:
        self.context.reconcile_pods(self.pods.keys_by_index(NAMESPACE_INDEX, namespace))

    def reconcile_address_set(self, set_key: SetKey) -> None:
        network, selector_key = set_key
        selector = self.registry.set_selector(set_key)
        owner = ids.address_set_owner(network, selector_key, self.feature)
        scope = self.scope_of(network)
        if selector is None or (scope is None and self.gone(network)):
            delete_owner(self.context.nb, owner)
            return
        if scope is None:
            raise NotReady(f"network {network} is not rendered yet", backoff=True)
        apply(self.context.nb, owner, self._address_set_rows(scope, selector))

    # -- reading the caches ------------------------------------------------------------
    def _namespaces_of(self, scope: NetworkScope, selector: PeerSelector
                       ) -> list[NamespaceFacts]:
        """The namespaces of ``scope``'s network the selector selects: its own, or those
        the registry's index says its namespace selector selects."""
        names = {str(selector.namespace)} if selector.namespace_selector is None else \
            self.registry.namespaces_of((scope.network, selector.key))
        found = []
        for name in sorted(names):
            obj = self.namespaces.peek(name)
            if obj is not None and self.kind.namespace_on(name, scope.network):
                found.append(NamespaceFacts(name, _labels(obj)))
        return found

    def _pods_on(self, network: str) -> Callable[[str], list[PodFacts]]:
        """A namespace's pods as they are on ``network`` (by index)."""
        return lambda namespace: [self.kind.pod_facts(pod, network) for pod in
                                  self.pods.peek_by_index(NAMESPACE_INDEX, namespace)]

    def _address_set_rows(self, scope: NetworkScope, selector: PeerSelector
                          ) -> list[DesiredRow]:
        selected = members(selector, self._namespaces_of(scope, selector),
                           self._pods_on(scope.network))
        return build_address_set_rows(scope, selector.key,
                                      [ip for pod in selected for ip in pod.ips])

    def _named_targets(self, scope: NetworkScope, policy: Policy
                       ) -> dict[tuple[str, int], list[NamedTarget]]:
        found: dict[tuple[str, int], list[NamedTarget]] = {}
        for rule in policy.rules:
            selectors = named_port_selectors(policy, rule)
            if not selectors:
                continue
            pods = [pod for selector in selectors
                    for pod in members(selector, self._namespaces_of(scope, selector),
                                       self._pods_on(scope.network))]
            found[(rule.direction, rule.index)] = resolve_named_ports(rule.ports, pods)
        return found

    # -- errors ------------------------------------------------------------------------
    def report(self, key: str, error: BaseException, _kind: str) -> None:
        kind, _, rest = key.partition(":")
        obj = self.policies.peek(rest) if kind == "policy" else None
        if obj is not None and self.context.recorder is not None:
            self.context.recorder.event(obj, WARNING, ERROR_REASON, str(error))


def policy_key(policy: JSON) -> str:
    meta = policy["metadata"]
    return f"{meta.get('namespace', '')}/{meta['name']}"


def namespace_relevant(old: JSON | None, new: JSON | None) -> bool:
    return old is None or new is None or _labels(old) != _labels(new) or \
        _annotation(old, ACL_LOGGING) != _annotation(new, ACL_LOGGING)


def pod_relevant(old: JSON | None, new: JSON | None) -> bool:
    """What policies read of a pod changed: labels, addresses on any network, phase,
    named ports."""
    if old is None or new is None:
        return True
    return _pod_signature(old) != _pod_signature(new)


def _pod_signature(pod: JSON) -> tuple[Any, ...]:
    return (_labels(pod), _annotation(pod, POD_NETWORKS_ANNOTATION),
            (pod.get("status") or {}).get("phase"),
            bool((pod.get("spec") or {}).get("hostNetwork")), named_ports(pod))
