"""JSON nesting depth, bounded wherever JSON from outside is decoded.

Python's ``json``, ``copy.deepcopy``, ``==`` and every recursive walk fail on a
document nested about a thousand levels deep — with ``RecursionError``, which
is not a ``ValueError``, so "invalid JSON" handlers let it through — and at a
depth that depends on how deep the caller's own stack already is.  One such
object in a list, a watch or a NAD's CNI config must be one bad object, not a
crashed informer.  So JSON that ovnk does not control is decoded with
``loads`` here: a document nested deeper than a fixed limit is ``TooDeep``
(a ``ValueError``, with a message saying so), whatever the stack.
"""

from __future__ import annotations

import json
from typing import Any

# Deepest document ovnk's clients process: far beyond any real Kubernetes object (CRD
# schemas are ~20 levels deep) and far below where Python's recursion gives out.
MAX_DEPTH = 200


class TooDeep(ValueError):
    """A JSON document nested deeper than the limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"nested deeper than {limit} levels")
        self.limit = limit


def depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply ``value`` nests dicts and lists (a scalar is 0, ``{}`` is 1); counting
    stops past ``limit`` (the result is then ``limit + 1``).  Iterative: any depth is safe."""
    if not isinstance(value, dict | list):
        return 0
    deepest = 1
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        container, level = stack.pop()
        if level > deepest:
            deepest = level
            if deepest > limit:
                return limit + 1
        children = container.values() if isinstance(container, dict) else container
        for child in children:
            if isinstance(child, dict | list):
                stack.append((child, level + 1))
    return deepest


def check(value: Any, limit: int = MAX_DEPTH) -> None:
    """:raises TooDeep: ``value`` nests deeper than ``limit``."""
    if depth(value, limit) > limit:
        raise TooDeep(limit)


def loads(data: str | bytes | bytearray, limit: int = MAX_DEPTH) -> Any:
    """``json.loads``, except that a document nested deeper than ``limit`` raises
    ``TooDeep`` (never ``RecursionError``).

    :raises ValueError: not JSON (``json.JSONDecodeError``) or too deep (``TooDeep``).
    """
    try:
        value = json.loads(data)
    except RecursionError:
        raise TooDeep(limit) from None
    if may_exceed(data, limit):
        check(value, limit)
    return value


def may_exceed(data: str | bytes | bytearray, limit: int) -> bool:
    """Whether ``data`` has enough brackets to nest deeper than ``limit`` (a cheap count
    that spares the walk for nearly every document)."""
    if isinstance(data, str):
        return data.count("{") + data.count("[") > limit
    return data.count(b"{") + data.count(b"[") > limit


__all__ = ["MAX_DEPTH", "TooDeep", "check", "depth", "loads", "may_exceed"]
