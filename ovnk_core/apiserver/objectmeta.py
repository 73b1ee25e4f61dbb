"""ObjectMeta rules every kind shares: names, labels, timestamps, uids, generateName.

Kept apart from the per-kind strategies so that the name and label messages
(copied from apimachinery's validation package) exist once, and so the
small helpers for walking dotted paths are shared by selectors, tables and
strategies.
"""

from __future__ import annotations

import copy
import random
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from ovnk_core.apiserver.errors import JSON, FieldError

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + r"(\." + _DNS1123_LABEL + ")*"
_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_VALUE = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?"
_QUALIFIED_NAME = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    f"used for validation is '{_DNS1123_SUBDOMAIN}')")
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    f"regex used for validation is '{_DNS1123_LABEL}')")
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    f"'abc-123', regex used for validation is '{_DNS1035_LABEL}')")
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    f"'my_value',  or '12345', regex used for validation is '{_LABEL_VALUE}')")
QUALIFIED_NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    f"used for validation is '{_QUALIFIED_NAME}')")

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_rng = random.SystemRandom()


def _full(pattern: str, value: str) -> bool:
    return re.fullmatch(pattern, value) is not None


def name_errors(name: str, rule: str, prefix: bool = False) -> list[str]:
    """Problems of ``name`` under ``rule`` (``subdomain``, ``label``, ``dns1035``, ``path``).

    ``prefix``: ``name`` is a ``generateName``, checked as apimachinery checks a prefix: a
    trailing ``-`` is allowed (its ``maskTrailingDash`` replaces the last two characters by
    ``a``) and a path-segment prefix may be ``.`` or ``..``.
    """
    if rule == "path":
        if name in (".", "..") and not prefix:
            return [f"may not be '{name}'"]
        return [f"may not contain '{c}'" for c in "/%" if c in name]
    if prefix and len(name) > 1 and name.endswith("-"):
        name = name[:-2] + "a"
    if rule == "label":
        problems = [] if _full(_DNS1123_LABEL, name) else [LABEL_MSG]
        limit = 63
    elif rule == "dns1035":
        problems = [] if _full(_DNS1035_LABEL, name) else [DNS1035_MSG]
        limit = 63
    else:
        problems = [] if _full(_DNS1123_SUBDOMAIN, name) else [SUBDOMAIN_MSG]
        limit = 253
    if len(name) > limit:
        problems.insert(0, f"must be no more than {limit} characters")
    return problems


def validate_labels(labels: Any, path: str = "metadata.labels") -> list[FieldError]:
    """Label keys (qualified names) and values, with the real server's messages."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [FieldError("Invalid", path, labels, "must be a map of strings")]
    errors: list[FieldError] = []
    for key, value in labels.items():
        errors += [FieldError("Invalid", path, key, msg) for msg in qualified_name_errors(key)]
        if not isinstance(value, str):
            errors.append(FieldError("Invalid", path, value, "must be a string"))
            continue
        if len(value) > 63:
            errors.append(FieldError("Invalid", path, value,
                                     "must be no more than 63 characters"))
        if not _full(_LABEL_VALUE, value):
            errors.append(FieldError("Invalid", path, value, LABEL_VALUE_MSG))
    return errors


def qualified_name_errors(key: str) -> list[str]:
    """Problems of a label key or annotation key (``prefix/name``)."""
    prefix, _, name = key.rpartition("/")
    problems: list[str] = []
    if "/" in prefix or (not prefix and key.startswith("/")):
        return ["a qualified name " + QUALIFIED_NAME_MSG.replace("name part ", "")]
    if prefix:
        problems += ["prefix part " + msg for msg in name_errors(prefix, "subdomain")]
    if not name:
        problems.append("name part must be non-empty")
    else:
        if len(name) > 63:
            problems.append("name part must be no more than 63 characters")
        if not _full(_QUALIFIED_NAME, name):
            problems.append(QUALIFIED_NAME_MSG)
    return problems


def validate_annotations(annotations: Any) -> list[FieldError]:
    """Annotation keys must be qualified names and values strings."""
    if annotations is None:
        return []
    if not isinstance(annotations, dict):
        return [FieldError("Invalid", "metadata.annotations", annotations,
                           "must be a map of strings")]
    errors: list[FieldError] = []
    for key, value in annotations.items():
        errors += [FieldError("Invalid", "metadata.annotations", key, msg)
                   for msg in qualified_name_errors(key)]
        if not isinstance(value, str):
            errors.append(FieldError("Invalid", f"metadata.annotations[{key}]", value,
                                     "must be a string"))
    return errors


def generated_name(prefix: str) -> str:
    """``generateName`` plus five random characters, as the real server does."""
    return prefix[:58] + "".join(_rng.choice(_GENERATE_ALPHABET) for _ in range(5))


def now_rfc3339() -> str:
    """The current UTC time as Kubernetes writes timestamps."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(value: str) -> datetime | None:
    """A Kubernetes timestamp as an aware datetime (``None`` if malformed)."""
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def new_uid() -> str:
    """A fresh ``metadata.uid``."""
    return str(uuid.uuid4())


def deep(obj: JSON) -> JSON:
    """A private copy of a stored object (stored objects are never mutated)."""
    return copy.deepcopy(obj)


def meta(obj: JSON) -> JSON:
    """``obj["metadata"]``, created when missing."""
    value = obj.get("metadata")
    if not isinstance(value, dict):
        value = {}
        obj["metadata"] = value
    return value


def dig(obj: Any, path: str) -> Any:
    """The value at a dotted path (``spec.nodeName``), ``None`` when any step is missing."""
    current = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return None
        current = current.get(part)
    return current


def key_of(obj: JSON) -> str:
    """``namespace/name`` or ``name``: the object key used in log messages."""
    m = obj.get("metadata") or {}
    namespace = m.get("namespace")
    return f"{namespace}/{m.get('name')}" if namespace else str(m.get("name"))
