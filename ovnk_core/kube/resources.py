"""The Kubernetes resources ovnk reads and writes, described once.

A ``Resource`` knows its group, version, plural, kind and scope, and builds
the REST paths for itself, so every client call, informer and test names a
resource the same way and works on plain ``dict`` objects (built-ins and
custom resources alike).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural


NAMESPACES = Resource("", "v1", "namespaces", "Namespace", False)
NODES = Resource("", "v1", "nodes", "Node", False)
PODS = Resource("", "v1", "pods", "Pod", True)
SERVICES = Resource("", "v1", "services", "Service", True)
EVENTS = Resource("", "v1", "events", "Event", True)
CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap", True)
ENDPOINTSLICES = Resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True)
DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment", True)
DAEMONSETS = Resource("apps", "v1", "daemonsets", "DaemonSet", True)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", False)
UDNS = Resource("k8s.ovn.org", "v1", "userdefinednetworks", "UserDefinedNetwork", True)
CUDNS = Resource("k8s.ovn.org", "v1", "clusteruserdefinednetworks",
                 "ClusterUserDefinedNetwork", False)
EGRESSIPS = Resource("k8s.ovn.org", "v1", "egressips", "EgressIP", False)
NADS = Resource("k8s.cni.cncf.io", "v1", "network-attachment-definitions",
                "NetworkAttachmentDefinition", True)
IPAMCLAIMS = Resource("k8s.cni.cncf.io", "v1alpha1", "ipamclaims", "IPAMClaim", True)
SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)
VALIDATING_WEBHOOK_CONFIGURATIONS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", False)
_RBAC = "rbac.authorization.k8s.io"
ROLES = Resource(_RBAC, "v1", "roles", "Role", True)
ROLE_BINDINGS = Resource(_RBAC, "v1", "rolebindings", "RoleBinding", True)
CLUSTER_ROLES = Resource(_RBAC, "v1", "clusterroles", "ClusterRole", False)
CLUSTER_ROLE_BINDINGS = Resource(_RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding",
                                 False)


def object_key(obj: dict[str, object]) -> str:
    """``namespace/name`` for namespaced objects, ``name`` otherwise (the cache key)."""
    meta = obj.get("metadata") or {}
    assert isinstance(meta, dict)
    namespace = meta.get("namespace")
    name = str(meta.get("name", ""))
    return f"{namespace}/{name}" if namespace else name


def split_key(key: str) -> tuple[str | None, str]:
    namespace, _, name = key.rpartition("/")
    return (namespace or None), name
