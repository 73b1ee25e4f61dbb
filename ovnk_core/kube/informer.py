"""Informers: a local, always-current cache of one resource, and change notifications.

An informer lists the resource, then watches from the list's
resourceVersion (asking for bookmarks, so the resume point stays fresh even
when nothing changes).  Every way a watch can end is handled explicitly,
because an informer that silently stops delivering is the worst bug a
controller can have:

* the server closes the stream (``timeoutSeconds`` or a restart): watch again
  from the last seen resourceVersion;
* the connection drops or goes silent longer than ``read_timeout``: the same,
  after a short backoff;
* the resourceVersion is too old (410 Gone, as HTTP status or ERROR event):
  relist, and turn the difference between cache and list into add, update and
  delete notifications, so no change is lost;
* any other API error (500, 409, ...): back off and retry, never give up;
* an object that cannot be decoded (``kube.decoding``): reported through
  ``on_undecodable`` (a Warning event on it, or a log line when it cannot even
  be named) and skipped — the watch moves past its resourceVersion (a version
  that cannot be read makes the informer list again), the last version that
  could be decoded stays cached, and its deletion is still applied;
* an index function that raises on one object: that object is left out of
  that index (logged), never out of the cache, and never stops the informer.

Every ``resync_period`` all cached objects are re-announced as updates, the
safety net of level-driven controllers.

The client's own ``kubernetes.informer.SharedInformer`` was not enough: it
never asks for bookmarks, has no indexes and no way to close a stream from
another thread, and works on typed models where ovnk handles CRDs and
built-ins alike as plain objects.  This one uses the official client's HTTP
machinery underneath (``kube.client``).  ``has_synced`` turns true after the
first list has been applied.  Handlers run on the informer's thread and must
only enqueue work.
"""

from __future__ import annotations

import copy
import logging
import random
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ovnk_core.kube.client import JSON, KubeClient, WatchStream
from ovnk_core.kube.decoding import Undecodable
from ovnk_core.kube.errors import ApiError, Gone, error_from_status
from ovnk_core.kube.resources import Resource, object_key

log = logging.getLogger(__name__)

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"
IndexFunc = Callable[[JSON], Iterable[str]]
Handler = Callable[[str, JSON | None, JSON | None], None]  # (event, old, new)
UndecodableReporter = Callable[[Resource, Undecodable], None]


def index_by_namespace(obj: JSON) -> list[str]:
    namespace = obj.get("metadata", {}).get("namespace")
    return [namespace] if namespace else []


def index_by_node(obj: JSON) -> list[str]:
    node = (obj.get("spec") or {}).get("nodeName")
    return [node] if node else []


def index_by_label(label: str) -> IndexFunc:
    def by_label(obj: JSON) -> list[str]:
        value = (obj.get("metadata", {}).get("labels") or {}).get(label)
        return [value] if value is not None else []
    return by_label


@dataclass
class InformerStats:
    lists: int = 0
    watches: int = 0
    relists_after_gone: int = 0
    errors: int = 0
    events: int = 0
    bookmarks: int = 0
    undecodable: int = 0


class _Relist(Exception):
    """The watch cannot resume from where it is (an event without a readable version)."""


class Informer:
    """List+watch cache of one resource (optionally one namespace / selectors)."""

    def __init__(self, client: KubeClient, resource: Resource, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 resync_period: float = 300.0, watch_timeout: int = 300,
                 read_timeout: float = 120.0, indexers: dict[str, IndexFunc] | None = None,
                 min_backoff: float = 0.2, max_backoff: float = 10.0,
                 on_undecodable: UndecodableReporter | None = None) -> None:
        self.client = client
        self.resource = resource
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync_period = resync_period
        self.watch_timeout = watch_timeout
        self.read_timeout = read_timeout
        self.min_backoff = min_backoff
        self.max_backoff = max_backoff
        self.stats = InformerStats()
        self.on_undecodable = on_undecodable
        self.last_error = ""  # why the last list or watch failed (for "did not sync" reports)
        self._indexers = dict(indexers or {})
        self._items: dict[str, JSON] = {}
        self._indexes: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        self._indexed: dict[str, dict[str, tuple[str, ...]]] = {}  # key → index → values
        self._undecodable: dict[str, str] = {}  # key → resourceVersion already reported
        self._lock = threading.RLock()
        self._handlers: list[Handler] = []
        self._synced = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._resource_version = ""
        self._stream: WatchStream | None = None
        self._last_resync = time.monotonic()
        self.last_activity = time.monotonic()
        # The resourceVersion up to which every change has been handed to the handlers
        # (bookmarks included): once it reaches a version, handlers have seen all before it.
        self.handled_version = ""

    # -- public API ----------------------------------------------------------------------
    def add_handler(self, handler: Handler) -> None:
        """Call ``handler(event, old, new)`` for every change (and every object on resync)."""
        self._handlers.append(handler)

    def add_indexer(self, name: str, func: IndexFunc) -> None:
        with self._lock:
            self._indexers[name] = func
            for key, obj in self._items.items():
                values = self._index_values(name, func, key, obj)
                self._indexed.setdefault(key, {})[name] = values
                for value in values:
                    self._indexes[name][value].add(key)

    def start(self) -> Informer:
        """Start the list/watch thread (a second call does nothing)."""
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self._run, name=f"informer-{self.resource}",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        stream = self._stream
        if stream is not None:
            stream.close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def get(self, key: str) -> JSON | None:
        with self._lock:
            obj = self._items.get(key)
            return copy.deepcopy(obj) if obj is not None else None

    def items(self) -> list[JSON]:
        with self._lock:
            return [copy.deepcopy(obj) for obj in self._items.values()]

    def list_keys(self) -> list[str]:
        with self._lock:
            return list(self._items)

    def by_index(self, name: str, value: str) -> list[JSON]:
        with self._lock:
            if name not in self._indexers:
                raise KeyError(f"informer {self.resource} has no index {name!r}")
            return [copy.deepcopy(self._items[key])
                    for key in sorted(self._indexes[name].get(value, ()))]

    def peek(self, key: str) -> JSON | None:
        """The cached object itself, not a copy: for hot read-only paths.

        The caller must not modify it (or anything inside it); the informer replaces,
        never mutates, cached objects, so a peeked object stays a consistent snapshot.
        """
        with self._lock:
            return self._items.get(key)

    def peek_by_index(self, name: str, value: str) -> list[JSON]:
        """``by_index`` without copies; the same read-only contract as ``peek``."""
        with self._lock:
            if name not in self._indexers:
                raise KeyError(f"informer {self.resource} has no index {name!r}")
            return [self._items[key] for key in sorted(self._indexes[name].get(value, ()))]

    def peek_all(self) -> list[JSON]:
        """Every cached object without copies; the same read-only contract as ``peek``."""
        with self._lock:
            return list(self._items.values())

    def index_values(self, name: str) -> list[str]:
        """The values index ``name`` has objects for (e.g. every network some NAD names),
        without touching the objects."""
        with self._lock:
            if name not in self._indexers:
                raise KeyError(f"informer {self.resource} has no index {name!r}")
            return [value for value, members in self._indexes[name].items() if members]

    def keys_by_index(self, name: str, value: str) -> list[str]:
        """Keys of the objects whose index ``name`` has ``value`` (no copies made)."""
        with self._lock:
            if name not in self._indexers:
                raise KeyError(f"informer {self.resource} has no index {name!r}")
            return sorted(self._indexes[name].get(value, ()))

    @property
    def resource_version(self) -> str:
        return self._resource_version

    # -- the loop ------------------------------------------------------------------------
    def _run(self) -> None:
        backoff = self.min_backoff
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list_and_replace()
                    need_list = False
                self._watch_once()
                backoff = self.min_backoff
            except Gone:
                self.stats.relists_after_gone += 1
                log.info("informer %s: resourceVersion %s expired, relisting",
                         self.resource, self._resource_version)
                need_list = True
            except _Relist as exc:
                log.warning("informer %s: %s; relisting", self.resource, exc)
                need_list = True
            except Exception as exc:  # the loop must survive anything the network does
                self.stats.errors += 1
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("informer %s: %s; retrying in %.1fs", self.resource, exc, backoff)
                self._stop.wait(backoff * (1 + random.random() * 0.2))
                backoff = min(backoff * 2, self.max_backoff)
            self._maybe_resync()

    def _list_and_replace(self) -> None:
        result, skipped = self.client.list_objects(self.resource, self.namespace,
                                                   self.label_selector, self.field_selector)
        self.stats.lists += 1
        self.last_activity = time.monotonic()
        fresh = {object_key(obj): obj for obj in result.get("items") or []}
        self._resource_version = result.get("metadata", {}).get("resourceVersion", "")
        notifications: list[tuple[str, JSON | None, JSON | None]] = []
        for item in skipped:
            self._skip(item)
        still = {item.key for item in skipped}
        for key in [k for k in self._undecodable if k not in still]:
            del self._undecodable[key]
        with self._lock:
            for item in skipped:  # what could be decoded of it before stays
                if item.key and item.key in self._items:
                    fresh[item.key] = self._items[item.key]
            for key, gone in list(self._items.items()):
                if key not in fresh:
                    self._remove(key)
                    notifications.append((DELETED, gone, None))
            for key, obj in fresh.items():
                previous = self._items.get(key)
                if previous is None:
                    notifications.append((ADDED, None, obj))
                elif _rv(previous) != _rv(obj):
                    notifications.append((MODIFIED, previous, obj))
                self._put(key, obj)
        for event, old, new in notifications:
            self._dispatch(event, old, new)
        self.handled_version = self._resource_version
        self._synced.set()

    def _watch_once(self) -> None:
        self.stats.watches += 1
        stream = self._stream = self.client.watch(
            self.resource, self.namespace, resource_version=self._resource_version,
            label_selector=self.label_selector, field_selector=self.field_selector,
            timeout_seconds=self.watch_timeout, read_timeout=self.read_timeout)
        if self._stop.is_set():
            stream.close()
        for event in stream:
            if self._stop.is_set():
                return
            self.last_activity = time.monotonic()
            if isinstance(event, Undecodable):
                self._skip_event(event)
                continue
            kind = event.get("type")
            obj = event.get("object") or {}
            if kind == "ERROR":
                raise error_from_status(obj)
            if kind == "BOOKMARK":
                self.stats.bookmarks += 1
                self._resource_version = obj.get("metadata", {}).get("resourceVersion",
                                                                     self._resource_version)
                self.handled_version = self._resource_version
                continue
            self._apply_event(str(kind), obj)
            self._maybe_resync()

    def _skip_event(self, event: Undecodable) -> None:
        """Move past an event whose object cannot be decoded (a deletion still deletes)."""
        self._skip(event)
        if not event.resource_version:
            raise _Relist(f"a {event.event_type or 'watch'} event cannot be decoded and its "
                          "resourceVersion cannot be read")
        if event.event_type == DELETED and event.key:
            self.stats.events += 1
            with self._lock:
                old = self._items.get(event.key)
                self._remove(event.key)
                self._resource_version = event.resource_version
            self._undecodable.pop(event.key, None)
            if old is not None:
                self._dispatch(DELETED, old, None)
        else:
            self._resource_version = event.resource_version
        self.handled_version = self._resource_version

    def _skip(self, item: Undecodable) -> None:
        """Report an object that cannot be decoded (once per version of it)."""
        self.stats.undecodable += 1
        if item.key and self._undecodable.get(item.key) == item.resource_version:
            return
        if item.key:
            self._undecodable[item.key] = item.resource_version
        if self.on_undecodable is None:
            log.warning("informer %s: %s %s skipped: it cannot be decoded (%s)", self.resource,
                        self.resource.kind, item.key or "(name unreadable)", item.reason)
            return
        try:
            self.on_undecodable(self.resource, item)
        except Exception:
            log.exception("informer %s: reporting undecodable %s failed", self.resource,
                          item.key)

    def _apply_event(self, kind: str, obj: JSON) -> None:
        self.stats.events += 1
        key = object_key(obj)
        self._undecodable.pop(key, None)
        with self._lock:
            old = self._items.get(key)
            if kind == DELETED:
                self._remove(key)
            else:
                self._put(key, obj)
            self._resource_version = _rv(obj) or self._resource_version
        if kind == DELETED:
            self._dispatch(DELETED, old, None)
        else:
            self._dispatch(ADDED if old is None else MODIFIED, old, obj)
        self.handled_version = self._resource_version

    def _maybe_resync(self) -> None:
        if self.resync_period <= 0 or not self._synced.is_set():
            return
        now = time.monotonic()
        if now - self._last_resync < self.resync_period:
            return
        self._last_resync = now
        for obj in self.items():
            self._dispatch(MODIFIED, obj, obj)

    def _dispatch(self, event: str, old: JSON | None, new: JSON | None) -> None:
        for handler in self._handlers:
            try:
                handler(event, old, new)
            except Exception:
                log.exception("informer %s: handler failed for %s", self.resource,
                              object_key(new or old or {}))

    def _put(self, key: str, obj: JSON) -> None:
        self._remove(key)
        self._items[key] = obj
        indexed = self._indexed[key] = {}
        for name, func in self._indexers.items():
            values = indexed[name] = self._index_values(name, func, key, obj)
            for value in values:
                self._indexes[name][value].add(key)

    def _index_values(self, name: str, func: IndexFunc, key: str, obj: JSON
                      ) -> tuple[str, ...]:
        """``func(obj)``; an index function that fails leaves the object out of that index
        (one object's oddity must not stop the informer)."""
        try:
            return tuple(func(obj))
        except Exception as exc:
            log.error("informer %s: index %r failed on %s, left out of it: %s: %s",
                      self.resource, name, key, type(exc).__name__, exc)
            return ()

    def _remove(self, key: str) -> None:
        old = self._items.pop(key, None)
        indexed = self._indexed.pop(key, {})
        if old is None:
            return
        for name, values in indexed.items():
            for value in values:
                members = self._indexes[name].get(value)
                if members is not None:
                    members.discard(key)
                    if not members:
                        del self._indexes[name][value]


def _rv(obj: JSON) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion", ""))


class InformersNotSynced(ApiError):
    """Informers did not sync in time; the message says which and why."""

    def __init__(self, message: str) -> None:
        super().__init__(504, "Timeout", message)


def wait_for_informers(informers: Iterable[Informer], timeout: float) -> None:
    """Block until every informer has synced (the "has synced" barrier).

    :raises InformersNotSynced: naming every informer still not synced, with its last error.
    """
    deadline = time.monotonic() + timeout
    pending = []
    for informer in informers:
        if not informer.wait_for_sync(max(0.0, deadline - time.monotonic())):
            pending.append(informer)
    if pending:
        raise InformersNotSynced(
            f"informers did not sync within {timeout:g}s: " + "; ".join(
                f"{informer.resource} ({informer.last_error or 'no list completed'})"
                for informer in pending))
