"""The REST semantics of every served kind, independent of HTTP.

create / get / list / update / patch / delete / deletecollection with the
real server's rules: generateName, uid and timestamps, a monotonic
resourceVersion, generation bumps on spec changes only, status through the
status subresource only, optimistic concurrency (409 on a stale
resourceVersion), no-op updates not written, pruning and schema validation
of custom resources honouring ``fieldValidation``, admission hooks, the
namespace lifecycle (404 for a missing namespace, 403 while terminating) and
deletion through ``gc.Lifecycle``.  Updates follow the real server's
"guaranteed update" loop: build the new object from the current one outside
the lock (hooks may be slow), then commit only if nothing changed meanwhile.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ovnk_core import jsondepth
from ovnk_local.apiserver import crds, managedfields, nesting, strategy
from ovnk_local.apiserver.admission import AdmissionRegistry
from ovnk_local.apiserver.authn import UserInfo
from ovnk_local.apiserver.conversion import from_storage, to_storage
from ovnk_local.apiserver.errors import (
    JSON,
    FieldError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    method_not_allowed,
    not_found,
)
from ovnk_local.apiserver.gc import NAMESPACES, POLICIES, Lifecycle
from ovnk_local.apiserver.go_json import DecodeError, message_for, round_trip
from ovnk_local.apiserver.objectmeta import generated_name, key_of, meta, new_uid, now_rfc3339
from ovnk_local.apiserver.patch import APPLY, apply_patch, decode_patch
from ovnk_local.apiserver.resources import ResourceRegistry, ResourceType
from ovnk_local.apiserver.selectors import matcher
from ovnk_local.apiserver.services import ServiceAllocator
from ovnk_local.apiserver.store import Store
from ovnk_local.apiserver.text import check_unicode
from ovnk_local.apiserver.validation import check_custom_resource

log = logging.getLogger(__name__)

_EXPIRED_CONTINUE = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted "
    "between the time the first chunk was returned and now may show up in the list.")


@dataclass
class WriteOptions:
    """Query options of a write: ``dryRun``, ``fieldValidation``, ``fieldManager``."""

    dry_run: bool = False
    field_validation: str = "Warn"
    field_manager: str = "unknown"
    operation: str = "Update"
    applied: JSON | None = None
    # who asks (admission hooks registered ``with_user`` see it); None: the server itself
    user: UserInfo | None = None


@dataclass
class Result:
    obj: JSON
    code: int = 200
    warnings: list[str] = field(default_factory=list)


class Api:
    """The operations of the server, shared by every HTTP request thread."""

    def __init__(self, store: Store, registry: ResourceRegistry, admission: AdmissionRegistry,
                 allocator: ServiceAllocator) -> None:
        self.store = store
        self.registry = registry
        self.admission = admission
        self.allocator = allocator
        self.lifecycle = Lifecycle(store, registry)

    # -- reads -----------------------------------------------------------------------------
    def _load(self, rt: ResourceType, namespace: str, name: str) -> JSON:
        obj = self.store.get(rt.storage, namespace if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.group, rt.plural, name)
        return obj

    def get(self, rt: ResourceType, namespace: str, name: str) -> JSON:
        """One object as the client of ``rt`` sees it; 404 when absent."""
        return from_storage(rt, self._load(rt, namespace, name))

    def list_collection(self, rt: ResourceType, namespace: str,
                        label_selector: str | None = None, field_selector: str | None = None,
                        limit: int = 0, continue_token: str | None = None) -> JSON:
        """A ``<Kind>List``; ``limit``/``continue`` page through it by object key."""
        matches = matcher(label_selector, field_selector)
        stored, rv = self.store.objects(rt.storage, namespace or None)
        start = ""
        if continue_token:
            token_rv, start = _decode_continue(continue_token)
            self.store.check_not_compacted(token_rv, _EXPIRED_CONTINUE)
            rv = token_rv
        items = []
        for obj in stored:
            served = from_storage(rt, obj)
            if (start and _sort_key(obj) <= start) or not matches(served):
                continue
            items.append(served)
        list_meta: JSON = {"resourceVersion": str(rv)}
        if limit and len(items) > limit:
            list_meta["continue"] = _encode_continue(rv, _sort_key(items[limit - 1]))
            list_meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": list_meta,
                "items": items}

    # -- create ----------------------------------------------------------------------------
    def create(self, rt: ResourceType, namespace: str, body: Any,
               options: WriteOptions) -> Result:
        """POST: create ``body`` in ``namespace`` (201), honouring generateName and dryRun."""
        obj = self._decode_object(rt, body)
        m = meta(obj)
        if rt.namespaced and m.get("namespace") and m["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        strategy.prepare_create(rt, obj, namespace)
        m.pop("managedFields", None)
        if not m.get("name") and m.get("generateName"):
            m["name"] = generated_name(str(m["generateName"]))
        self._check_namespace(rt, namespace, str(m.get("name") or ""))
        if rt.storage == crds.CRD_STORAGE:
            crds.default_crd(obj)
            finalizers = list(m.get("finalizers") or [])
            if crds.CLEANUP_FINALIZER not in finalizers:
                m["finalizers"] = [*finalizers, crds.CLEANUP_FINALIZER]
        obj = self.admission.mutate(rt, "", "CREATE", obj, None, options.user)
        warnings = self._validate(rt, obj, None, options)
        m = meta(obj)
        self.admission.validate(rt, "", "CREATE", from_storage(rt, obj), None,
                                options.user, options.dry_run)
        with self.store.lock:
            self._check_namespace(rt, namespace, m["name"])
            if self.store.get(rt.storage, m.get("namespace") or "", m["name"]) is not None:
                raise already_exists(rt.group, rt.plural, m["name"])
            self._commit_rules(rt, obj, None)
            m.update(uid=new_uid(), creationTimestamp=now_rfc3339(), generation=1)
            managedfields.record(obj, None, options.field_manager, options.operation,
                                 rt.api_version, applied=options.applied)
            if options.dry_run:
                return Result(from_storage(rt, obj), 201, warnings)
            stored = self.store.put(rt.storage, obj)
            self._after_commit(rt, stored)
        log.info("created %s %s (rv %s)", rt.plural, key_of(stored),
                 stored["metadata"]["resourceVersion"])
        return Result(from_storage(rt, stored), 201, warnings)

    def _decode_object(self, rt: ResourceType, body: Any) -> JSON:
        check_unicode(body)
        if not isinstance(body, dict):
            raise bad_request(f"the body of the request could not be decoded as a {rt.kind}")
        api_version = body.get("apiVersion")
        if api_version and api_version != rt.api_version:
            raise bad_request(f"the API version in the data ({api_version}) does not match the "
                              f"expected API version ({rt.api_version})")
        if body.get("kind") and body["kind"] != rt.kind:
            raise bad_request(f"the kind in the data ({body['kind']}) does not match the "
                              f"expected kind ({rt.kind})")
        obj = to_storage(rt, copy.deepcopy(body))
        _coerce_meta_strings(rt, obj)
        _go_decode(rt, obj)
        return obj

    def _check_namespace(self, rt: ResourceType, namespace: str, name: str) -> None:
        if rt.crd:
            crd = self.store.get(crds.CRD_STORAGE, "", rt.crd)
            if crd is not None and crd["metadata"].get("deletionTimestamp"):
                raise method_not_allowed(
                    "create not allowed while custom resource definition is terminating")
        if not rt.namespaced:
            return
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            raise not_found("", "namespaces", namespace)
        if ns["metadata"].get("deletionTimestamp"):
            raise forbidden(rt.group, rt.plural, name,
                            f"unable to create new content in namespace {namespace} because "
                            "it is being terminated",
                            causes=[{"reason": "NamespaceTerminating",
                                     "message": f"namespace {namespace} is being terminated",
                                     "field": "metadata.namespace"}])

    def _validate(self, rt: ResourceType, obj: JSON, old: JSON | None,
                  options: WriteOptions) -> list[str]:
        """Prune/default/validate; returns warnings, raises 400 (Strict) or 422."""
        unknown: list[str] = []
        errors: list[FieldError] = []
        if rt.custom:
            errors, unknown = check_custom_resource(obj, rt.schema)
        else:
            _through_go_types(rt, obj, unknown)
        errors = (strategy.validate_meta(rt, obj) + errors
                  + strategy.validate_builtin(rt, obj, old))
        if rt.storage == crds.CRD_STORAGE:
            errors += crds.validate_crd(obj, old)
        if old is not None:
            errors += strategy.immutable_meta_errors(old, obj)
            errors += strategy.new_finalizers_errors(old, obj)
        warnings = [f'unknown field "{path}"' for path in unknown]
        if unknown and options.field_validation == "Strict":
            raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                              f"{rt.kind}: strict decoding error: " + ", ".join(warnings))
        if errors:
            raise invalid(rt.group, rt.kind, str(obj["metadata"].get("name") or ""), errors)
        return warnings if options.field_validation == "Warn" else []

    def _commit_rules(self, rt: ResourceType, obj: JSON, old: JSON | None) -> None:
        """Checks and allocations that need the lock (ClusterIPs, CRD status)."""
        if rt.storage == "/services":
            others = [s for s in self.store.objects("/services")[0]
                      if s["metadata"].get("uid") != obj["metadata"].get("uid")]
            errors = self.allocator.prepare(obj, old, others)
            if errors:
                raise invalid(rt.group, rt.kind, obj["metadata"]["name"], errors)
        if rt.storage == crds.CRD_STORAGE:
            crds.set_status(obj, old)

    def _after_commit(self, rt: ResourceType, stored: JSON) -> None:
        if rt.storage == crds.CRD_STORAGE and not stored["metadata"].get("deletionTimestamp"):
            self.registry.replace_crd(stored["metadata"]["name"], crds.types_from_crd(stored))
        self.lifecycle.settle(rt.storage, stored)

    # -- update / patch --------------------------------------------------------------------
    def update(self, rt: ResourceType, namespace: str, name: str, body: Any,
               options: WriteOptions, subresource: str = "") -> Result:
        """PUT: replace the object (or its ``status``/``finalize`` subresource)."""
        new = self._decode_object(rt, body)
        m = meta(new)
        if m.get("name") and m["name"] != name:
            raise bad_request(f"the name of the object ({m['name']}) does not match the name "
                              f"on the URL ({name})")
        if rt.namespaced and m.get("namespace") and m["namespace"] != namespace:
            raise bad_request("the namespace of the provided object does not match the "
                              "namespace sent on the request")
        precondition = str(m.get("resourceVersion") or "")
        return self._guaranteed_update(rt, namespace, name, subresource, options,
                                       lambda _current: copy.deepcopy(new), precondition)

    def patch(self, rt: ResourceType, namespace: str, name: str, body: bytes,
              content_type: str, options: WriteOptions, subresource: str = "") -> Result:
        """PATCH with any supported patch type; apply creates a missing object."""
        patch = decode_patch(body, content_type)
        if content_type == APPLY and subresource == "":
            with self.store.lock:
                exists = self.store.get(rt.storage, namespace if rt.namespaced else "", name)
            if exists is None:
                if not isinstance(patch, dict):
                    raise bad_request("apply patch must be a YAML or JSON object")
                metadata = patch.get("metadata")
                metadata = metadata if isinstance(metadata, dict) else {}
                obj = {**patch, "metadata": {**metadata, "name": metadata.get("name") or name}}
                _check_name(rt, obj, namespace, name)
                return self.create(rt, namespace, obj, dataclasses.replace(
                    options, operation="Apply", applied=patch))
        if content_type == APPLY and isinstance(patch, dict):
            options = dataclasses.replace(options, operation="Apply", applied=patch)

        def build(current: JSON) -> JSON:
            patched = apply_patch(from_storage(rt, current), patch, content_type,
                                  rt.merge_keys, rt.custom)
            nesting.check_patched(patched)
            _check_name(rt, patched, namespace, name)
            stored = to_storage(rt, patched)
            _go_decode(rt, stored)
            return stored

        # A patch is conditional only when it names a resourceVersion itself; otherwise a
        # concurrent write makes the server patch the newer object again, never a Conflict.
        stated = patch.get("metadata") if isinstance(patch, dict) else None
        precondition = str(stated.get("resourceVersion") or "") if isinstance(stated, dict) \
            else ""
        return self._guaranteed_update(rt, namespace, name, subresource, options, build,
                                       precondition, conditional_body=False)

    def _guaranteed_update(self, rt: ResourceType, namespace: str, name: str, subresource: str,
                           options: WriteOptions, build: Callable[[JSON], JSON],
                           precondition: str, conditional_body: bool = True) -> Result:
        """Write ``build(current)`` unless the object changed meanwhile (then build again);
        Conflict only for a write that is conditional: ``precondition``, or with
        ``conditional_body`` the resourceVersion of the body built (an update's)."""
        for _attempt in range(32):
            current = self._load(rt, namespace, name)
            new = build(current)
            m = meta(new)
            m.pop("managedFields", None)
            stated_rv = str(m.get("resourceVersion") or "") if conditional_body else ""
            wanted_rv = stated_rv or precondition
            if wanted_rv and wanted_rv != current["metadata"]["resourceVersion"]:
                raise conflict(rt.group, rt.plural, name)
            new = strategy.prepare_update(rt, new, current, subresource)
            if rt.storage == crds.CRD_STORAGE and subresource == "":
                crds.default_crd(new)
            new = self.admission.mutate(rt, subresource, "UPDATE", new, current,
                                         options.user)
            warnings = self._validate(rt, new, current, options)
            self.admission.validate(rt, subresource, "UPDATE", from_storage(rt, new),
                                    from_storage(rt, current), options.user,
                                    options.dry_run)
            with self.store.lock:
                latest = self._load(rt, namespace, name)
                if latest["metadata"]["resourceVersion"] != current["metadata"][
                        "resourceVersion"]:
                    if wanted_rv:
                        raise conflict(rt.group, rt.plural, name)
                    continue
                self._commit_rules(rt, new, current)
                if strategy.same_content(current, new):
                    return Result(from_storage(rt, current), 200, warnings)
                if strategy.spec_changed(rt, current, new):
                    new["metadata"]["generation"] = int(current["metadata"].get(
                        "generation") or 0) + 1
                managedfields.record(new, current, options.field_manager, options.operation,
                                     rt.api_version, subresource, options.applied)
                if options.dry_run:
                    return Result(from_storage(rt, new), 200, warnings)
                if new["metadata"].get("deletionTimestamp") and not new["metadata"].get(
                        "finalizers") and not (rt.storage == NAMESPACES and (
                        new.get("spec") or {}).get("finalizers")):
                    final = self.lifecycle.remove(rt.storage, new)
                    self.lifecycle.settle(rt.storage, final)
                    return Result(from_storage(rt, final), 200, warnings)
                stored = self.store.put(rt.storage, new)
                self._after_commit(rt, stored)
            log.info("updated %s %s%s (rv %s)", rt.plural, key_of(stored),
                     f" ({subresource})" if subresource else "",
                     stored["metadata"]["resourceVersion"])
            return Result(from_storage(rt, stored), 200, warnings)
        raise conflict(rt.group, rt.plural, name)

    # -- delete ----------------------------------------------------------------------------
    def delete(self, rt: ResourceType, namespace: str, name: str, delete_options: JSON,
               options: WriteOptions) -> Result:
        """DELETE with DeleteOptions (propagationPolicy, preconditions)."""
        policy = _policy(delete_options)
        preconditions = delete_options.get("preconditions") or {}
        current = self._load(rt, namespace, name)
        _check_preconditions(rt, current, preconditions)
        self.admission.validate(rt, "", "DELETE", None, from_storage(rt, current),
                                options.user, options.dry_run)
        with self.store.lock:
            latest = self._load(rt, namespace, name)
            _check_preconditions(rt, latest, preconditions)
            if options.dry_run:
                return Result(from_storage(rt, latest))
            result = self.lifecycle.delete(rt.storage, latest, policy)
        return Result(from_storage(rt, result))

    def delete_collection(self, rt: ResourceType, namespace: str, label_selector: str | None,
                          field_selector: str | None, delete_options: JSON,
                          options: WriteOptions) -> JSON:
        """DELETE on a collection: delete every selected object, return them."""
        listing = self.list_collection(rt, namespace, label_selector, field_selector)
        deleted = []
        for item in listing["items"]:
            m = item["metadata"]
            try:
                result = self.delete(rt, m.get("namespace") or "", m["name"], delete_options,
                                     options)
            except Exception as exc:  # one failure must not stop the rest
                log.warning("deletecollection %s: %s %s: %s", rt.plural, m.get("namespace"),
                            m["name"], exc)
                continue
            deleted.append(result.obj)
        return {**listing, "items": deleted}


def go_type(rt: ResourceType) -> str | None:
    """The Go type (its protobuf message) a built-in kind is stored as (``go_json``), None
    for custom resources."""
    if rt.custom:
        return None
    if rt.storage == "/events":  # events.k8s.io Events are stored as core Events
        return message_for("v1", "Event")
    return message_for(rt.api_version, rt.kind)


def _go_decode(rt: ResourceType, obj: JSON, unknown: list[str] | None = None) -> JSON | None:
    """``obj`` decoded into the kind's Go type and encoded again (None for a kind without
    one); 400 when it does not decode, as a body kube-apiserver cannot read.  Done first on
    what a request brings (so defaults and hooks never see a malformed object), and again
    on what is stored."""
    type_key = go_type(rt)
    if type_key is None:
        return None
    try:
        return round_trip(type_key, obj, unknown)
    except DecodeError as exc:
        raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                          f"{rt.kind}: {exc}") from None


def _through_go_types(rt: ResourceType, obj: JSON, unknown: list[str]) -> None:
    """``obj`` (in place) as kube-apiserver stores it: every field without ``omitempty``
    present, zero ``omitempty`` fields and unknown fields gone (listed in ``unknown``)."""
    decoded = _go_decode(rt, obj, unknown)
    if decoded is not None:
        obj.clear()
        obj.update(decoded)


_GO_JSON_TYPES = ((bool, "bool"), (int, "number"), (float, "number"), (list, "array"),
                  (dict, "object"))


def _coerce_meta_strings(rt: ResourceType, obj: JSON) -> None:
    """``metadata.name``, ``generateName`` and ``namespace`` must be strings, never a number
    that would pass the name rule once printed.  A built-in kind's body then does not
    decode (400, Go's words); a custom resource loses the malformed field, as
    apiextensions' ``GetObjectMeta(dropMalformedFields)`` drops it."""
    m = obj.get("metadata")
    if not isinstance(m, dict):
        return
    for key in ("name", "generateName", "namespace"):
        value = m.get(key)
        if value is None:
            m.pop(key, None)
            continue
        if isinstance(value, str):
            continue
        kind = next((name for python, name in _GO_JSON_TYPES if isinstance(value, python)),
                    None)
        if kind is None:  # a YAML scalar (a date): a string once converted to JSON
            m[key] = str(value)
        elif rt.custom:
            m.pop(key)
        else:
            raise bad_request(f'{rt.kind} in version "{rt.version}" cannot be handled as a '
                              f"{rt.kind}: json: cannot unmarshal {kind} into Go struct field "
                              f"ObjectMeta.metadata.{key} of type string")


def _check_name(rt: ResourceType, obj: JSON, namespace: str, name: str) -> None:
    """A patched (or apply-created) object must keep the name and namespace of its URL
    (apiserver's ``checkName``): 400 otherwise, never a silent rename or a new key."""
    m = obj.get("metadata")
    m = m if isinstance(m, dict) else {}
    obj_name = m.get("name")
    if obj_name != name:
        raise bad_request(f"the name of the object ({obj_name or ''}) does not match the name "
                          f"on the URL ({name})")
    obj_namespace = m.get("namespace")
    if rt.namespaced and namespace and obj_namespace and obj_namespace != namespace:
        raise bad_request(f"the namespace of the object ({obj_namespace}) does not match the "
                          f"namespace on the request ({namespace})")


def _policy(delete_options: JSON) -> str:
    policy = delete_options.get("propagationPolicy")
    if policy is None:
        return "Orphan" if delete_options.get("orphanDependents") is True else "Background"
    if policy not in POLICIES:
        raise invalid("meta.k8s.io", "DeleteOptions", "", [FieldError(
            "NotSupported", "propagationPolicy", policy, supported=POLICIES)])
    return str(policy)


def _check_preconditions(rt: ResourceType, obj: JSON, preconditions: JSON) -> None:
    m, name = obj["metadata"], obj["metadata"]["name"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != m.get("uid"):
        raise conflict(rt.group, rt.plural, name, f"Precondition failed: UID in precondition: "
                       f"{uid}, UID in object meta: {m.get('uid')}")
    if rv and rv != m.get("resourceVersion"):
        raise conflict(rt.group, rt.plural, name, "Precondition failed: ResourceVersion in "
                       f"precondition: {rv}, ResourceVersion in object meta: "
                       f"{m.get('resourceVersion')}")


def _sort_key(obj: JSON) -> str:
    m = obj.get("metadata") or {}
    return f"{m.get('namespace') or ''}/{m.get('name')}"


def _encode_continue(rv: int, start: str) -> str:
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str) -> tuple[int, str]:
    try:
        data = jsondepth.loads(base64.urlsafe_b64decode(token.encode()))  # never recursion
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError) as exc:
        raise bad_request(f"continue key is not valid: {exc}") from exc

