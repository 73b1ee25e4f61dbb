"""Objects, the cluster-wide resourceVersion, watch fan-out and the bounded event history.

Every write goes through ``put`` or ``remove`` under one lock: the write
takes the next resourceVersion, is recorded in the history and is pushed to
every watcher of its storage key before the lock is released, so each
watcher sees events in resourceVersion order and none is lost.  The history
keeps the last ``history_size`` events; a watch (or list continuation) from a
resourceVersion older than that gets 410 Expired, as with a compacted etcd.
Stored objects are never mutated: writers build a new dict per write.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from ovnk_local.apiserver.errors import JSON, expired
from ovnk_local.apiserver.objectmeta import key_of

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
# marks the end of a watch's initial ADDED events (a WatchList's "initial-events-end")
INITIAL_END = "INITIAL_END"
Key = tuple[str, str]


@dataclass(frozen=True)
class Event:
    rv: int
    storage: str
    namespace: str
    type: str
    obj: JSON
    old: JSON | None = None
    initial: bool = False
    # ``obj`` as served JSON, per API version and kind: encoded by the first watch stream
    # that sends it and reused by the others (stored objects are never mutated)
    encoded: dict[str, bytes] = field(default_factory=dict, compare=False, repr=False)


def _key(obj: JSON) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


class Watcher:
    """One watch stream's queue; filled under the store lock, drained by the HTTP thread."""

    def __init__(self, storage: str, namespace: str, max_queue: int) -> None:
        self.storage = storage
        self.namespace = namespace
        self.max_queue = max_queue
        self.overflowed = False
        self.closed = False
        self._queue: deque[Event] = deque()
        self._cond = threading.Condition(threading.Lock())

    def push(self, event: Event) -> None:
        """Queue an event (called under the store lock)."""
        with self._cond:
            if self.closed or self.overflowed:
                return
            if len(self._queue) >= self.max_queue:
                self.overflowed = True
                log.warning("watch on %s: client too slow (%d queued events), closing",
                            self.storage, len(self._queue))
            else:
                self._queue.append(event)
            self._cond.notify()

    def next(self, timeout: float) -> Event | None:
        """The next event, or ``None`` after ``timeout`` seconds or when closed/overflowed."""
        with self._cond:
            if not self._queue and not self.closed and not self.overflowed:
                self._cond.wait(timeout)
            return self._queue.popleft() if self._queue else None

    def empty(self) -> bool:
        """Whether nothing is queued."""
        with self._cond:
            return not self._queue

    def close(self) -> None:
        """Wake and end the stream."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()


class Store:
    """In-memory objects by storage key (``group/plural``), namespace and name."""

    def __init__(self, history_size: int = 10000, max_watch_queue: int = 100000) -> None:
        self.lock = threading.RLock()
        self.history_size = max(1, history_size)
        self.max_watch_queue = max_watch_queue
        self._objects: dict[str, dict[Key, JSON]] = {}
        self._uids: dict[str, tuple[str, Key]] = {}
        self._dependents: dict[str, set[tuple[str, Key]]] = {}
        self._rv = 0
        self._history: deque[Event] = deque()
        self._compacted = 0
        self._watchers: dict[str, set[Watcher]] = {}
        self.listeners: list[Callable[[Event], None]] = []

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    @property
    def compacted(self) -> int:
        """Every event with a resourceVersion up to this one is gone from the history."""
        with self.lock:
            return self._compacted

    # -- reads -----------------------------------------------------------------------------
    def get(self, storage: str, namespace: str, name: str) -> JSON | None:
        """The stored object, or ``None``."""
        with self.lock:
            return self._objects.get(storage, {}).get((namespace, name))

    def objects(self, storage: str, namespace: str | None = None) -> tuple[list[JSON], int]:
        """Objects sorted by namespace and name, with the resourceVersion of the snapshot."""
        with self.lock:
            items = self._objects.get(storage, {})
            keys = sorted(k for k in items if namespace is None or k[0] == namespace)
            return [items[k] for k in keys], self._rv

    def storages(self) -> list[str]:
        """Storage keys that currently hold objects."""
        with self.lock:
            return [s for s, items in self._objects.items() if items]

    def in_namespace(self, namespace: str) -> list[tuple[str, JSON]]:
        """Every object in ``namespace``, of any kind."""
        with self.lock:
            return [(storage, obj) for storage, items in self._objects.items()
                    for (ns, _), obj in sorted(items.items()) if ns == namespace]

    def by_uid(self, uid: str) -> tuple[str, JSON] | None:
        """The stored ``(storage, object)`` with this uid, if any."""
        with self.lock:
            where = self._uids.get(uid)
            if where is None:
                return None
            storage, key = where
            return storage, self._objects[storage][key]

    def dependents(self, uid: str) -> list[tuple[str, JSON]]:
        """Objects with an ownerReference to ``uid``."""
        with self.lock:
            return [(s, self._objects[s][k]) for s, k in sorted(self._dependents.get(uid, ()))
                    if k in self._objects.get(s, {})]

    # -- writes (callers hold ``lock`` across read-check-write) ----------------------------
    def put(self, storage: str, obj: JSON) -> JSON:
        """Store a new version of ``obj`` (ADDED or MODIFIED) under the next resourceVersion."""
        with self.lock:
            key = _key(obj)
            items = self._objects.setdefault(storage, {})
            old = items.get(key)
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            if old is not None:
                self._unindex(storage, key, old)
            items[key] = obj
            self._index(storage, key, obj)
            self._record(Event(self._rv, storage, key[0], MODIFIED if old else ADDED, obj, old))
            return obj

    def remove(self, storage: str, obj: JSON) -> JSON:
        """Delete the object stored under ``obj``'s key; the DELETED event carries ``obj``'s
        content (the last state, possibly an update that released the last finalizer) with
        a new resourceVersion."""
        with self.lock:
            key = _key(obj)
            items = self._objects.get(storage, {})
            old = items.pop(key, None)
            if old is None:
                return obj
            self._unindex(storage, key, old)
            self._rv += 1
            final = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self._rv)}}
            self._record(Event(self._rv, storage, key[0], DELETED, final, old))
            log.debug("store: removed %s %s at rv %d", storage, key_of(old), self._rv)
            return final

    def _index(self, storage: str, key: Key, obj: JSON) -> None:
        meta = obj["metadata"]
        if meta.get("uid"):
            self._uids[meta["uid"]] = (storage, key)
        for ref in meta.get("ownerReferences") or []:
            self._dependents.setdefault(str(ref.get("uid")), set()).add((storage, key))

    def _unindex(self, storage: str, key: Key, obj: JSON) -> None:
        meta = obj["metadata"]
        self._uids.pop(str(meta.get("uid")), None)
        for ref in meta.get("ownerReferences") or []:
            members = self._dependents.get(str(ref.get("uid")))
            if members is not None:
                members.discard((storage, key))
                if not members:
                    del self._dependents[str(ref.get("uid"))]

    def _record(self, event: Event) -> None:
        self._history.append(event)
        while len(self._history) > self.history_size:
            self._compacted = self._history.popleft().rv
        for watcher in list(self._watchers.get(event.storage, ())):
            if not watcher.namespace or watcher.namespace == event.namespace:
                watcher.push(event)
        for listener in self.listeners:
            listener(event)

    # -- watch -----------------------------------------------------------------------------
    def watch(self, storage: str, namespace: str, since: int | None, *,
              initial: bool | None = None, initial_end: bool = False) -> Watcher:
        """Register a watcher.  ``since=None``: live events from now on, preceded (unless
        ``initial`` is False) by every current object as ADDED and, with ``initial_end``,
        by an ``INITIAL_END`` event carrying the resourceVersion of that snapshot;
        otherwise every kept event after ``since`` (410 Expired when it is compacted)."""
        with self.lock:
            watcher = Watcher(storage, namespace, self.max_watch_queue)
            if since is None:
                if initial is not False:
                    items, _ = self.objects(storage, namespace or None)
                    for obj in items:
                        rv = int(obj["metadata"]["resourceVersion"])
                        watcher.push(Event(rv, storage, _key(obj)[0], ADDED, obj,
                                           initial=True))
                if initial_end:
                    watcher.push(Event(self._rv, storage, namespace, INITIAL_END, {},
                                       initial=True))
            else:
                if since < self._compacted:
                    raise expired(f"too old resource version: {since} ({self._compacted + 1})")
                for event in self._history:
                    if event.rv > since and event.storage == storage and (
                            not namespace or event.namespace == namespace):
                        watcher.push(event)
            self._watchers.setdefault(storage, set()).add(watcher)
            return watcher

    def stop_watch(self, watcher: Watcher) -> None:
        """Unregister and close a watcher."""
        with self.lock:
            self._watchers.get(watcher.storage, set()).discard(watcher)
        watcher.close()

    def bookmark(self, watcher: Watcher) -> int | None:
        """A resourceVersion the watcher has seen everything up to, if its queue is empty."""
        with self.lock:
            return self._rv if watcher.empty() else None

    def check_not_compacted(self, rv: int, message: str) -> None:
        """Raise 410 Expired with ``message`` when ``rv`` is compacted."""
        with self.lock:
            if rv < self._compacted:
                raise expired(message)

    def close_all_watchers(self) -> None:
        """End every watch stream (server shutdown)."""
        with self.lock:
            watchers = [w for ws in self._watchers.values() for w in ws]
            self._watchers.clear()
        for watcher in watchers:
            watcher.close()

    # -- persistence -----------------------------------------------------------------------
    def dump(self) -> JSON:
        """A snapshot of all objects and the resourceVersion counter."""
        with self.lock:
            return {"resourceVersion": self._rv,
                    "objects": {s: list(items.values()) for s, items in self._objects.items()
                                if items}}

    def load(self, data: JSON) -> None:
        """Replace everything with a ``dump()``; older resourceVersions are compacted away."""
        with self.lock:
            self._objects.clear()
            self._uids.clear()
            self._dependents.clear()
            self._history.clear()
            for storage, objects in (data.get("objects") or {}).items():
                for obj in objects:
                    key = _key(obj)
                    self._objects.setdefault(storage, {})[key] = obj
                    self._index(storage, key, obj)
            self._rv = int(data.get("resourceVersion") or 0)
            self._compacted = self._rv
