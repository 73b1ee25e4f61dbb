"""Which peer address sets the policies of the cluster use, indexed for per-event lookups.

Derived from the NetworkPolicies in the informer cache (filled at startup before any
worker runs, then updated by each policy's reconcile), so that a pod or namespace event
finds the address sets it may change by index — the sets of selectors fixed to its
namespace, and the (fewer) sets with a namespace selector — instead of parsing every
policy.  A set no policy uses any more is deleted by its own reconcile.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable

from ovnk_networkpolicy.peers import PeerSelector

SetKey = tuple[str, str]  # (network, selector key)


class SelectorRegistry:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._selectors: dict[SetKey, PeerSelector] = {}
        self._users: dict[SetKey, set[str]] = defaultdict(set)
        self._of_policy: dict[str, set[SetKey]] = {}
        self._by_namespace: dict[str, set[SetKey]] = defaultdict(set)
        self._with_namespace_selector: set[SetKey] = set()

    def set_policy(self, policy_key: str, network: str, selectors: Iterable[PeerSelector]
                   ) -> set[SetKey]:
        """Record the sets ``policy_key`` uses now (none: it is gone or unrenderable);
        returns the sets it used before or uses now (each may need a reconcile)."""
        wanted = {(network, s.key): s for s in selectors}
        with self._lock:
            before = self._of_policy.pop(policy_key, set())
            for key in before - set(wanted):
                self._users[key].discard(policy_key)
                if not self._users[key]:
                    self._forget(key)
            for key, selector in wanted.items():
                self._users[key].add(policy_key)
                if key not in self._selectors:
                    self._selectors[key] = selector
                    if selector.namespace_selector is None:
                        self._by_namespace[str(selector.namespace)].add(key)
                    else:
                        self._with_namespace_selector.add(key)
            if wanted:
                self._of_policy[policy_key] = set(wanted)
        return before | set(wanted)

    def _forget(self, key: SetKey) -> None:
        del self._users[key]
        selector = self._selectors.pop(key, None)
        if selector is not None and selector.namespace_selector is None:
            self._by_namespace[str(selector.namespace)].discard(key)
            if not self._by_namespace[str(selector.namespace)]:
                del self._by_namespace[str(selector.namespace)]
        self._with_namespace_selector.discard(key)

    def selector(self, key: SetKey) -> PeerSelector | None:
        with self._lock:
            return self._selectors.get(key)

    def sets_for_namespace(self, namespace: str) -> set[SetKey]:
        """Sets that may hold pods of ``namespace``: those fixed to it and those with a
        namespace selector."""
        with self._lock:
            return set(self._by_namespace.get(namespace, ())) | self._with_namespace_selector

    def sets_with_namespace_selector(self) -> set[SetKey]:
        with self._lock:
            return set(self._with_namespace_selector)
