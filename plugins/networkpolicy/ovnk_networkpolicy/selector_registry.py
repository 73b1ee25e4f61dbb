"""Which selectors the policies of the cluster use, indexed so that an event finds by lookup
what it may change.

Two kinds of use, both keyed by ``(network, selector key)``:

* a policy's **peer address set** (a selector peer): the set is reconciled when a pod it
  selects changes (key ``addrset:...``), deleted once no policy names it;
* a policy's **named ports**, resolved on the pods a selector selects (its own pods for an
  ingress rule, a rule's peers for an egress rule, every pod of the network for an egress
  rule without peers): the policy is reconciled when one of those pods changes.

A pod event is looked up in its namespace's entries — those fixed to the namespace and
those whose namespace selector selects it now (``namespace → selectors``, kept current by
namespace events) — and keeps only the selectors whose pod selector matches the pod: it
enqueues the sets and policies it can affect and no other, whatever the size of the
cluster.  A namespace event re-evaluates the namespace selectors against that one
namespace and enqueues the users of those whose verdict changed.  The namespaces a
selector selects (``namespaces_of``) come from the same index, so a set's reconcile never
walks every namespace.  Filled from the informer caches at startup before any worker
runs, then by each policy's reconcile and by namespace events.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ovnk_networkpolicy.peers import PeerSelector

SetKey = tuple[str, str]  # (network, selector key)
NamespaceLister = Callable[[], Iterable[tuple[str, Mapping[str, str]]]]


def addrset_key(set_key: SetKey) -> str:
    return f"addrset:{set_key[0]}:{set_key[1]}"


def policy_queue_key(policy_key: str) -> str:
    return f"policy:{policy_key}"


@dataclass
class _Entry:
    selector: PeerSelector
    set_users: set[str] = field(default_factory=set)  # policies naming its address set
    watchers: set[str] = field(default_factory=set)  # policies resolving named ports on it

    @property
    def unused(self) -> bool:
        return not self.set_users and not self.watchers


class SelectorRegistry:
    """The selectors in use and the two indexes; thread-safe.

    :param list_namespaces: ``(name, labels)`` of every namespace, read only when a
        namespace selector is first used (to learn which namespaces it selects)."""

    def __init__(self, list_namespaces: NamespaceLister = lambda: ()) -> None:
        self._list_namespaces = list_namespaces
        self._lock = threading.Lock()
        self._entries: dict[SetKey, _Entry] = {}
        self._of_policy: dict[str, tuple[set[SetKey], set[SetKey]]] = {}
        self._static: dict[str, set[SetKey]] = defaultdict(set)  # namespace -> entries
        self._matched: dict[str, set[SetKey]] = defaultdict(set)  # namespace -> entries
        self._matching: dict[SetKey, set[str]] = {}  # namespace-selector entry -> namespaces
        self._namespaces: dict[str, Mapping[str, str]] = {}  # as namespace events said

    # -- policies ----------------------------------------------------------------------
    def set_policy(self, policy_key: str, sets: Iterable[tuple[str, PeerSelector]],
                   watched: Iterable[tuple[str, PeerSelector]] = ()) -> set[SetKey]:
        """Record the address sets ``policy_key`` uses now and the selectors its named
        ports resolve on, each with its network (none: it is gone or unrenderable);
        returns the sets it used before or uses now (each may need a reconcile)."""
        wanted_sets = {(network, s.key): s for network, s in sets}
        wanted_watched = {(network, s.key): s for network, s in watched}
        with self._lock:
            old_sets, old_watched = self._of_policy.pop(policy_key, (set(), set()))
            for key in old_sets - set(wanted_sets):
                self._entries[key].set_users.discard(policy_key)
            for key in old_watched - set(wanted_watched):
                self._entries[key].watchers.discard(policy_key)
            for key, selector in wanted_sets.items():
                self._entry(key, selector).set_users.add(policy_key)
            for key, selector in wanted_watched.items():
                self._entry(key, selector).watchers.add(policy_key)
            for key in (old_sets | old_watched) - set(wanted_sets) - set(wanted_watched):
                if self._entries[key].unused:
                    self._forget(key)
            if wanted_sets or wanted_watched:
                self._of_policy[policy_key] = (set(wanted_sets), set(wanted_watched))
        return old_sets | set(wanted_sets)

    def _entry(self, key: SetKey, selector: PeerSelector) -> _Entry:
        entry = self._entries.get(key)
        if entry is not None:
            return entry
        entry = self._entries[key] = _Entry(selector)
        if selector.namespace_selector is None:
            self._static[str(selector.namespace)].add(key)
            return entry
        if not self._namespaces:  # no namespace event yet (startup): read the cache
            self._namespaces = {name: dict(labels) for name, labels in self._list_namespaces()}
        matching = {name for name, labels in self._namespaces.items()
                    if selector.selects_namespace(name, labels)}
        self._matching[key] = matching
        for name in matching:
            self._matched[name].add(key)
        return entry

    def _forget(self, key: SetKey) -> None:
        selector = self._entries.pop(key).selector
        if selector.namespace_selector is None:
            _discard(self._static, str(selector.namespace), key)
        for name in self._matching.pop(key, ()):
            _discard(self._matched, name, key)

    # -- lookups -----------------------------------------------------------------------
    def set_selector(self, key: SetKey) -> PeerSelector | None:
        """The selector of an address set some policy names (``None``: no policy does)."""
        with self._lock:
            entry = self._entries.get(key)
            return entry.selector if entry is not None and entry.set_users else None

    def namespaces_of(self, key: SetKey) -> set[str]:
        """The namespaces whose pods the selector may select (by index)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return set()
            if entry.selector.namespace_selector is None:
                return {str(entry.selector.namespace)}
            return set(self._matching.get(key, ()))

    def pod_keys(self, namespace: str, labels: Mapping[str, str]) -> set[str]:
        """Queue keys a pod with ``labels`` in ``namespace`` may change: the sets and
        named-port policies whose selectors select it."""
        with self._lock:
            keys = self._static.get(namespace, set()) | self._matched.get(namespace, set())
            return self._users({key for key in keys
                                if self._entries[key].selector.selects_pod(labels)})

    def namespace_changed(self, name: str, labels: Mapping[str, str] | None) -> set[str]:
        """A namespace was added, relabelled (``labels``) or deleted (``None``): update the
        index and return the queue keys of the selectors whose verdict on it changed (all
        of its entries when it comes or goes)."""
        with self._lock:
            known = name in self._namespaces
            if labels is None:
                self._namespaces.pop(name, None)
                now: set[SetKey] = set()
            else:
                self._namespaces[name] = dict(labels)
                now = {key for key, matching in self._matching.items()
                       if self._entries[key].selector.selects_namespace(name, labels)}
            before = set(self._matched.get(name, ()))
            for key in before - now:
                self._matching[key].discard(name)
            for key in now - before:
                self._matching[key].add(name)
            if now:
                self._matched[name] = now
            else:
                self._matched.pop(name, None)
            changed = before ^ now
            if labels is None or not known:
                changed |= self._static.get(name, set())
            return self._users(changed)

    def _users(self, keys: Iterable[SetKey]) -> set[str]:
        found: set[str] = set()
        for key in keys:
            entry = self._entries[key]
            if entry.set_users:
                found.add(addrset_key(key))
            found.update(policy_queue_key(policy) for policy in entry.watchers)
        return found


def _discard(index: dict[str, set[SetKey]], name: str, key: SetKey) -> None:
    keys = index.get(name)
    if keys is not None:
        keys.discard(key)
        if not keys:
            del index[name]
