"""Label and field selectors, parsed once per request and matched against objects.

Label selectors support the full set-based grammar (``=``, ``==``, ``!=``,
``in``, ``notin``, ``exists``, ``!key``, ``gt``/``lt``).  Field selectors
support ``=``, ``==`` and ``!=`` on any dotted path (the real server only
allows a per-kind list; we allow every simple path, with a missing field
reading as the empty string, as ``spec.nodeName=`` does upstream).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovnk_core.kube.names import qualified_name_errors
from ovnk_local.apiserver.errors import JSON, bad_request
from ovnk_local.apiserver.objectmeta import dig

_SET_TERM = re.compile(r"^(\S+)\s+(in|notin)\s*\((.*)\)$", re.DOTALL)
_OP_TERM = re.compile(r"^([^=!<>\s]+)\s*(==|=|!=|<|>)\s*(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Requirement:
    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "==", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        if not present:
            return False
        try:
            number, bound = int(str(value)), int(self.values[0])
        except ValueError:
            return False
        return number > bound if self.op == ">" else number < bound


def _split_terms(text: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [t.strip() for t in terms if t.strip()]


def _check_key(key: str, selector: str) -> None:
    problems = qualified_name_errors(key)
    if problems:
        raise bad_request(f'unable to parse requirement: <nil>: Invalid value: "{key}": '
                          f"{problems[0]} (in selector {selector!r})")


def parse_label_selector(text: str | None) -> list[Requirement]:
    """Parse a ``labelSelector`` query value; raises 400 BadRequest when malformed."""
    requirements: list[Requirement] = []
    for term in _split_terms(text or ""):
        if term.startswith("!"):
            key = term[1:].strip()
            _check_key(key, text or "")
            requirements.append(Requirement(key, "!"))
            continue
        match = _SET_TERM.match(term)
        if match:
            key, op, values = match.groups()
            _check_key(key, text or "")
            items = tuple(v.strip() for v in values.split(",") if v.strip())
            requirements.append(Requirement(key, op, items))
            continue
        match = _OP_TERM.match(term)
        if match:
            key, op, value = match.groups()
            _check_key(key, text or "")
            value = value.strip()
            if op in "<>" and not value.lstrip("-").isdigit():
                raise bad_request(f"unable to parse requirement: for 'gt', 'lt' operators, the "
                                  f"value must be an integer (in selector {text!r})")
            requirements.append(Requirement(key, op, (value,)))
            continue
        if re.search(r"\s", term):
            raise bad_request(f"unable to parse requirement: found '{term}', expected: "
                              f"',', '!=', '==', '=', 'in', 'notin'")
        _check_key(term, text or "")
        requirements.append(Requirement(term, "exists"))
    return requirements


def _unescape_split(text: str, separators: str) -> list[str]:
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in separators:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


@dataclass(frozen=True)
class FieldRequirement:
    path: str
    negate: bool
    value: str

    def matches(self, obj: JSON) -> bool:
        return (field_string(dig(obj, self.path)) == self.value) != self.negate


def field_string(value: Any) -> str:
    """A field's value as field selectors compare it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(text: str | None) -> list[FieldRequirement]:
    """Parse a ``fieldSelector`` query value; raises 400 BadRequest when malformed."""
    requirements: list[FieldRequirement] = []
    if not text:
        return requirements
    for term in _split_escaped_commas(text):
        term = term.strip()
        if not term:
            continue
        for op in ("!=", "==", "="):
            index = term.find(op)
            if index > 0:
                path, value = term[:index].strip(), term[index + len(op):]
                value = "".join(_unescape_split(value, ""))
                requirements.append(FieldRequirement(path, op == "!=", value))
                break
        else:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
    return requirements


def _split_escaped_commas(text: str) -> list[str]:
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += "\\" + char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ",":
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


Matcher = Callable[[JSON], bool]


def matcher(label_selector: str | None, field_selector: str | None) -> Matcher:
    """One predicate for both selectors (always true when both are empty)."""
    labels = parse_label_selector(label_selector)
    fields = parse_field_selector(field_selector)

    def matches(obj: JSON) -> bool:
        obj_labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(r.matches(obj_labels) for r in labels) and all(f.matches(obj) for f in fields)

    return matches
