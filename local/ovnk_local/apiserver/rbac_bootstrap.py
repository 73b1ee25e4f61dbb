"""The RBAC objects every cluster starts with (kube-apiserver's bootstrap policy, trimmed).

``cluster-admin`` for ``system:masters``, discovery and health paths for every
authenticated user (health also for anonymous ones), self reviews
(``kubectl auth can-i``, ``kubectl auth whoami``) for everyone, and the
user-facing ``admin``/``edit``/``view`` roles, aggregated as in Kubernetes
from ``system:aggregate-to-*`` (the core kinds this server serves) and from
any ClusterRole labelled ``rbac.authorization.k8s.io/aggregate-to-<role>``
(``view`` feeds ``edit``, ``edit`` feeds ``admin``).  They carry
``rbac.authorization.kubernetes.io/autoupdate: "true"``: the server puts their
rules back at start, unless someone set the annotation to ``"false"``, as the
real reconciler does.
"""

from __future__ import annotations

from ovnk_local.apiserver.errors import JSON

AUTOUPDATE = "rbac.authorization.kubernetes.io/autoupdate"
RBAC_API = "rbac.authorization.k8s.io/v1"
_READ = ["get", "list", "watch"]
_WRITE = ["create", "delete", "deletecollection", "patch", "update"]
_DISCOVERY_URLS = ["/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi",
                   "/openapi/*", "/readyz", "/version", "/version/"]
_PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
# what namespace users read (view) and write (edit), as Kubernetes' default roles for the
# kinds served here: view never reads secrets; edit reads and writes them, and has not
# written endpoints nor endpoint slices since Kubernetes 1.22 (CVE-2021-25740)
_VIEW_CORE = ["configmaps", "endpoints", "events", "persistentvolumeclaims", "pods",
              "pods/log", "pods/status", "replicationcontrollers", "serviceaccounts",
              "services", "services/status"]
_EDIT_CORE = ["configmaps", "events", "persistentvolumeclaims", "pods",
              "replicationcontrollers", "secrets", "serviceaccounts", "services"]
_WORKLOADS = ["daemonsets", "deployments", "deployments/rollback", "deployments/scale"]


def _meta(name: str) -> JSON:
    return {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
            "annotations": {AUTOUPDATE: "true"}}


def _cluster_role(name: str, rules: list[JSON]) -> JSON:
    return {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": _meta(name),
            "rules": rules}


def _cluster_binding(name: str, role: str, groups: list[str]) -> JSON:
    return {"apiVersion": RBAC_API, "kind": "ClusterRoleBinding", "metadata": _meta(name),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                          "name": group} for group in groups]}


AGGREGATE_TO = "rbac.authorization.k8s.io/aggregate-to-"


def _view_rules() -> list[JSON]:
    return [
        {"apiGroups": [""], "resources": _VIEW_CORE, "verbs": _READ},
        {"apiGroups": [""], "resources": ["namespaces", "namespaces/status"], "verbs": _READ},
        {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": _READ},
        {"apiGroups": ["apps"], "resources": ["daemonsets", "daemonsets/status", "deployments",
                                              "deployments/scale", "deployments/status"],
         "verbs": _READ},
        {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"], "verbs": _READ},
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": _READ},
    ]


def _edit_rules() -> list[JSON]:
    return [
        {"apiGroups": [""], "resources": _EDIT_CORE, "verbs": _WRITE},
        {"apiGroups": [""], "resources": ["pods/exec", "pods/attach", "pods/portforward"],
         "verbs": ["create", "get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": _READ},
        {"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]},
        {"apiGroups": ["apps"], "resources": _WORKLOADS, "verbs": _WRITE},
        {"apiGroups": ["networking.k8s.io"], "resources": ["networkpolicies"],
         "verbs": _WRITE},
    ]


def _admin_rules() -> list[JSON]:
    return [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["rolebindings", "roles"],
         "verbs": [*_READ, *_WRITE]},
        {"apiGroups": ["authorization.k8s.io"], "resources": ["localsubjectaccessreviews"],
         "verbs": ["create"]},
        {"apiGroups": [""], "resources": ["serviceaccounts/token"], "verbs": ["create"]},
    ]


def _aggregate_into(role: JSON, *targets: str) -> JSON:
    role["metadata"].setdefault("labels", {}).update(
        {f"{AGGREGATE_TO}{t}": "true" for t in targets})
    return role


def _aggregated(name: str) -> JSON:
    """A role whose rules the aggregation controller fills from its labelled parts."""
    return {"apiVersion": RBAC_API, "kind": "ClusterRole", "metadata": _meta(name),
            "aggregationRule": {"clusterRoleSelectors": [
                {"matchLabels": {f"{AGGREGATE_TO}{name}": "true"}}]},
            "rules": []}


def bootstrap_policy() -> list[tuple[str, JSON]]:
    """(storage, object) for every default ClusterRole and ClusterRoleBinding."""
    roles = [
        _cluster_role("cluster-admin", [
            {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
            {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        _cluster_role("system:discovery", [{"nonResourceURLs": _DISCOVERY_URLS,
                                            "verbs": ["get"]}]),
        _cluster_role("system:public-info-viewer", [{"nonResourceURLs": _PUBLIC_URLS,
                                                     "verbs": ["get"]}]),
        _cluster_role("system:basic-user", [
            {"apiGroups": ["authorization.k8s.io"],
             "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
             "verbs": ["create"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
             "verbs": ["create"]}]),
        _aggregate_into(_cluster_role("system:aggregate-to-view", _view_rules()), "view"),
        _aggregate_into(_cluster_role("system:aggregate-to-edit", _edit_rules()), "edit"),
        _aggregate_into(_cluster_role("system:aggregate-to-admin", _admin_rules()), "admin"),
        _aggregate_into(_aggregated("view"), "edit"),
        _aggregate_into(_aggregated("edit"), "admin"),
        _aggregated("admin"),
    ]
    bindings = [
        _cluster_binding("cluster-admin", "cluster-admin", ["system:masters"]),
        _cluster_binding("system:discovery", "system:discovery", ["system:authenticated"]),
        _cluster_binding("system:public-info-viewer", "system:public-info-viewer",
                         ["system:authenticated", "system:unauthenticated"]),
        _cluster_binding("system:basic-user", "system:basic-user", ["system:authenticated"]),
    ]
    return ([("rbac.authorization.k8s.io/clusterroles", r) for r in roles]
            + [("rbac.authorization.k8s.io/clusterrolebindings", b) for b in bindings])


__all__ = ["AGGREGATE_TO", "AUTOUPDATE", "bootstrap_policy"]
