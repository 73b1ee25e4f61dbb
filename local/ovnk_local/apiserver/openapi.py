"""``/openapi/v3``: just enough OpenAPI for kubectl to hand validation to the server.

kubectl's apply/create/patch validate by default.  When the group-version
document has, for the kind, a PATCH operation tagged with
``x-kubernetes-group-version-kind`` that accepts a ``fieldValidation`` query
parameter, kubectl skips client-side schema checks and sends
``fieldValidation=Strict``, so this server's own validation (CRD schemas
included) decides.  CRD kinds also get their schema as a component (for
``kubectl explain``); built-in kinds get none, so kubectl computes strategic
merge patches from its compiled-in types.
"""

from __future__ import annotations

import hashlib
import json

from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.resources import ResourceRegistry, ResourceType
from ovnk_local.apiserver.version import GIT_VERSION

_QUERY = [{"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": True},
           "description": description}
          for name, description in (
              ("fieldValidation", "Strict, Warn or Ignore: how unknown fields are handled"),
              ("dryRun", "All: validate and admit without persisting"),
              ("fieldManager", "name of the actor making the change"))]


def _schema_name(rt: ResourceType) -> str:
    group = ".".join(reversed(rt.group.split("."))) if rt.group else "io.k8s.api.core"
    return f"{group}.{rt.version}.{rt.kind}"


def _gvk(rt: ResourceType) -> JSON:
    return {"group": rt.group, "version": rt.version, "kind": rt.kind}


def _operation(rt: ResourceType, action: str, ref: str) -> JSON:
    schema: JSON = {"$ref": ref} if rt.schema else {"type": "object"}
    content = {"application/json": {"schema": schema}}
    op: JSON = {"operationId": f"{action}{rt.kind}", "parameters": list(_QUERY),
                "responses": {"200": {"description": "OK", "content": content}},
                "x-kubernetes-action": action, "x-kubernetes-group-version-kind": _gvk(rt)}
    if action in ("patch", "put", "post"):
        body = {"type": "object"} if action == "patch" else schema
        op["requestBody"] = {"content": {"application/json": {"schema": body}}}
    return op


def group_version_document(registry: ResourceRegistry, group: str, version: str) -> JSON | None:
    """The per-group-version OpenAPI v3 document, or ``None`` when nothing is served there."""
    types = registry.resources(group, version)
    if not types:
        return None
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    paths: JSON = {}
    schemas: JSON = {}
    for rt in sorted(types, key=lambda t: t.plural):
        name = _schema_name(rt)
        ref = f"#/components/schemas/{name}"
        base = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced \
            else f"{prefix}/{rt.plural}"
        paths[base] = {"get": _operation(rt, "list", ref), "post": _operation(rt, "post", ref)}
        paths[f"{base}/{{name}}"] = {
            "get": _operation(rt, "get", ref), "put": _operation(rt, "put", ref),
            "patch": _operation(rt, "patch", ref), "delete": _operation(rt, "delete", ref)}
        for sub in rt.subresources:
            if sub == "status":
                paths[f"{base}/{{name}}/status"] = {
                    "get": _operation(rt, "get", ref), "put": _operation(rt, "put", ref),
                    "patch": _operation(rt, "patch", ref)}
        if rt.schema:
            schemas[name] = {**rt.schema, "x-kubernetes-group-version-kind": [_gvk(rt)]}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": GIT_VERSION},
            "paths": paths, "components": {"schemas": schemas}}


def _hash(document: JSON) -> str:
    return hashlib.sha512(json.dumps(document, sort_keys=True).encode()).hexdigest().upper()


def root_document(registry: ResourceRegistry) -> JSON:
    """``GET /openapi/v3``: one entry per served group-version, with a content hash."""
    paths: JSON = {}
    for group, versions in registry.groups():
        for version in versions:
            document = group_version_document(registry, group, version)
            if document is None:
                continue
            key = f"apis/{group}/{version}" if group else f"api/{version}"
            paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={_hash(document)}"}
    return {"paths": paths}
