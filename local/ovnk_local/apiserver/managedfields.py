"""``metadata.managedFields``: which manager wrote which fields, recorded on every write.

An approximation of the real server's field tracking, enough to see who
touched an object (``kubectl get --show-managed-fields``): an ``Update`` entry
claims the fields the write added or changed (merged with what the manager
claimed before), an ``Apply`` entry claims exactly the fields of the applied
configuration.  Lists are tracked as a whole, ownership is never taken away
from other managers, and nothing here causes apply conflicts.
"""

from __future__ import annotations

from typing import Any

from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.objectmeta import now_rfc3339

_UNTRACKED_META = frozenset(("name", "namespace", "generateName", "uid", "resourceVersion",
                             "generation", "creationTimestamp", "deletionTimestamp",
                             "deletionGracePeriodSeconds", "managedFields", "selfLink"))


def _fields(old: Any, new: Any, top: bool = False) -> JSON:
    """The FieldsV1 set of what ``new`` sets that ``old`` did not (``old=None``: all)."""
    if not isinstance(new, dict):
        return {}
    result: JSON = {}
    for key, value in new.items():
        if top and key in ("apiVersion", "kind"):
            continue
        before = old.get(key) if isinstance(old, dict) else None
        if old is not None and before == value:
            continue
        if top and key == "metadata":
            inner = {k: v for k, v in (value or {}).items() if k not in _UNTRACKED_META}
            old_inner = None if old is None else {
                k: v for k, v in (before or {}).items() if k not in _UNTRACKED_META}
            child = _fields(old_inner, inner)
            if child:
                result["f:metadata"] = child
            continue
        result[f"f:{key}"] = _fields(None if old is None else before, value) \
            if isinstance(value, dict) else {}
    return result


def _union(left: JSON, right: JSON) -> JSON:
    merged = dict(left)
    for key, value in right.items():
        merged[key] = _union(merged.get(key) or {}, value) if value else merged.get(key, {})
    return merged


def record(obj: JSON, old: JSON | None, manager: str, operation: str, api_version: str,
           subresource: str = "", applied: JSON | None = None) -> None:
    """Update ``obj``'s managedFields in place for a write by ``manager``."""
    if applied is not None:
        claimed = _fields(None, applied, top=True)
    else:
        claimed = _fields(old, obj, top=True)
    entries: list[JSON] = [dict(e) for e in ((old or {}).get("metadata") or {}).get(
        "managedFields") or [] if isinstance(e, dict)]
    mine = next((e for e in entries if e.get("manager") == manager
                 and e.get("operation") == operation
                 and e.get("subresource", "") == subresource), None)
    if mine is None:
        if not claimed:
            obj["metadata"]["managedFields"] = entries
            return
        mine = {"manager": manager, "operation": operation}
        entries.append(mine)
    elif operation == "Update":
        claimed = _union(mine.get("fieldsV1") or {}, claimed)
    mine.update(apiVersion=api_version, time=now_rfc3339(), fieldsType="FieldsV1",
                fieldsV1=claimed)
    if subresource:
        mine["subresource"] = subresource
    obj["metadata"]["managedFields"] = entries


def manager_from_user_agent(user_agent: str) -> str:
    """The real server's default manager name: the User-Agent up to the first ``/``."""
    return (user_agent.split("/", 1)[0].strip() or "unknown")[:128]
