"""ObjectMeta rules every kind shares: names, labels, timestamps, uids, generateName.

Kept apart from the per-kind strategies so that the name and label messages
(copied from apimachinery's validation package) exist once, and so the
small helpers for walking dotted paths are shared by selectors, tables and
strategies.
"""

from __future__ import annotations

import copy
import random
import uuid
from datetime import UTC, datetime
from typing import Any

from ovnk_core.kube.names import LABEL_VALUE, LABEL_VALUE_MSG, full_match, qualified_name_errors
from ovnk_local.apiserver.errors import JSON, FieldError

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_rng = random.SystemRandom()


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
        if not full_match(LABEL_VALUE, value):
            errors.append(FieldError("Invalid", path, value, LABEL_VALUE_MSG))
    return errors


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
