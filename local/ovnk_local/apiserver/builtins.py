"""The built-in kinds the local API server serves, as the real server advertises them.

Only kinds ovnk, kubectl and client-go's users need are here (a Deployment
or DaemonSet is stored and served; no controller runs it).  Each carries its
discovery data (short names, categories, subresources, verbs) and, for
strategic merge patch, the merge keys of the list fields we touch (taken
from the upstream Go struct tags: containers by name, ports by containerPort,
conditions by type, ownerReferences by uid, env by name, ...).  What a kind's
objects hold is the Go type of the same ``apiVersion``/``kind`` in
``gotypes/kube_types.json``; a kind added here is added there too
(``gotypes.generate``'s ``ROOTS``).
"""

from __future__ import annotations

from ovnk_local.apiserver.resources import ALL_VERBS, ResourceType

NO_COLLECTION = tuple(v for v in ALL_VERBS if v != "deletecollection")

_METADATA_KEYS = {"metadata.ownerReferences": "uid", "metadata.finalizers": ""}

_CONTAINER_KEYS: dict[str, str] = {}
for _field in ("containers", "initContainers", "ephemeralContainers"):
    _CONTAINER_KEYS[f"spec.{_field}"] = "name"
    _CONTAINER_KEYS[f"spec.{_field}.ports"] = "containerPort"
    _CONTAINER_KEYS[f"spec.{_field}.env"] = "name"
    _CONTAINER_KEYS[f"spec.{_field}.volumeMounts"] = "mountPath"
    _CONTAINER_KEYS[f"spec.{_field}.volumeDevices"] = "devicePath"

_POD_SPEC_KEYS = {
    **_CONTAINER_KEYS,
    "spec.volumes": "name", "spec.imagePullSecrets": "name", "spec.hostAliases": "ip",
    "spec.topologySpreadConstraints": "topologyKey", "spec.schedulingGates": "name",
    "spec.resourceClaims": "name",
}
POD_KEYS = {
    **_METADATA_KEYS, **_POD_SPEC_KEYS, "status.conditions": "type", "status.podIPs": "ip",
    "status.hostIPs": "ip",
}
# a workload's pod template: the pod spec's keys under spec.template
WORKLOAD_KEYS = {
    **_METADATA_KEYS, **{f"spec.template.{path}": key for path, key in _POD_SPEC_KEYS.items()},
    "spec.template.metadata.ownerReferences": "uid", "status.conditions": "type",
}
NODE_KEYS = {**_METADATA_KEYS, "spec.podCIDRs": "", "status.conditions": "type",
             "status.addresses": "type"}
SERVICE_KEYS = {**_METADATA_KEYS, "spec.ports": "port", "status.conditions": "type"}
NAMESPACE_KEYS = {**_METADATA_KEYS, "status.conditions": "type"}


def builtin_types() -> list[ResourceType]:
    """Fresh ``ResourceType`` objects for every built-in kind, in discovery order."""
    return [
        ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",),
                     merge_keys=dict(_METADATA_KEYS)),
        ResourceType("", "v1", "endpoints", "endpoints", "Endpoints", True, ("ep",),
                     merge_keys=dict(_METADATA_KEYS)),
        ResourceType("", "v1", "events", "event", "Event", True, ("ev",),
                     merge_keys=dict(_METADATA_KEYS), name_rule="path"),
        ResourceType("", "v1", "namespaces", "namespace", "Namespace", False, ("ns",),
                     verbs=NO_COLLECTION, subresources=("status", "finalize"),
                     merge_keys=NAMESPACE_KEYS, name_rule="label"),
        ResourceType("", "v1", "nodes", "node", "Node", False, ("no",),
                     subresources=("status",), merge_keys=NODE_KEYS),
        ResourceType("", "v1", "pods", "pod", "Pod", True, ("po",), ("all",),
                     subresources=("status", "binding", "exec"), merge_keys=POD_KEYS),
        ResourceType("", "v1", "secrets", "secret", "Secret", True,
                     merge_keys=dict(_METADATA_KEYS)),
        ResourceType("", "v1", "serviceaccounts", "serviceaccount", "ServiceAccount", True,
                     ("sa",), subresources=("token",), merge_keys=dict(_METADATA_KEYS)),
        ResourceType("", "v1", "services", "service", "Service", True, ("svc",), ("all",),
                     verbs=NO_COLLECTION, subresources=("status",), merge_keys=SERVICE_KEYS,
                     name_rule="dns1035"),
        ResourceType("apps", "v1", "daemonsets", "daemonset", "DaemonSet", True, ("ds",),
                     ("all",), subresources=("status",), merge_keys=dict(WORKLOAD_KEYS)),
        ResourceType("apps", "v1", "deployments", "deployment", "Deployment", True,
                     ("deploy",), ("all",), subresources=("status",),
                     merge_keys=dict(WORKLOAD_KEYS)),
        ResourceType("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
                     "validatingwebhookconfiguration", "ValidatingWebhookConfiguration", False,
                     ("vwc",), ("api-extensions",),
                     merge_keys={**_METADATA_KEYS, "webhooks": "name"}),
        ResourceType("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                     "customresourcedefinition", "CustomResourceDefinition", False,
                     ("crd", "crds"), ("api-extensions",), subresources=("status",),
                     merge_keys=dict(_METADATA_KEYS)),
        ResourceType("coordination.k8s.io", "v1", "leases", "lease", "Lease", True,
                     merge_keys=dict(_METADATA_KEYS)),
        ResourceType("discovery.k8s.io", "v1", "endpointslices", "endpointslice",
                     "EndpointSlice", True, merge_keys=dict(_METADATA_KEYS)),
        ResourceType("events.k8s.io", "v1", "events", "event", "Event", True, ("ev",),
                     storage="/events", merge_keys=dict(_METADATA_KEYS), name_rule="path"),
        ResourceType("networking.k8s.io", "v1", "networkpolicies", "networkpolicy",
                     "NetworkPolicy", True, ("netpol",), merge_keys=dict(_METADATA_KEYS)),
        *_rbac_types(),
        *_review_types(),
    ]


def _rbac_types() -> list[ResourceType]:
    group = "rbac.authorization.k8s.io"
    keys = {**_METADATA_KEYS, "subjects": ""}
    return [
        ResourceType(group, "v1", "clusterrolebindings", "clusterrolebinding",
                     "ClusterRoleBinding", False, merge_keys=dict(keys), name_rule="path"),
        ResourceType(group, "v1", "clusterroles", "clusterrole", "ClusterRole", False,
                     merge_keys=dict(_METADATA_KEYS), name_rule="path"),
        ResourceType(group, "v1", "rolebindings", "rolebinding", "RoleBinding", True,
                     merge_keys=dict(keys), name_rule="path"),
        ResourceType(group, "v1", "roles", "role", "Role", True,
                     merge_keys=dict(_METADATA_KEYS), name_rule="path"),
    ]


def _review_types() -> list[ResourceType]:
    """Create-only kinds answered from the request (authentication and authorization)."""
    authz, authn = "authorization.k8s.io", "authentication.k8s.io"
    create = ("create",)
    return [
        ResourceType(authn, "v1", "selfsubjectreviews", "selfsubjectreview",
                     "SelfSubjectReview", False, verbs=create, ephemeral=True),
        ResourceType(authn, "v1", "tokenreviews", "tokenreview", "TokenReview", False,
                     verbs=create, ephemeral=True),
        ResourceType(authz, "v1", "localsubjectaccessreviews", "localsubjectaccessreview",
                     "LocalSubjectAccessReview", True, verbs=create, ephemeral=True),
        ResourceType(authz, "v1", "selfsubjectaccessreviews", "selfsubjectaccessreview",
                     "SelfSubjectAccessReview", False, verbs=create, ephemeral=True),
        ResourceType(authz, "v1", "selfsubjectrulesreviews", "selfsubjectrulesreview",
                     "SelfSubjectRulesReview", False, verbs=create, ephemeral=True),
        ResourceType(authz, "v1", "subjectaccessreviews", "subjectaccessreview",
                     "SubjectAccessReview", False, verbs=create, ephemeral=True),
    ]
