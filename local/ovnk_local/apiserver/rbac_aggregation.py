"""ClusterRole aggregation: a role with an ``aggregationRule`` holds the rules of the roles
its label selectors pick (kube-controller-manager's clusterrole-aggregation controller).

This is how ``admin``, ``edit`` and ``view`` grow when an add-on ships a
ClusterRole labelled ``rbac.authorization.k8s.io/aggregate-to-edit: "true"``
(ovnk does, for UserDefinedNetworks).  Store events only wake a worker; the
worker recomputes every aggregated role (in rounds, since aggregated roles can
pick each other) and writes the ones whose rules differ, as the server itself.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

from ovnk_core.kube.selectors import selector_matches
from ovnk_local.apiserver.errors import JSON, ApiStatusError
from ovnk_local.apiserver.rbac import CLUSTER_ROLES
from ovnk_local.apiserver.resources import ResourceRegistry
from ovnk_local.apiserver.rest import Api, WriteOptions
from ovnk_local.apiserver.store import Event, Store

log = logging.getLogger(__name__)
MAX_ROUNDS = 8


def aggregated_rules(role: JSON, roles: list[JSON]) -> list[Any] | None:
    """The rules ``role`` must hold (None when it has no aggregationRule): the union of the
    rules of every other ClusterRole one of its selectors matches, by role name, without
    repeats."""
    rule = role.get("aggregationRule")
    if not isinstance(rule, dict):
        return None
    selectors = [s for s in rule.get("clusterRoleSelectors") or [] if isinstance(s, dict)]
    name = role["metadata"]["name"]
    result: list[Any] = []
    seen: set[str] = set()
    for other in sorted(roles, key=lambda r: r["metadata"]["name"]):
        if other["metadata"]["name"] == name:
            continue
        labels = other["metadata"].get("labels") or {}
        try:
            picked = any(selector_matches(s, labels) for s in selectors)
        except ValueError:
            picked = False
        if not picked:
            continue
        for item in other.get("rules") or []:
            key = json.dumps(item, sort_keys=True)
            if key not in seen:
                seen.add(key)
                result.append(item)
    return result


class ClusterRoleAggregator:
    """Keeps aggregated ClusterRoles' rules current; ``start()``/``stop()`` its worker."""

    def __init__(self, store: Store, api: Api, registry: ResourceRegistry) -> None:
        self.store = store
        self.api = api
        self.registry = registry
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="clusterrole-aggregation",
                                        daemon=True)
        store.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.storage == CLUSTER_ROLES:
            self._wake.set()

    def start(self) -> None:
        self.reconcile()
        self._thread.start()

    def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopping:
                return
            try:
                self.reconcile()
            except Exception:  # keep aggregating after a bad round; the next event retries
                log.exception("clusterrole aggregation failed")

    def reconcile(self) -> int:
        """Bring every aggregated role up to date; returns how many were written."""
        rt = self.registry.storage_type(CLUSTER_ROLES)
        if rt is None:
            return 0
        written = 0
        for _ in range(MAX_ROUNDS):
            roles = self.store.objects(CLUSTER_ROLES)[0]
            changed = 0
            for role in roles:
                wanted = aggregated_rules(role, roles)
                if wanted is None or (role.get("rules") or []) == wanted:
                    continue
                try:
                    self.api.update(rt, "", role["metadata"]["name"],
                                    {**role, "rules": wanted}, WriteOptions())
                    changed += 1
                except ApiStatusError as exc:  # changed or deleted meanwhile: next round
                    log.info("clusterrole %s: %s", role["metadata"]["name"], exc.message)
            written += changed
            if not changed:
                break
        return written


__all__ = ["ClusterRoleAggregator", "aggregated_rules"]
