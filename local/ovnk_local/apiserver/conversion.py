"""Conversion between a stored object and the version a client asked for.

Objects are stored once per storage key.  Custom resources served in more
than one version are converted by rewriting ``apiVersion`` only (the CRD
``None`` conversion strategy).  ``events.k8s.io/v1`` Events share storage
with core ``v1`` Events, exactly as upstream, so an Event recorded through
either API shows in both (``kubectl get events`` included); their field
names are mapped here.
"""

from __future__ import annotations

from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.resources import ResourceType

# events.k8s.io/v1 field -> core v1 field
_EVENT_FIELDS = {
    "regarding": "involvedObject", "note": "message", "reportingController": "reportingComponent",
    "deprecatedSource": "source", "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp", "deprecatedCount": "count",
}
_CORE_FIELDS = {v: k for k, v in _EVENT_FIELDS.items()}


def _is_events_api(rt: ResourceType) -> bool:
    return rt.group == "events.k8s.io"


def to_storage(rt: ResourceType, obj: JSON) -> JSON:
    """The stored form of ``obj`` received through ``rt`` (a new dict)."""
    if not _is_events_api(rt):
        return obj
    stored = {_EVENT_FIELDS.get(k, k): v for k, v in obj.items()}
    stored["apiVersion"], stored["kind"] = "v1", "Event"
    return stored


def from_storage(rt: ResourceType, obj: JSON) -> JSON:
    """``obj`` as a client of ``rt`` sees it (the stored dict is not modified)."""
    if _is_events_api(rt):
        served = {_CORE_FIELDS.get(k, k): v for k, v in obj.items()}
    elif obj.get("apiVersion") == rt.api_version and obj.get("kind") == rt.kind:
        return obj
    else:
        served = dict(obj)
    served["apiVersion"], served["kind"] = rt.api_version, rt.kind
    return served
