"""One watch stream: events from the store, filtered, converted and written as JSON lines.

Selectors are applied per event the way the real server does it: an object
that starts matching arrives as ADDED, one that stops matching as DELETED.
With ``allowWatchBookmarks`` a BOOKMARK (only ``metadata.resourceVersion``)
is sent every ``bookmark_interval`` seconds while the stream is idle, and once
more before the stream ends at ``timeoutSeconds``.  A watch from a
compacted resourceVersion gets one ERROR event carrying a 410 Expired Status.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ovnk_local.apiserver.conversion import from_storage
from ovnk_local.apiserver.errors import JSON, ApiStatusError
from ovnk_local.apiserver.resources import ResourceType
from ovnk_local.apiserver.selectors import Matcher
from ovnk_local.apiserver.store import ADDED, DELETED, MODIFIED, Event, Store, Watcher
from ovnk_local.apiserver.table import to_table

log = logging.getLogger(__name__)

SendLine = Callable[[bytes], None]


@dataclass
class WatchRequest:
    rt: ResourceType
    namespace: str
    since: int | None
    matches: Matcher
    bookmarks: bool
    timeout: float
    bookmark_interval: float
    table: bool = False
    include_object: str = "Metadata"


def _translate(event: Event, matches: Matcher, rt: ResourceType) -> tuple[str, JSON] | None:
    obj = from_storage(rt, event.obj)
    now = matches(obj)
    before = event.old is not None and event.type == MODIFIED and matches(
        from_storage(rt, event.old))
    if event.type == MODIFIED:
        if now and before:
            return MODIFIED, obj
        if now:
            return ADDED, obj
        if before:
            return DELETED, obj
        return None
    return (event.type, obj) if now else None


def stream(store: Store, request: WatchRequest, send: SendLine,
           alive: Callable[[], bool]) -> None:
    """Run the watch until timeout, client disconnect or server stop."""
    rt = request.rt
    try:
        watcher = store.watch(rt.storage, request.namespace, request.since)
    except ApiStatusError as exc:
        send(_dumps({"type": "ERROR", "object": exc.status()}))
        return
    deadline = time.monotonic() + request.timeout
    next_bookmark = time.monotonic() + request.bookmark_interval
    last_rv = request.since or 0  # every event up to here was delivered or filtered out
    try:
        while not watcher.closed and not watcher.overflowed:
            now = time.monotonic()
            if now >= deadline:
                break
            wait = min(deadline - now, 1.0)
            if request.bookmarks:
                wait = max(0.0, min(wait, next_bookmark - now))
            event = watcher.next(wait)
            if event is not None:
                translated = _translate(event, request.matches, rt)
                if translated is not None:
                    send(_line(request, event, *translated))
                if not event.initial:
                    last_rv = event.rv
            elif not alive():
                return
            if request.bookmarks and time.monotonic() >= next_bookmark:
                _bookmark(store, watcher, request, send, last_rv)
                next_bookmark = time.monotonic() + request.bookmark_interval
        if request.bookmarks and not watcher.closed:
            _bookmark(store, watcher, request, send, last_rv)
    finally:
        store.stop_watch(watcher)


def _bookmark(store: Store, watcher: Watcher, request: WatchRequest, send: SendLine,
              last_rv: int) -> None:
    """Send a BOOKMARK: the store's version when nothing is queued, else the last event's
    (so a busy stream whose events the selector filters out still moves its client on)."""
    rv = store.bookmark(watcher) or last_rv
    if not rv:
        return
    rt = request.rt
    obj: JSON = {"kind": rt.kind, "apiVersion": rt.api_version,
                 "metadata": {"resourceVersion": str(rv)}}
    send(_dumps({"type": "BOOKMARK", "object": obj}))


def _dumps(document: JSON) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _line(request: WatchRequest, event: Event, kind: str, obj: JSON) -> bytes:
    """The event as one JSON line.  Every stream of the same API version sends the same
    object, so it is encoded once per event, not once per watcher (a pod's event goes to
    every component watching pods)."""
    if request.table:
        return _dumps({"type": kind, "object": to_table(
            request.rt, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            request.include_object)})
    key = f"{request.rt.api_version}/{request.rt.kind}"
    body = event.encoded.get(key)
    if body is None:
        body = event.encoded[key] = _dumps(obj)
    return b'{"type":' + json.dumps(kind).encode() + b',"object":' + body + b"}"
