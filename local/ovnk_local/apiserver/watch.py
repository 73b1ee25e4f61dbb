"""One watch stream: events from the store, filtered, converted and written out.

Selectors are applied per event the way the real server does it: an object
that starts matching arrives as ADDED, one that stops matching as DELETED.
With ``allowWatchBookmarks`` a BOOKMARK (only ``metadata.resourceVersion``)
is sent every ``bookmark_interval`` seconds while the stream is idle, and once
more before the stream ends at ``timeoutSeconds``.  A watch from a
compacted resourceVersion gets one ERROR event carrying a 410 Expired Status.
A streaming list (``sendInitialEvents=true``, client-go's WatchList) ends its
initial ADDED events with a BOOKMARK annotated ``k8s.io/initial-events-end:
"true"`` at the snapshot's resourceVersion.  Events are JSON lines, or for a
client that negotiated protobuf, length-prefixed ``metav1.WatchEvent`` frames.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from ovnk_local.apiserver import protobuf
from ovnk_local.apiserver.conversion import from_storage
from ovnk_local.apiserver.errors import JSON, ApiStatusError, internal
from ovnk_local.apiserver.resources import ResourceType
from ovnk_local.apiserver.selectors import Matcher
from ovnk_local.apiserver.store import (
    ADDED,
    DELETED,
    INITIAL_END,
    MODIFIED,
    Event,
    Store,
    Watcher,
)
from ovnk_local.apiserver.table import to_table

log = logging.getLogger(__name__)

SendEvent = Callable[[bytes], None]
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


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
    protobuf: bool = False
    # since=None: whether to start with every current object as ADDED, and whether to end
    # those with the initial-events-end BOOKMARK (sendInitialEvents=true)
    initial: bool = True
    initial_end: bool = False


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


def stream(store: Store, request: WatchRequest, send: SendEvent,
           alive: Callable[[], bool]) -> None:
    """Run the watch until timeout, client disconnect or server stop."""
    rt = request.rt
    try:
        watcher = store.watch(rt.storage, request.namespace, request.since,
                              initial=request.initial, initial_end=request.initial_end)
    except ApiStatusError as exc:
        send(_encode(request, "ERROR", exc.status()))
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
            if event is not None and event.type == INITIAL_END:
                send(_encode(request, "BOOKMARK", _bookmark_object(rt, event.rv, True)))
                last_rv = event.rv
            elif event is not None:
                translated = _translate(event, request.matches, rt)
                if translated is not None:
                    send(_event(request, event, *translated))
                if not event.initial:
                    last_rv = event.rv
            elif not alive():
                return
            if request.bookmarks and time.monotonic() >= next_bookmark:
                _bookmark(store, watcher, request, send, last_rv)
                next_bookmark = time.monotonic() + request.bookmark_interval
        if request.bookmarks and not watcher.closed:
            _bookmark(store, watcher, request, send, last_rv)
    except protobuf.ProtobufError as exc:  # a stored object with no protobuf form
        log.error("watch on %s: cannot encode an event as protobuf: %s", rt.storage, exc)
        send(_encode(request, "ERROR", internal(
            f"unable to encode watch object: {exc}").status()))
    finally:
        store.stop_watch(watcher)


def _bookmark(store: Store, watcher: Watcher, request: WatchRequest, send: SendEvent,
              last_rv: int) -> None:
    """Send a BOOKMARK: the store's version when nothing is queued, else the last event's
    (so a busy stream whose events the selector filters out still moves its client on)."""
    rv = store.bookmark(watcher) or last_rv
    if not rv:
        return
    send(_encode(request, "BOOKMARK", _bookmark_object(request.rt, rv, False)))


def _bookmark_object(rt: ResourceType, rv: int, initial_end: bool) -> JSON:
    metadata: JSON = {"resourceVersion": str(rv)}
    if initial_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": metadata}


def _dumps(document: JSON) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _encode(request: WatchRequest, kind: str, obj: JSON) -> bytes:
    """One event (an ERROR or BOOKMARK, never cached) in the stream's encoding."""
    if request.protobuf:
        return protobuf.watch_frame(kind, protobuf.encode(obj))
    return _dumps({"type": kind, "object": obj}) + b"\n"


def _event(request: WatchRequest, event: Event, kind: str, obj: JSON) -> bytes:
    """The event in the stream's encoding.  Every stream of the same API version and
    encoding sends the same object, so it is encoded once per event, not once per
    watcher (a pod's event goes to every component watching pods)."""
    if request.table:
        return _dumps({"type": kind, "object": to_table(
            request.rt, [obj], {"resourceVersion": obj["metadata"].get("resourceVersion", "")},
            request.include_object)}) + b"\n"
    key = f"{request.rt.api_version}/{request.rt.kind}"
    if request.protobuf:
        key = f"protobuf:{key}"
    body = event.encoded.get(key)
    if body is None:
        body = event.encoded[key] = protobuf.encode(obj) if request.protobuf else _dumps(obj)
    if request.protobuf:
        return protobuf.watch_frame(kind, body)
    return b'{"type":' + json.dumps(kind).encode() + b',"object":' + body + b"}\n"
