"""Decoding API replies one object at a time, so one undecodable object stops nothing.

A real kube-apiserver stores objects nested up to 10,000 levels deep; Python
gives out at about a thousand (``jsondepth``).  Decoded as one document, a
list holding one such object fails whole, and a watch replays the event that
cannot be decoded forever: no object of that resource would ever be seen
again.  So a list is decoded item by item and a watch event on its own, and
an object nested deeper than ``jsondepth.MAX_DEPTH`` becomes an
``Undecodable``: its identity (kind, namespace, name, uid, resourceVersion),
read from a copy with the deep parts cut away, and the reason — enough to
report it on the object and move past it.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from ovnk_core import jsondepth
from ovnk_core.kube.errors import ApiError

JSON = dict[str, Any]

# A JSON string token (escapes included) or a bracket: what the depth cutter looks at.
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_IDENTITY_FIELDS = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")


class UndecodableResponse(ApiError):
    """A reply whose body cannot be decoded (nested too deeply)."""

    def __init__(self, what: str, problem: str) -> None:
        super().__init__(0, "Undecodable", f"{what}: the reply cannot be decoded: {problem}")


@dataclass(frozen=True)
class Undecodable:
    """One object that could not be decoded: who it is (as far as that could be read)."""

    reason: str
    obj: JSON = field(default_factory=dict)  # apiVersion, kind and scalar metadata only
    event_type: str = ""  # the watch event that carried it

    @property
    def name(self) -> str:
        return str(self.obj.get("metadata", {}).get("name") or "")

    @property
    def key(self) -> str:
        """``namespace/name`` (or ``name``), empty when the name could not be read."""
        meta = self.obj.get("metadata", {})
        if not self.name:
            return ""
        return f"{meta['namespace']}/{self.name}" if meta.get("namespace") else self.name

    @property
    def resource_version(self) -> str:
        return str(self.obj.get("metadata", {}).get("resourceVersion") or "")


def identity(obj: Any) -> JSON:
    """``apiVersion``, ``kind`` and the scalar identity fields of ``metadata``."""
    if not isinstance(obj, dict):
        return {}
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    result: JSON = {k: obj[k] for k in ("apiVersion", "kind") if isinstance(obj.get(k), str)}
    result["metadata"] = {k: meta[k] for k in _IDENTITY_FIELDS if isinstance(meta.get(k), str)}
    return result


def cut_deep(data: bytes, limit: int, replacement: bytes = b"null") -> bytes:
    """``data`` (a JSON document) with every array or object that starts deeper than
    ``limit`` levels replaced by ``replacement``: decodable at any original depth."""
    out: list[bytes] = []
    level = 0
    kept_from = 0
    cut_from: int | None = None
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token in (b"[", b"{"):
            level += 1
            if level == limit + 1 and cut_from is None:
                cut_from = match.start()
        elif token in (b"]", b"}"):
            if level == limit + 1 and cut_from is not None:
                out += [data[kept_from:cut_from], replacement]
                kept_from = match.end()
                cut_from = None
            level -= 1
    out.append(data[kept_from:])
    return b"".join(out)


def decode_object(data: bytes, what: str) -> Any:
    """One whole reply (an object or a Status).

    :raises UndecodableResponse: it nests deeper than ``jsondepth.MAX_DEPTH``.
    """
    try:
        return jsondepth.loads(data)
    except jsondepth.TooDeep as exc:
        raise UndecodableResponse(what, str(exc)) from None


def decode_list(data: bytes, what: str) -> tuple[JSON, list[Undecodable]]:
    """A list reply, with the items that cannot be decoded taken out and returned apart."""
    limit = jsondepth.MAX_DEPTH
    try:
        document = json.loads(data)
        marker = None
    except RecursionError:
        marker = f"ovnk-cut-{uuid.uuid4().hex}"
        document = json.loads(cut_deep(data, limit + 2, json.dumps(marker).encode()))
    if not isinstance(document, dict):
        raise UndecodableResponse(what, "not a JSON object")
    items = document.get("items")
    if not isinstance(items, list):
        return document, []
    if marker is None and not jsondepth.may_exceed(data, limit):
        return document, []
    kept, skipped = [], []
    problem = str(jsondepth.TooDeep(limit))
    for item in items:
        if (marker is not None and _holds(item, marker)) or jsondepth.depth(item, limit) > limit:
            skipped.append(Undecodable(problem, identity(item)))
        else:
            kept.append(item)
    document["items"] = kept
    return document, skipped


def decode_event(line: bytes) -> JSON | Undecodable:
    """One watch event (``{"type": ..., "object": ...}``); an object that cannot be decoded
    gives an ``Undecodable`` carrying the event's type.

    :raises ValueError: the line is not JSON at all (a broken stream, not a bad object).
    """
    limit = jsondepth.MAX_DEPTH
    problem = str(jsondepth.TooDeep(limit))
    try:
        event = json.loads(line)
    except RecursionError:
        shallow = json.loads(cut_deep(line, limit + 1))
        if not isinstance(shallow, dict):
            raise ValueError("a watch event must be a JSON object") from None
        return Undecodable(problem, identity(shallow.get("object")),
                           str(shallow.get("type") or ""))
    if not isinstance(event, dict):
        raise ValueError("a watch event must be a JSON object")
    obj = event.get("object")
    if jsondepth.may_exceed(line, limit) and jsondepth.depth(obj, limit) > limit:
        return Undecodable(problem, identity(obj), str(event.get("type") or ""))
    return event


def _holds(value: Any, marker: str) -> bool:
    """Whether ``marker`` is one of the strings in ``value`` (iterative)."""
    stack = [value]
    while stack:
        current = stack.pop()
        if current == marker:
            return True
        if isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return False


__all__ = ["Undecodable", "UndecodableResponse", "cut_deep", "decode_event", "decode_list",
           "decode_object", "identity"]
