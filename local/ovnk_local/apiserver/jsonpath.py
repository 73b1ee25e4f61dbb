"""The JSONPath subset CRD printer columns use (``.status.conditions[?(@.type=="Ready")].status``).

Supported steps: ``.field``, ``['field']``, ``[n]``, ``[*]`` and equality
filters ``[?(@.a.b=="x")]`` / ``!=``.  Enough for ``additionalPrinterColumns``
as CRDs write them; the result is every matching value, in order.
"""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(
    r"""\.(?P<field>[A-Za-z0-9_\-$]+)"""
    r"""|\[(?P<quoted>'[^']*'|"[^"]*")\]"""
    r"""|\[(?P<index>-?\d+|\*)\]"""
    r"""|\[\?\(@(?P<path>(\.[A-Za-z0-9_\-]+)+)\s*(?P<op>==|!=)\s*(?P<value>'[^']*'|"[^"]*"|[^)]*)\)\]"""
    r"""|\.\*""")


def _steps(expression: str) -> list[re.Match[str]]:
    text = expression.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    text = text.lstrip("$")
    steps, position = [], 0
    while position < len(text):
        match = _STEP.match(text, position)
        if match is None:
            raise ValueError(f"unsupported JSONPath {expression!r} at {text[position:]!r}")
        steps.append(match)
        position = match.end()
    return steps


def _literal(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _field(node: Any, path: str) -> Any:
    for part in path.strip(".").split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def find(obj: Any, expression: str) -> list[Any]:
    """Every value ``expression`` selects in ``obj`` (empty when nothing matches)."""
    nodes = [obj]
    for step in _steps(expression):
        found: list[Any] = []
        groups = step.groupdict()
        for node in nodes:
            if groups["field"] is not None or groups["quoted"] is not None:
                name = groups["field"] or _literal(groups["quoted"] or "")
                if isinstance(node, dict) and name in node:
                    found.append(node[name])
            elif groups["index"] is not None:
                if groups["index"] == "*":
                    found += node if isinstance(node, list) else list(
                        node.values()) if isinstance(node, dict) else []
                elif isinstance(node, list):
                    index = int(groups["index"])
                    if -len(node) <= index < len(node):
                        found.append(node[index])
            elif groups["path"] is not None:
                wanted = _literal(groups["value"] or "")
                for item in node if isinstance(node, list) else []:
                    equal = _scalar(_field(item, groups["path"])) == wanted
                    if equal == (groups["op"] == "=="):
                        found.append(item)
            else:
                found += list(node.values()) if isinstance(node, dict) else (
                    node if isinstance(node, list) else [])
        nodes = found
    return nodes
