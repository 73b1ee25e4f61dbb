"""Listing and watching every served kind with the typed APIs of the ``kubernetes`` client.

The client's models refuse an object whose required field (one without
``omitempty`` in the kind's Go type) is missing or null, so decoding every
object of every kind is how a test sees that the server returns what
Kubernetes returns.  The kinds come from the server's discovery, so a kind
served tomorrow is covered without a change here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client, watch


@dataclass(frozen=True)
class ServedKind:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}/{self.version}" if self.group \
            else f"{self.plural}/{self.version}"


def served_kinds(api: client.ApiClient) -> list[ServedKind]:
    """Every kind discovery says may be listed and watched."""
    versions = [("", "v1", client.CoreV1Api(api).get_api_resources())]
    for group in client.ApisApi(api).get_api_versions().groups:
        for version in group.versions:
            versions.append((group.name, version.version, client.CustomObjectsApi(
                api).get_api_resources(group.name, version.version)))
    return [ServedKind(group, version, r.name, r.kind, r.namespaced)
            for group, version, resources in versions for r in resources.resources
            if "/" not in r.name and {"list", "watch"} <= set(r.verbs)]


def typed_api(api: client.ApiClient, group: str, version: str) -> Any:
    """The generated API class of a group version (``CoreV1Api``, ``RbacAuthorizationV1Api``),
    None when the client has none (a CRD's group)."""
    words = group.removesuffix(".k8s.io").split(".") if group else ["core"]
    name = "".join(w.capitalize() for w in words) + version.capitalize() + "Api"
    api_class = getattr(client, name, None)
    return api_class(api) if api_class is not None else None


def list_call(api: client.ApiClient, kind: ServedKind, namespace: str = "") \
        -> tuple[Callable[..., Any], bool]:
    """The cluster-wide (or ``namespace``'s) list function of ``kind``, usable by
    ``watch.Watch().stream``, and whether it returns typed objects (a CRD's kind: dicts
    through ``CustomObjectsApi``).

    :raises LookupError: a built-in group the client has no typed API for.
    """
    typed = typed_api(api, kind.group, kind.version)
    if typed is None:
        custom = client.CustomObjectsApi(api)

        def list_custom(**kwargs: Any) -> Any:
            if namespace:
                return custom.list_namespaced_custom_object(kind.group, kind.version,
                                                            namespace, kind.plural, **kwargs)
            return custom.list_cluster_custom_object(kind.group, kind.version, kind.plural,
                                                     **kwargs)
        return list_custom, False
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", kind.kind).lower()
    if namespace and kind.namespaced:
        method = getattr(typed, f"list_namespaced_{snake}")

        @functools.wraps(method)  # the watch reads the return type from the original
        def list_in(**kwargs: Any) -> Any:
            return method(namespace, **kwargs)
        return list_in, True
    name = f"list_{snake}_for_all_namespaces" if kind.namespaced else f"list_{snake}"
    if not hasattr(typed, name):
        raise LookupError(f"{type(typed).__name__} has no {name}")
    return getattr(typed, name), True


def names(items: list[Any], typed: bool) -> set[str]:
    return {item.metadata.name if typed else item["metadata"]["name"] for item in items}


def list_and_watch(api: client.ApiClient, kind: ServedKind, namespace: str = "",
                   timeout: int = 5) -> tuple[set[str], set[str]]:
    """The names a typed list returns and those the watch's initial ADDED events carry,
    every object decoded by the client's models on the way."""
    call, typed = list_call(api, kind, namespace)
    listing = call()
    listed = names(listing.items if typed else listing["items"], typed)
    seen: set[str] = set()
    watch_class: Any = watch.Watch  # the client leaves it untyped
    stream = watch_class()
    for event in stream.stream(call, timeout_seconds=timeout):
        if event["type"] != "ADDED":
            raise AssertionError(f"{kind}: unexpected {event['type']} event")
        seen |= names([event["object"]], typed)
        if seen >= listed:
            stream.stop()
    return listed, seen


__all__ = ["ServedKind", "list_and_watch", "list_call", "served_kinds", "typed_api"]
