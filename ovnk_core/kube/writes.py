"""A controller's own recent writes, until its informer shows them.

After a controller creates, updates or deletes an object, its informer shows
the change a moment later.  A reconcile that runs in between (the source of
the object changed again) would otherwise act on the stale cache: create a
second copy of an object it just created, or delete again what is already
gone.  Like kube-scheduler's assume cache, ``RecentWrites`` remembers each
write and overlays it on the cache until the informer has caught up (it shows
the same or a newer ``resourceVersion``, or the deletion).

Resource versions are compared as integers, as kube-scheduler does; if one is
not an integer, the cache counts as caught up once it shows any version other
than the one this cache remembers being replaced.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ovnk_core.kube.client import JSON
from ovnk_core.kube.resources import object_key


@dataclass(frozen=True)
class _Write:
    obj: JSON
    deleted: bool


def _version(obj: JSON) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion") or "")


def caught_up(cached: JSON, written: JSON) -> bool:
    """True if ``cached`` is the written version of the object or a later one."""
    seen, wrote = _version(cached), _version(written)
    try:
        return int(seen) >= int(wrote)
    except ValueError:
        return seen == wrote


class RecentWrites:
    """The objects one controller wrote that its informer may not show yet."""

    def __init__(self) -> None:
        self._writes: dict[str, _Write] = {}
        self._lock = threading.Lock()

    def wrote(self, obj: JSON) -> None:
        """Remember ``obj`` as the API server returned it from a create or update."""
        with self._lock:
            self._writes[object_key(obj)] = _Write(obj, deleted=False)

    def deleted(self, obj: JSON) -> None:
        """Remember that ``obj`` (as last seen) was deleted."""
        with self._lock:
            self._writes[object_key(obj)] = _Write(obj, deleted=True)

    def pending(self) -> int:
        with self._lock:
            return len(self._writes)

    def observe(self, _event: str, _old: JSON | None, new: JSON | None) -> None:
        """Informer handler: forget writes the cache now shows."""
        if new is None:
            if _old is not None:
                with self._lock:
                    write = self._writes.get(object_key(_old))
                    if write is not None and write.deleted:
                        del self._writes[object_key(_old)]
            return
        with self._lock:
            write = self._writes.get(object_key(new))
            if write is not None and not write.deleted and caught_up(new, write.obj):
                del self._writes[object_key(new)]

    def overlay(self, cached: Iterable[JSON], belongs: Callable[[JSON], bool],
                lookup: Callable[[str], JSON | None]) -> list[JSON]:
        """``cached`` (the informer's answer to some query) as it is after our writes.

        :param cached: objects the informer returned for the query.
        :param belongs: whether an object answers the query (applied to remembered writes).
        :param lookup: the informer's current object for a key (to see if it caught up).
        """
        view = {object_key(obj): obj for obj in cached}
        with self._lock:
            for key, write in list(self._writes.items()):
                current = lookup(key)
                if write.deleted:
                    if current is None:
                        del self._writes[key]
                    else:
                        view.pop(key, None)
                    continue
                if current is not None and caught_up(current, write.obj):
                    del self._writes[key]
                    continue
                if belongs(write.obj):
                    view[key] = write.obj
                else:
                    view.pop(key, None)
        return [view[key] for key in sorted(view)]
