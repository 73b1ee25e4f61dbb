"""API discovery documents: plain (``APIVersions``, ``APIGroupList``, ``APIResourceList``)
and aggregated (``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``).

kubectl asks for the aggregated form first and falls back to the plain one;
both are generated from the resource registry on every request, so a CRD
is discoverable as soon as it is created and gone once it is deleted.
"""

from __future__ import annotations

from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.resources import ResourceRegistry, ResourceType

AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1 = ("application/json;g=apidiscovery.k8s.io;v=v2beta1;"
                      "as=APIGroupDiscoveryList")
SUBRESOURCE_VERBS = {"status": ["get", "patch", "update"], "finalize": ["update"],
                     "binding": ["create"], "exec": ["create", "get"],
                     "token": ["create"]}


def _group_version(group: str, version: str) -> str:
    return f"{group}/{version}" if group else version


def api_versions() -> JSON:
    """``GET /api``."""
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0",
                                            "serverAddress": "127.0.0.1"}]}


def api_group(group: str, versions: list[str]) -> JSON:
    """``GET /apis/<group>``: the group with its versions, preferred first."""
    entries = [{"groupVersion": _group_version(group, v), "version": v} for v in versions]
    return {"kind": "APIGroup", "apiVersion": "v1", "name": group, "versions": entries,
            "preferredVersion": entries[0]}


def api_group_list(registry: ResourceRegistry) -> JSON:
    """``GET /apis``."""
    return {"kind": "APIGroupList", "apiVersion": "v1",
            "groups": [api_group(g, vs) for g, vs in registry.groups() if g]}


def _subresource_kind(rt: ResourceType, sub: str) -> str:
    return {"binding": "Binding", "token": "TokenRequest"}.get(sub, rt.kind)


def resource_list(registry: ResourceRegistry, group: str, version: str) -> JSON | None:
    """``GET /api/v1`` or ``/apis/<group>/<version>`` (``None`` when not served)."""
    types = registry.resources(group, version)
    if not types:
        return None
    resources: list[JSON] = []
    for rt in sorted(types, key=lambda t: t.plural):
        entry: JSON = {"name": rt.plural, "singularName": rt.singular,
                       "namespaced": rt.namespaced, "kind": rt.kind, "verbs": list(rt.verbs)}
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        resources.append(entry)
        for sub in rt.subresources:
            resources.append({"name": f"{rt.plural}/{sub}", "singularName": "",
                              "namespaced": rt.namespaced, "kind": _subresource_kind(rt, sub),
                              "verbs": SUBRESOURCE_VERBS.get(sub, ["get"])})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": _group_version(group, version), "resources": resources}


def _aggregated_resource(rt: ResourceType) -> JSON:
    entry: JSON = {
        "resource": rt.plural, "singularResource": rt.singular,
        "responseKind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
        "scope": "Namespaced" if rt.namespaced else "Cluster", "verbs": list(rt.verbs)}
    if rt.short_names:
        entry["shortNames"] = list(rt.short_names)
    if rt.categories:
        entry["categories"] = list(rt.categories)
    if rt.subresources:
        entry["subresources"] = [
            {"subresource": sub, "verbs": SUBRESOURCE_VERBS.get(sub, ["get"]),
             "responseKind": {"group": rt.group, "version": rt.version,
                              "kind": _subresource_kind(rt, sub)}}
            for sub in rt.subresources]
    return entry


def aggregated(registry: ResourceRegistry, legacy: bool, api_version: str) -> JSON:
    """The aggregated discovery document for ``/api`` (``legacy``) or ``/apis``."""
    items = []
    for group, versions in registry.groups():
        if bool(group) == legacy:
            continue
        entries = []
        for version in versions:
            types = sorted(registry.resources(group, version), key=lambda t: t.plural)
            entries.append({"version": version, "freshness": "Current",
                            "resources": [_aggregated_resource(rt) for rt in types]})
        item: JSON = {"metadata": {"name": group} if group else {}, "versions": entries}
        items.append(item)
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {},
            "items": items}
