"""URL paths and request headers, decoded into what the handler must do.

``/api/v1/namespaces/ns/pods/p/status`` becomes a ``Route`` naming the
served resource type, namespace, name and subresource; Accept headers say
whether the client wants a Table or aggregated discovery.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from ovnk_local.apiserver.errors import path_not_found
from ovnk_local.apiserver.resources import ResourceRegistry, ResourceType


@dataclass(frozen=True)
class Route:
    rt: ResourceType
    namespace: str
    name: str
    subresource: str


def resolve(registry: ResourceRegistry, path: str) -> Route | None:
    """The resource route of ``path``; ``None`` when it is not a resource path.

    The path is percent-decoded before it is split, as Go's ``URL.Path`` is: a name sent
    as ``a%00b`` is the name ``a\x00b`` (and is then refused by the kind's name rule),
    ``a%2Fb`` is two segments.
    """
    parts = [p for p in unquote(path).split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if (len(rest) >= 3 and rest[0] == "namespaces"
            and (rt := registry.get(group, version, rest[2])) is not None and rt.namespaced):
        namespace, rest = rest[1], rest[2:]
    else:
        namespace = ""
        rt = registry.get(group, version, rest[0])
    if rt is None or len(rest) > 3:
        raise path_not_found(path)
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and subresource not in rt.subresources:
        raise path_not_found(path)
    return Route(rt, namespace, name, subresource)


def media_types(accept: str) -> list[dict[str, str]]:
    """The Accept header as a list of ``{"type": ..., param: value}`` in order."""
    result = []
    for entry in accept.split(","):
        fields = [f.strip() for f in entry.split(";") if f.strip()]
        if not fields:
            continue
        media = {"type": fields[0].lower()}
        for param in fields[1:]:
            key, _, value = param.partition("=")
            media[key.strip().lower()] = value.strip()
        result.append(media)
    return result


def wants_table(accept: str) -> bool:
    """Whether the Accept header asks for a meta.k8s.io Table."""
    return any(m.get("as") == "Table" and m.get("g") == "meta.k8s.io"
               and m.get("v") in ("v1", "v1beta1") for m in media_types(accept))


def wants_aggregated(accept: str) -> str | None:
    """The aggregated discovery version to serve (``v2``/``v2beta1``), if asked for first."""
    for media in media_types(accept):
        if media.get("as") == "APIGroupDiscoveryList" and media.get("g") == \
                "apidiscovery.k8s.io" and media.get("v") in ("v2", "v2beta1"):
            return media["v"]
        if media["type"] in ("application/json", "*/*", "application/*"):
            return None
    return None
