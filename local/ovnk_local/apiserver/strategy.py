"""Per-kind create/update rules: server-owned metadata, status handling, defaults, checks.

This is the local counterpart of the real server's registry strategies:
what a create resets (pods start Pending, a CR's status is dropped when it
has a status subresource), what an update may not change (uid, creation
time, deletion state, status through the main resource or anything but
status, and for pods and nodes metadata, through ``/status``), when
``metadata.generation`` moves, and the small amount of built-in validation
clients rely on.
"""

from __future__ import annotations

from collections.abc import Callable

from ovnk_core.kube.names import name_errors
from ovnk_local.apiserver.apps import (
    default_daemonset,
    default_deployment,
    validate_daemonset,
    validate_deployment,
)
from ovnk_local.apiserver.errors import JSON, OMIT, FieldError, go_value
from ovnk_local.apiserver.network_kinds import (
    default_endpoints,
    default_network_policy,
    validate_endpoints,
    validate_network_policy,
)
from ovnk_local.apiserver.objectmeta import meta, validate_annotations, validate_labels
from ovnk_local.apiserver.podspec import default_pod_spec, pod_spec_errors, qos_class
from ovnk_local.apiserver.resources import ResourceType
from ovnk_local.apiserver.secrets import prepare_secret, validate_secret
from ovnk_local.apiserver.webhook_configs import default_configuration, validate_configuration

SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp",
                 "deletionGracePeriodSeconds", "generation", "selfLink")
IMMUTABLE_META = ("uid", "creationTimestamp", "deletionTimestamp",
                  "deletionGracePeriodSeconds", "generation", "name", "namespace")
NS_NAME_LABEL = "kubernetes.io/metadata.name"
FINALIZER_KUBERNETES = "kubernetes"
# core kinds whose /status writes keep the request's metadata (labels, annotations) as the
# real pod and node status strategies do; other kinds' status writes change status only
# (namespaces and services also keep it in a real cluster; not here, so that the UDN
# namespace label rule cannot be bypassed through namespaces/status)
STATUS_KEEPS_METADATA = ("Pod", "Node")


def prepare_create(rt: ResourceType, obj: JSON, namespace: str) -> None:
    """Reset what a client may not set on create and apply the kind's defaults."""
    m = meta(obj)
    for field in SERVER_FIELDS:
        m.pop(field, None)
    if rt.namespaced:
        m["namespace"] = namespace
    else:
        m.pop("namespace", None)
    obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
    if rt.custom and rt.has_status:
        obj.pop("status", None)
    apply_defaults(rt, obj)
    if rt.group:
        if rt.has_status and not rt.custom:
            obj.pop("status", None)  # a workload's status is its controller's
        return
    if rt.kind == "Namespace":
        finalizers = list((obj.get("spec") or {}).get("finalizers") or [])
        if FINALIZER_KUBERNETES not in finalizers:
            finalizers.append(FINALIZER_KUBERNETES)
        obj["spec"] = {**(obj.get("spec") or {}), "finalizers": finalizers}
        obj["status"] = {"phase": "Active"}
        m["labels"] = {**(m.get("labels") or {}), NS_NAME_LABEL: m.get("name", "")}
    elif rt.kind == "Pod":
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj.get("spec"))}
    elif rt.kind == "Service":
        obj["status"] = {"loadBalancer": {}}


def _default_pod(pod: JSON) -> None:
    default_pod_spec(pod.setdefault("spec", {}))


# the defaults of a kind (its ``SetDefaults_*``), applied whenever an object of it is written
DEFAULTS: dict[tuple[str, str], Callable[[JSON], None]] = {
    ("", "Pod"): _default_pod,
    ("", "Secret"): prepare_secret,
    ("", "Endpoints"): default_endpoints,
    ("apps", "Deployment"): default_deployment,
    ("apps", "DaemonSet"): default_daemonset,
    ("networking.k8s.io", "NetworkPolicy"): default_network_policy,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): default_configuration,
}


def apply_defaults(rt: ResourceType, obj: JSON) -> None:
    """The kind's defaults, in place (custom resources get theirs from their schema)."""
    default = None if rt.custom else DEFAULTS.get((rt.group, rt.kind))
    if default is not None:
        default(obj)


def prepare_update(rt: ResourceType, new: JSON, old: JSON, subresource: str) -> JSON:
    """The object to store for an update of ``old`` to ``new`` through ``subresource``."""
    if subresource == "finalize":
        result = {**old, "metadata": dict(old["metadata"])}
        finalizers = (new.get("spec") or {}).get("finalizers") or []
        result["spec"] = {**(old.get("spec") or {}), "finalizers": finalizers}
        return result
    if subresource == "status":
        result = {k: v for k, v in old.items() if k != "status"}
        result["metadata"] = dict(old["metadata"])
        if not rt.group and rt.kind in STATUS_KEEPS_METADATA:
            result["metadata"] = _status_metadata(rt, meta(new), old["metadata"])
        if "status" in new:
            result["status"] = new["status"]
        return result
    m, old_meta = meta(new), old["metadata"]
    for field in IMMUTABLE_META:
        if field in old_meta:
            m[field] = old_meta[field]
        else:
            m.pop(field, None)
    m.pop("selfLink", None)
    new["apiVersion"], new["kind"] = old.get("apiVersion", rt.api_version), rt.kind
    apply_defaults(rt, new)
    if rt.has_status:
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)
    if not rt.group and rt.kind == "Namespace":
        new["spec"] = {**(new.get("spec") or {}),
                       "finalizers": (old.get("spec") or {}).get("finalizers") or []}
        m["labels"] = {**(m.get("labels") or {}), NS_NAME_LABEL: old_meta["name"]}
    return new


def _status_metadata(rt: ResourceType, new_meta: JSON, old_meta: JSON) -> JSON:
    """The metadata a ``pods/status`` or ``nodes/status`` write stores: the request's, as
    the real pod and node status strategies keep it (they reset only the spec), with the
    immutable fields of the stored object; pods also keep their ownerReferences."""
    result = {k: v for k, v in new_meta.items() if k not in (*IMMUTABLE_META, "selfLink")}
    for field in IMMUTABLE_META:
        if field in old_meta:
            result[field] = old_meta[field]
    if rt.kind == "Pod":
        result.pop("ownerReferences", None)
        if "ownerReferences" in old_meta:
            result["ownerReferences"] = old_meta["ownerReferences"]
    return result


def spec_changed(rt: ResourceType, old: JSON, new: JSON) -> bool:
    """Whether anything outside metadata (and status, with a status subresource) changed."""
    skip = {"metadata", "status"} if rt.has_status else {"metadata"}
    strip = {"apiVersion", "kind"}
    return ({k: v for k, v in old.items() if k not in skip | strip}
            != {k: v for k, v in new.items() if k not in skip | strip})


def same_content(old: JSON, new: JSON) -> bool:
    """True when an update would change nothing (such updates are not written)."""
    def strip(obj: JSON) -> JSON:
        m = {k: v for k, v in (obj.get("metadata") or {}).items()
             if k not in ("resourceVersion", "managedFields")}
        return {**{k: v for k, v in obj.items() if k != "apiVersion"}, "metadata": m}
    return strip(old) == strip(new)


def immutable_meta_errors(old: JSON, new: JSON) -> list[FieldError]:
    """The name and namespace an update (after mutating admission) may not change."""
    errors = []
    for field in ("name", "namespace"):
        value = new["metadata"].get(field)
        if value != old["metadata"].get(field):
            errors.append(FieldError("Invalid", f"metadata.{field}", value,
                                     "field is immutable"))
    return errors


def new_finalizers_errors(old: JSON, new: JSON) -> list[FieldError]:
    """Finalizers may only be removed while an object is being deleted."""
    if not old["metadata"].get("deletionTimestamp"):
        return []
    before = set(old["metadata"].get("finalizers") or [])
    added = sorted(set(new["metadata"].get("finalizers") or []) - before)
    if not added:
        return []
    listing = ", ".join(go_value(f) for f in added)
    return [FieldError("Forbidden", "metadata.finalizers", OMIT,
                       "no new finalizers can be added if the object is being deleted, found "
                       f"new finalizers []string{{{listing}}}")]


def validate_meta(rt: ResourceType, obj: JSON) -> list[FieldError]:
    """generateName, name, namespace, labels, annotations and owner references of any kind,
    in the order of apimachinery's ``ValidateObjectMetaAccessor`` (the name by the kind's
    rule, the namespace as a DNS label)."""
    m = obj["metadata"]
    errors: list[FieldError] = []
    generate = m.get("generateName")
    if generate:
        errors += [FieldError("Invalid", "metadata.generateName", generate, problem)
                   for problem in name_errors(str(generate), rt.name_rule, prefix=True)]
    name = m.get("name")
    if not name:
        errors.append(FieldError("Required", "metadata.name", OMIT,
                                 "name or generateName is required"))
    else:
        errors += [FieldError("Invalid", "metadata.name", name, problem)
                   for problem in name_errors(str(name), rt.name_rule)]
    namespace = m.get("namespace")
    if rt.namespaced and namespace:
        errors += [FieldError("Invalid", "metadata.namespace", namespace, problem)
                   for problem in name_errors(str(namespace), "label")]
    errors += validate_labels(m.get("labels"))
    errors += validate_annotations(m.get("annotations"))
    for index, ref in enumerate(m.get("ownerReferences") or []):
        path = f"metadata.ownerReferences[{index}]"
        for field in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(field):
                # 1.36's words: only the apiVersion's message names what is empty
                detail = "version must not be empty" if field == "apiVersion" \
                    else "must not be empty"
                errors.append(FieldError("Invalid", f"{path}.{field}", "", detail))
    return errors


def _validate_pod(pod: JSON, _old: JSON | None) -> list[FieldError]:
    return pod_spec_errors(pod.get("spec"), "spec")


def _validate_endpoint_slice(obj: JSON, _old: JSON | None) -> list[FieldError]:
    kinds = ("IPv4", "IPv6", "FQDN")
    value = obj.get("addressType")
    if not value:
        return [FieldError("Required", "addressType", OMIT)]
    if value not in kinds:
        return [FieldError("NotSupported", "addressType", value, supported=kinds)]
    return []


def _validate_service(svc: JSON, _old: JSON | None) -> list[FieldError]:
    return _service_errors(svc)


# the built-in checks of a kind that clients depend on (required fields, enums, formats)
VALIDATORS: dict[tuple[str, str], Callable[[JSON, JSON | None], list[FieldError]]] = {
    ("", "Pod"): _validate_pod,
    ("", "Service"): _validate_service,
    ("", "Secret"): validate_secret,
    ("", "Endpoints"): validate_endpoints,
    ("discovery.k8s.io", "EndpointSlice"): _validate_endpoint_slice,
    ("apps", "Deployment"): validate_deployment,
    ("apps", "DaemonSet"): validate_daemonset,
    ("networking.k8s.io", "NetworkPolicy"): validate_network_policy,
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): validate_configuration,
}


def validate_builtin(rt: ResourceType, obj: JSON, old: JSON | None = None) -> list[FieldError]:
    """The kind's built-in checks (``VALIDATORS``); ``old`` on an update."""
    check = None if rt.custom else VALIDATORS.get((rt.group, rt.kind))
    return check(obj, old) if check is not None else []


def _service_errors(svc: JSON) -> list[FieldError]:
    spec = svc.get("spec") or {}
    types = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
    kind = spec.get("type", "ClusterIP")
    if kind not in types:
        return [FieldError("NotSupported", "spec.type", kind, supported=types)]
    if kind != "ExternalName" and spec.get("clusterIP") != "None" and not spec.get("ports"):
        return [FieldError("Required", "spec.ports", OMIT)]
    errors: list[FieldError] = []
    for index, port in enumerate(spec.get("ports") or []):
        number = port.get("port") if isinstance(port, dict) else None
        if not isinstance(number, int) or not 1 <= number <= 65535:
            errors.append(FieldError("Invalid", f"spec.ports[{index}].port", number,
                                     "must be between 1 and 65535, inclusive"))
    return errors
