"""Deletion: finalizers, ownerReference garbage collection, namespace and CRD cleanup.

The real cluster spreads this over the API server (deletionTimestamp,
finalizers), the garbage collector and the namespace and CRD controllers.
Here it is one engine that runs synchronously under the store lock after
every write that may matter: a worklist of objects to re-examine, so a
chain (namespace -> its pods -> their dependents) settles before the
request returns, and an object blocked by a finalizer simply stays until a
later update removes it.  Propagation policies follow upstream: Background
(owner first, dependents after), Foreground (``foregroundDeletion``
finalizer, dependents first, owner waits for those with
``blockOwnerDeletion``) and Orphan (``orphan`` finalizer, ownerReferences
removed from dependents).
"""

from __future__ import annotations

import logging
from collections import deque

from ovnk_local.apiserver import crds
from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.objectmeta import key_of, now_rfc3339
from ovnk_local.apiserver.resources import ResourceRegistry
from ovnk_local.apiserver.store import Store

log = logging.getLogger(__name__)

NAMESPACES = "/namespaces"
FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
POLICIES = ("Foreground", "Background", "Orphan")
_MAX_STEPS = 1_000_000


def _refs(obj: JSON) -> list[JSON]:
    return [r for r in obj["metadata"].get("ownerReferences") or [] if isinstance(r, dict)]


def _address(storage: str, obj: JSON) -> tuple[str, str, str]:
    m = obj["metadata"]
    return storage, str(m.get("namespace") or ""), str(m["name"])


class Lifecycle:
    """Drives objects through deletion; every method expects ``store.lock`` to be held."""

    def __init__(self, store: Store, registry: ResourceRegistry) -> None:
        self.store = store
        self.registry = registry
        self._pending: deque[tuple[str, str, str]] = deque()
        self._queued: set[tuple[str, str, str]] = set()

    # -- entry points ----------------------------------------------------------------------
    def delete(self, storage: str, obj: JSON, policy: str) -> JSON:
        """Start deleting ``obj`` with ``policy``; returns the object as it now is."""
        result = self._begin(storage, obj, policy)
        self._drain()
        return result

    def settle(self, storage: str, obj: JSON) -> None:
        """Re-examine ``obj`` after a write (dangling owners, released finalizers)."""
        self._enqueue(_address(storage, obj))
        self._drain()

    def remove(self, storage: str, obj: JSON) -> JSON:
        """Remove ``obj`` now and queue everything its absence may unblock."""
        final = self.store.remove(storage, obj)
        m = obj["metadata"]
        log.info("deleted %s %s", storage, key_of(obj))
        for dep_storage, dependent in self.store.dependents(str(m.get("uid"))):
            self._enqueue(_address(dep_storage, dependent))
        for ref in _refs(obj):
            owner = self.store.by_uid(str(ref.get("uid")))
            if owner is not None:
                self._enqueue(_address(*owner))
        if m.get("namespace"):
            self._enqueue((NAMESPACES, "", str(m["namespace"])))
        rt = self.registry.storage_type(storage)
        if rt is not None and rt.crd:
            self._enqueue((crds.CRD_STORAGE, "", rt.crd))
        if storage == crds.CRD_STORAGE:
            self.registry.replace_crd(str(m["name"]), [])
        return final

    # -- internals -------------------------------------------------------------------------
    def _enqueue(self, address: tuple[str, str, str]) -> None:
        if address not in self._queued:
            self._queued.add(address)
            self._pending.append(address)

    def _drain(self) -> None:
        steps = 0
        while self._pending and steps < _MAX_STEPS:
            steps += 1
            address = self._pending.popleft()
            self._queued.discard(address)
            storage, namespace, name = address
            obj = self.store.get(storage, namespace, name)
            if obj is not None:
                self._examine(storage, obj)
        if self._pending:
            log.error("deletion engine: giving up after %d steps (%d pending)", steps,
                      len(self._pending))
            self._pending.clear()
            self._queued.clear()

    def _begin(self, storage: str, obj: JSON, policy: str) -> JSON:
        m = obj["metadata"]
        finalizers = list(m.get("finalizers") or [])
        if policy == "Orphan" and ORPHAN not in finalizers:
            finalizers.append(ORPHAN)
        if policy == "Foreground" and FOREGROUND not in finalizers:
            finalizers.append(FOREGROUND)
        spec_finalizers = (obj.get("spec") or {}).get("finalizers") if storage == NAMESPACES \
            else None
        if not finalizers and not spec_finalizers:
            return self.remove(storage, obj)
        if m.get("deletionTimestamp") and finalizers == list(m.get("finalizers") or []):
            self._enqueue(_address(storage, obj))
            return obj
        new_meta = {**m, "finalizers": finalizers}
        if not m.get("deletionTimestamp"):
            new_meta["deletionTimestamp"] = now_rfc3339()
            new_meta["deletionGracePeriodSeconds"] = 0
            if m.get("generation"):
                new_meta["generation"] = int(m["generation"]) + 1
        new = {**obj, "metadata": new_meta}
        if storage == NAMESPACES:
            new["status"] = {**(obj.get("status") or {}), "phase": "Terminating"}
        stored = self.store.put(storage, new)
        log.info("deleting %s %s: waiting for finalizers %s", storage, key_of(obj),
                 finalizers + list(spec_finalizers or []))
        self._enqueue(_address(storage, stored))
        return stored

    def _examine(self, storage: str, obj: JSON) -> None:
        if not obj["metadata"].get("deletionTimestamp"):
            if _refs(obj):
                self._collect(storage, obj)
            return
        finalizers = list(obj["metadata"].get("finalizers") or [])
        if FOREGROUND in finalizers and not self._blocking_dependents(obj):
            obj = self._drop_finalizer(storage, obj, FOREGROUND)
        if ORPHAN in finalizers:
            self._orphan_dependents(obj)
            obj = self._drop_finalizer(storage, obj, ORPHAN)
        if storage == NAMESPACES:
            obj = self._finalize_namespace(obj)
        elif storage == crds.CRD_STORAGE:
            obj = self._finalize_crd(obj)
        spec_finalizers = (obj.get("spec") or {}).get("finalizers") if storage == NAMESPACES \
            else None
        if not obj["metadata"].get("finalizers") and not spec_finalizers:
            self.remove(storage, obj)

    def _drop_finalizer(self, storage: str, obj: JSON, finalizer: str) -> JSON:
        m = obj["metadata"]
        remaining = [f for f in m.get("finalizers") or [] if f != finalizer]
        return self.store.put(storage, {**obj, "metadata": {**m, "finalizers": remaining}})

    def _collect(self, storage: str, dependent: JSON) -> None:
        """Garbage-collect ``dependent`` when none of its owners is still solid."""
        solid, gone, waiting = [], [], []
        for ref in _refs(dependent):
            if self.registry.by_kind(str(ref.get("apiVersion")), str(ref.get("kind"))) is None:
                solid.append(ref)  # an owner kind this server does not serve: never collect
                continue
            found = self.store.by_uid(str(ref.get("uid")))
            if found is None:
                gone.append(ref)
            elif found[1]["metadata"].get("deletionTimestamp") and FOREGROUND in (
                    found[1]["metadata"].get("finalizers") or []):
                waiting.append(ref)
            else:
                solid.append(ref)
        if not gone and not waiting:
            return
        if solid:
            m = dependent["metadata"]
            self.store.put(storage, {**dependent, "metadata": {**m, "ownerReferences": solid}})
            return
        log.info("garbage collector: deleting %s %s, its owners are gone", storage,
                 key_of(dependent))
        self._begin(storage, dependent, "Foreground" if waiting else "Background")

    def _blocking_dependents(self, owner: JSON) -> bool:
        uid = owner["metadata"].get("uid")
        blocking = False
        for storage, dependent in self.store.dependents(str(uid)):
            if not dependent["metadata"].get("deletionTimestamp"):
                self._enqueue(_address(storage, dependent))
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in _refs(dependent)):
                blocking = True
        return blocking

    def _orphan_dependents(self, owner: JSON) -> None:
        uid = owner["metadata"].get("uid")
        for storage, dependent in self.store.dependents(str(uid)):
            m = dependent["metadata"]
            refs = [r for r in _refs(dependent) if r.get("uid") != uid]
            self.store.put(storage, {**dependent, "metadata": {**m, "ownerReferences": refs}})

    def _finalize_namespace(self, namespace: JSON) -> JSON:
        name = namespace["metadata"]["name"]
        for storage, obj in self.store.in_namespace(name):
            if not obj["metadata"].get("deletionTimestamp"):
                self._begin(storage, obj, "Background")
        remaining = self.store.in_namespace(name)
        spec = namespace.get("spec") or {}
        if remaining:
            return self._namespace_conditions(namespace, remaining)
        if "kubernetes" in (spec.get("finalizers") or []):
            finalizers = [f for f in spec["finalizers"] if f != "kubernetes"]
            return self.store.put(NAMESPACES, {**namespace, "spec": {**spec,
                                                                     "finalizers": finalizers}})
        return namespace

    def _namespace_conditions(self, namespace: JSON, remaining: list[tuple[str, JSON]]) -> JSON:
        kinds = sorted({s.split("/", 1)[1] + (f".{s.split('/')[0]}" if s.split("/")[0] else "")
                        for s, _ in remaining})
        finalizers = sorted({f for _, o in remaining for f in o["metadata"].get("finalizers")
                             or []})
        conditions = [{"type": "NamespaceContentRemaining", "status": "True",
                       "reason": "SomeResourcesRemain",
                       "message": f"Some resources are remaining: {', '.join(kinds)} has "
                                  f"{len(remaining)} resource instances"}]
        if finalizers:
            conditions.append({"type": "NamespaceFinalizersRemaining", "status": "True",
                               "reason": "SomeFinalizersRemain",
                               "message": "Some content in the namespace has finalizers "
                                          f"remaining: {', '.join(finalizers)}"})
        status = namespace.get("status") or {}
        current = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                   for c in status.get("conditions") or []]
        if current == conditions:
            return namespace
        now = now_rfc3339()
        stamped = [{**c, "lastTransitionTime": now} for c in conditions]
        return self.store.put(NAMESPACES, {**namespace, "status": {**status,
                                                                   "conditions": stamped}})

    def _finalize_crd(self, crd: JSON) -> JSON:
        if crds.CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
            return crd
        if not any(c.get("type") == "Terminating" for c in (crd.get("status") or {}).get(
                "conditions") or []):
            crd = self.store.put(crds.CRD_STORAGE, crds.terminating(crd))
        spec = crd.get("spec") or {}
        storage = f"{spec.get('group')}/{(spec.get('names') or {}).get('plural')}"
        instances, _ = self.store.objects(storage)
        for obj in instances:
            if not obj["metadata"].get("deletionTimestamp"):
                self._begin(storage, obj, "Background")
        if self.store.objects(storage)[0]:
            return crd
        return self._drop_finalizer(crds.CRD_STORAGE, crd, crds.CLEANUP_FINALIZER)
