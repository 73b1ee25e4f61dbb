"""Apply manifests: create each object, or replace the one that exists (``kubectl apply``'s
effect for objects nobody else edits, such as CRDs, the RBAC ovnk ships and ``dist/``'s
ConfigMap, Deployment and DaemonSet).

One field is someone else's: the ``rules`` of a ClusterRole with an
``aggregationRule`` belong to the API server's aggregation controller (a
manifest leaves them out), so replacing such a role keeps the rules it has —
rights granted through it never lapse while ovnk's manifests are applied again.
"""

from __future__ import annotations

from collections.abc import Iterable

from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.errors import AlreadyExists
from ovnk_core.kube.resources import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    CONFIGMAPS,
    CRDS,
    DAEMONSETS,
    DEPLOYMENTS,
    NAMESPACES,
    ROLE_BINDINGS,
    ROLES,
    SERVICE_ACCOUNTS,
    Resource,
)

KNOWN: tuple[Resource, ...] = (CRDS, NAMESPACES, SERVICE_ACCOUNTS, ROLES, ROLE_BINDINGS,
                               CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS, CONFIGMAPS, DEPLOYMENTS,
                               DAEMONSETS)


def resource_of(document: JSON) -> Resource:
    """The resource of a manifest document, by its apiVersion and kind."""
    for resource in KNOWN:
        if resource.api_version == document.get("apiVersion") and \
                resource.kind == document.get("kind"):
            return resource
    raise ValueError(f"cannot apply {document.get('apiVersion')}/{document.get('kind')}: "
                     "not a kind ovnk ships manifests of")


def apply_documents(client: KubeClient, documents: Iterable[JSON | None]) -> int:
    """Create or replace every document; returns how many were applied."""
    count = 0
    for document in documents:
        if not document:
            continue
        resource = resource_of(document)
        meta = document["metadata"]
        try:
            client.create(resource, document, meta.get("namespace"))
        except AlreadyExists:
            current = client.get(resource, meta["name"], meta.get("namespace"))
            if resource is SERVICE_ACCOUNTS:
                continue  # keep its uid: tokens issued for it stay valid
            meta["resourceVersion"] = current["metadata"]["resourceVersion"]
            if resource is CLUSTER_ROLES and document.get("aggregationRule") and \
                    "rules" not in document:
                document = {**document, "rules": current.get("rules") or []}
            client.update(resource, document)
        count += 1
    return count


__all__ = ["apply_documents", "resource_of"]
