"""CustomResourceDefinitions: their validation, defaults and status, and the kinds they serve.

Creating or updating a CRD makes its group/versions servable at once (the
real server's Established condition is set immediately); deleting it goes
through the ``customresourcecleanup.apiextensions.k8s.io`` finalizer, which
the deletion engine releases after every instance is gone.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.kube.names import name_errors
from ovnk_local.apiserver.errors import JSON, OMIT, FieldError
from ovnk_local.apiserver.objectmeta import now_rfc3339
from ovnk_local.apiserver.resources import PrinterColumn, ResourceType, version_priority

CRD_STORAGE = "apiextensions.k8s.io/customresourcedefinitions"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
SCOPES = ("Cluster", "Namespaced")


def default_crd(crd: JSON) -> None:
    """The defaults the real API server fills in on a CRD."""
    spec = crd.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    names = spec.setdefault("names", {})
    if isinstance(names, dict) and names.get("kind"):
        names.setdefault("singular", str(names["kind"]).lower())
        names.setdefault("listKind", f"{names['kind']}List")
    spec.setdefault("conversion", {"strategy": "None"})
    for version in spec.get("versions") or []:
        if isinstance(version, dict):
            version.setdefault("served", True)
            version.setdefault("storage", False)


def validate_crd(crd: JSON, old: JSON | None) -> list[FieldError]:
    """Structural checks on a CRD, with the field paths the real server reports."""
    spec: Any = crd.get("spec")
    if not isinstance(spec, dict):
        return [FieldError("Required", "spec", OMIT)]
    errors: list[FieldError] = []
    group, names = spec.get("group"), spec.get("names") or {}
    if not group:
        errors.append(FieldError("Required", "spec.group", OMIT))
    elif "." not in str(group):
        errors.append(FieldError("Invalid", "spec.group", group,
                                 "should be a domain with at least one dot"))
    for field in ("plural", "kind"):
        if not names.get(field):
            errors.append(FieldError("Required", f"spec.names.{field}", OMIT))
    if names.get("plural"):
        errors += [FieldError("Invalid", "spec.names.plural", names["plural"], p)
                   for p in name_errors(str(names["plural"]), "label")]
    if spec.get("scope") not in SCOPES:
        errors.append(FieldError("NotSupported", "spec.scope", spec.get("scope"),
                                 supported=SCOPES) if spec.get("scope") else
                      FieldError("Required", "spec.scope", OMIT))
    name = crd["metadata"].get("name")
    if group and names.get("plural") and name != f"{names['plural']}.{group}":
        errors.append(FieldError("Invalid", "metadata.name", name,
                                 'must be spec.names.plural+"."+spec.group'))
    errors += _validate_versions(spec.get("versions"))
    if old is not None:
        old_spec = old.get("spec") or {}
        for field in ("group", "scope"):
            if spec.get(field) != old_spec.get(field):
                errors.append(FieldError("Invalid", f"spec.{field}", spec.get(field),
                                         "field is immutable"))
    return errors


def _validate_versions(versions: Any) -> list[FieldError]:
    if not versions or not isinstance(versions, list):
        return [FieldError("Invalid", "spec.versions", OMIT, "must have exactly one version "
                           "marked as storage version")]
    errors: list[FieldError] = []
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
    if len(storage) != 1:
        errors.append(FieldError("Invalid", "spec.versions", OMIT,
                                 "must have exactly one version marked as storage version"))
    for index, version in enumerate(versions):
        path = f"spec.versions[{index}]"
        if not isinstance(version, dict) or not version.get("name"):
            errors.append(FieldError("Required", f"{path}.name", OMIT))
            continue
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if not isinstance(schema, dict):
            errors.append(FieldError("Required", f"{path}.schema.openAPIV3Schema", OMIT,
                                     "schemas are required"))
        elif schema.get("type") != "object":
            errors.append(FieldError("Invalid", f"{path}.schema.openAPIV3Schema.type",
                                     schema.get("type"), "must be object at the root"))
    return errors


def set_status(crd: JSON, old: JSON | None) -> None:
    """NamesAccepted and Established right away, acceptedNames and storedVersions."""
    now = now_rfc3339()
    previous = {c.get("type"): c for c in ((old or {}).get("status") or {}).get("conditions")
                or []}
    conditions = []
    for kind, reason, message in (
            ("NamesAccepted", "NoConflicts", "no conflicts found"),
            ("Established", "InitialNamesAccepted", "the initial names have been accepted")):
        before = previous.get(kind) or {}
        conditions.append({"type": kind, "status": "True", "reason": reason,
                           "message": message,
                           "lastTransitionTime": before.get("lastTransitionTime", now)})
    if "Terminating" in previous:
        conditions.append(previous["Terminating"])
    spec = crd["spec"]
    stored = list(((old or {}).get("status") or {}).get("storedVersions") or [])
    for version in spec.get("versions") or []:
        if version.get("storage") and version["name"] not in stored:
            stored.append(version["name"])
    crd["status"] = {"conditions": conditions, "acceptedNames": dict(spec.get("names") or {}),
                     "storedVersions": stored}


def terminating(crd: JSON) -> JSON:
    """A copy of ``crd`` with the Terminating condition set."""
    status = dict(crd.get("status") or {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Terminating"]
    conditions.append({"type": "Terminating", "status": "True",
                       "reason": "InstanceDeletionInProgress",
                       "message": "CustomResource deletion is in progress",
                       "lastTransitionTime": now_rfc3339()})
    status["conditions"] = conditions
    return {**crd, "status": status}


def types_from_crd(crd: JSON) -> list[ResourceType]:
    """One ``ResourceType`` per served version of ``crd``."""
    spec, name = crd.get("spec") or {}, crd["metadata"]["name"]
    names = spec.get("names") or {}
    group, plural = spec["group"], names["plural"]
    types = []
    versions = sorted((v for v in spec.get("versions") or [] if v.get("served", True)),
                      key=lambda v: version_priority(v["name"]))
    for version in versions:
        subresources = version.get("subresources") or {}
        columns = tuple(
            PrinterColumn(c.get("name", ""), c.get("type", "string"), c.get("jsonPath", ""),
                          c.get("description", ""), int(c.get("priority", 0)),
                          c.get("format", ""))
            for c in version.get("additionalPrinterColumns") or [])
        types.append(ResourceType(
            group, version["name"], plural, names.get("singular") or names["kind"].lower(),
            names["kind"], spec.get("scope") == "Namespaced",
            tuple(names.get("shortNames") or ()), tuple(names.get("categories") or ()),
            subresources=("status",) if "status" in subresources else (),
            schema=(version.get("schema") or {}).get("openAPIV3Schema"),
            printer_columns=columns, crd=name))
    return types
