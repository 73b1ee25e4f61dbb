"""What an object's annotations say, worked out once per version of the object.

Some annotations grow with the cluster: a Node's ``k8s.ovn.org/node-subnets`` has an entry
per network.  A controller that re-parses it for every pod or every network it reconciles
spends work per event that grows with the number of networks; keyed by the object's
``resourceVersion`` (which changes whenever the object does), one parse per version serves
them all.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from ovnk_core.kube.client import JSON
from ovnk_core.kube.resources import object_key

T = TypeVar("T")


def resource_version(obj: JSON) -> object:
    return (obj.get("metadata") or {}).get("resourceVersion") or None


def annotations_version(*names: str) -> Callable[[JSON], object]:
    """A version that changes only when one of the annotations ``names`` does: an object
    rewritten for other reasons (a Node's status heartbeat) keeps what was parsed."""
    def version(obj: JSON) -> object:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        return tuple(annotations.get(name) for name in names)
    return version


class ParsedByVersion(Generic[T]):
    """``parse(obj)`` computed once per version of each object.

    ``version(obj)`` says which version an object is (default: its ``resourceVersion``;
    ``annotations_version`` for a parse that reads only some annotations).  The value
    returned is shared by every caller: treat it as read-only.  An object whose version is
    ``None`` (one built in memory, without a resourceVersion) is parsed every time; a
    ``parse`` that raises caches nothing.
    """

    def __init__(self, parse: Callable[[JSON], T],
                 version: Callable[[JSON], object] = resource_version) -> None:
        self._parse = parse
        self._version = version
        self._lock = threading.Lock()
        self._values: dict[str, tuple[object, T]] = {}  # object key → (version, value)

    def get(self, obj: JSON) -> T:
        version = self._version(obj)
        if version is None:
            return self._parse(obj)
        key = object_key(obj)
        with self._lock:
            cached = self._values.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        value = self._parse(obj)
        with self._lock:
            self._values[key] = (version, value)
        return value

    def forget(self, key: str) -> None:
        """Drop what is kept for the object ``key`` (it was deleted)."""
        with self._lock:
            self._values.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)
