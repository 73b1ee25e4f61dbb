"""Status conditions, merged the Kubernetes way.

Conditions are keyed by ``type``; setting one replaces the entry of that type
and keeps the others.  ``lastTransitionTime`` changes only when ``status``
changes, so a condition that keeps failing for the same reason does not look
new on every reconcile, and an unchanged set produces no write at all.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.resources import Resource


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Condition:
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str


def merge_condition(conditions: list[JSON], condition: Condition, now: str,
                    observed_generation: int | None = None) -> tuple[list[JSON], bool]:
    """Return the new list and whether anything changed."""
    result = copy.deepcopy(conditions)
    for index, existing in enumerate(result):
        if existing.get("type") != condition.type:
            continue
        updated = dict(existing, status=condition.status, reason=condition.reason,
                       message=condition.message)
        if existing.get("status") != condition.status or not existing.get("lastTransitionTime"):
            updated["lastTransitionTime"] = now
        if observed_generation is not None:
            updated["observedGeneration"] = observed_generation
        result[index] = updated
        return result, updated != existing
    entry: JSON = {"type": condition.type, "status": condition.status,
                   "reason": condition.reason, "message": condition.message,
                   "lastTransitionTime": now}
    if observed_generation is not None:
        entry["observedGeneration"] = observed_generation
    result.append(entry)
    return result, True


def set_conditions(client: KubeClient, resource: Resource, obj: JSON,
                   conditions: list[Condition], now: str | None = None) -> JSON | None:
    """Merge ``conditions`` into ``obj``'s status and write them through the status
    subresource; returns the updated object, or ``None`` when nothing changed."""
    status: dict[str, Any] = obj.get("status") or {}
    merged = list(status.get("conditions") or [])
    changed = False
    stamp = now or now_rfc3339()
    for condition in conditions:
        merged, one_changed = merge_condition(merged, condition, stamp)
        changed = changed or one_changed
    if not changed:
        return None
    meta = obj["metadata"]
    patch = {"metadata": {"resourceVersion": meta.get("resourceVersion")},
             "status": {"conditions": merged}}
    return client.patch_status(resource, meta["name"], patch, meta.get("namespace"))


def get_condition(obj: JSON, condition_type: str) -> JSON | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return dict(condition)
    return None
