"""Events on the objects a controller acts on, deduplicated like client-go's recorder.

The first occurrence of (object, type, reason, message) creates a core/v1
Event; repeats bump its ``count`` and ``lastTimestamp`` instead of creating
new ones, so a failure retried with backoff shows as one event with a count.
Recording never raises: an event that cannot be written is logged and the
controller carries on.  A message quoting text users wrote is made valid Unicode
first (``embedded_json.printable``): the API server refuses a lone surrogate.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable

from ovnk_core.embedded_json import printable
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.conditions import now_rfc3339
from ovnk_core.kube.decoding import Undecodable
from ovnk_core.kube.errors import ApiError, NotFound
from ovnk_core.kube.resources import EVENTS, Resource

log = logging.getLogger(__name__)

NORMAL, WARNING = "Normal", "Warning"
UNDECODABLE_REASON = "UndecodableObject"


def object_reference(obj: JSON) -> JSON:
    meta = obj.get("metadata") or {}
    ref = {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""),
           "name": meta.get("name", ""), "uid": meta.get("uid", ""),
           "resourceVersion": meta.get("resourceVersion", "")}
    if meta.get("namespace"):
        ref["namespace"] = meta["namespace"]
    return ref


class EventRecorder:
    """Writes deduplicated Events for one component (``source.component``)."""

    def __init__(self, client: KubeClient, component: str, host: str = "",
                 cache_size: int = 4096) -> None:
        self.client = client
        self.component = component
        self.host = host
        self.cache_size = cache_size
        self._seen: OrderedDict[tuple[str, str, str, str], tuple[str, str, int]] = OrderedDict()
        self._lock = threading.Lock()

    def event(self, obj: JSON, event_type: str, reason: str, message: str) -> None:
        ref = object_reference(obj)
        namespace = ref.get("namespace") or "default"
        message = printable(message)
        key = (ref["uid"] or f"{ref['kind']}/{namespace}/{ref['name']}", event_type, reason,
               message)
        now = now_rfc3339()
        with self._lock:
            previous = self._seen.get(key)
        try:
            if previous is not None:
                name, ns, count = previous
                try:
                    self.client.patch(EVENTS, name, {"count": count + 1, "lastTimestamp": now},
                                      namespace=ns)
                    self._remember(key, (name, ns, count + 1))
                    return
                except NotFound:
                    pass  # expired or deleted: create a fresh one
            created = self.client.create(EVENTS, {
                "metadata": {"generateName": f"{ref['name']}.", "namespace": namespace},
                "involvedObject": ref, "type": event_type, "reason": reason,
                "message": message, "count": 1, "firstTimestamp": now, "lastTimestamp": now,
                "source": {"component": self.component, "host": self.host},
                "reportingComponent": self.component, "reportingInstance": self.host,
            }, namespace=namespace)
            self._remember(key, (created["metadata"]["name"], namespace, 1))
        except ApiError as exc:
            log.warning("event %s %s on %s/%s not recorded: %s", event_type, reason,
                        namespace, ref["name"], exc)

    def _remember(self, key: tuple[str, str, str, str], value: tuple[str, str, int]) -> None:
        with self._lock:
            self._seen[key] = value
            self._seen.move_to_end(key)
            while len(self._seen) > self.cache_size:
                self._seen.popitem(last=False)


def undecodable_reporter(recorder: EventRecorder) -> Callable[[Resource, Undecodable], None]:
    """An informer's ``on_undecodable``: a Warning event on the object that cannot be
    decoded, or a log line when not even its name can be read."""
    def report(resource: Resource, item: Undecodable) -> None:
        what = f"{resource.kind} {item.key or '(name unreadable)'}"
        message = f"{what} cannot be decoded ({item.reason}); it is skipped until it changes"
        log.warning("%s", message)
        if not item.name:
            return
        obj = {"apiVersion": resource.api_version, "kind": resource.kind,
               "metadata": dict(item.obj.get("metadata") or {})}
        recorder.event(obj, WARNING, UNDECODABLE_REASON, message)
    return report
