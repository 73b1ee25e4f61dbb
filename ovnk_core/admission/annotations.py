"""Who may write ovnk's own annotations on Pods and Nodes (upstream's ovnkube-identity webhooks).

Why this exists: the annotations are the control plane's state.  A pod's
``k8s.ovn.org/pod-networks`` decides which logical ports, addresses and routes
it gets; a node's ``k8s.ovn.org/node-subnets``, ``node-id`` and gateway facts
decide the whole topology.  RBAC cannot tell one annotation from another, nor
node A's agent from node B's, so upstream OVN-Kubernetes runs validating
webhooks (``go-controller/pkg/ovnwebhook``, served by ovnkube-identity) that
do; these hooks are the same rules, served by ``ovnk webhook`` (``ovnk_core.webhook``,
registered through the ``ovnk.webhook`` entry point of ``admission.contract``) at
upstream's paths ``/node`` and ``/pod``:

* ``k8s.ovn.org/pod-networks``: only the cluster manager
  (``CLUSTER_MANAGER_USER``) may add, change or remove it.
* Node annotations the cluster manager allocates (``CLUSTER_MANAGER_NODE_ANNOTATIONS``):
  only the cluster manager.
* Node annotations a node agent publishes (``NODE_AGENT_NODE_ANNOTATIONS``): only
  ``system:ovn-node:<that node>``; a node agent may change nothing else of a Node,
  and nothing of another Node.  ``k8s.ovn.org/node-chassis-id`` cannot be removed nor
  changed once set; ``k8s.ovn.org/zone-name`` and ``k8s.ovn.org/remote-zone-migrated``
  take only the values upstream allows.
* Members of ``system:masters`` pass the ownership rules (break-glass, what upstream's
  ``--extra-allowed-user`` does) but, like those users upstream, not the value rules
  above; the server's own writes (``user is None``) are not checked.

Differences from upstream, on purpose: upstream's webhooks only see ``UPDATE`` of
``nodes/status`` and ``pods/status`` (its manifests note that this "doesn't protect
from other users changing the annotations"); these hooks see ``CREATE`` and
``UPDATE`` of the main resource and of ``/status`` (a pod created with a forged
``pod-networks`` is refused, in the same words), and they protect the
cluster-manager-owned node annotations upstream leaves to RBAC.  Upstream lets a
node agent write ``pod-networks`` (its zone controller runs on the node); in ovnk
the cluster manager allocates it, so no node agent may.  Lists in messages are
sorted (upstream prints a Go set in random order).

A denial reaches the client as a webhook denial does: HTTP 403, reason
``Forbidden``, message ``admission webhook "<webhook>" denied the request: <why>``
(the webhook answers ``<why>``; the API server adds the rest).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ovnk_core.admission.contract import (
    MASTERS,
    AdmissionRegistry,
    UserInfo,
    WebhookDenied,
    go_quote,
)
from ovnk_core.annotations.node_encap_ips import NODE_ENCAP_IPS_ANNOTATION
from ovnk_core.annotations.node_gateway import (
    CHASSIS_ID_ANNOTATION,
    GATEWAY_CONFIG_ANNOTATION,
    PRIMARY_IFADDR_ANNOTATION,
)
from ovnk_core.annotations.node_id import NODE_ID_ANNOTATION
from ovnk_core.annotations.node_subnets import NODE_SUBNETS_ANNOTATION
from ovnk_core.annotations.node_transit import TRANSIT_PORT_ADDRESSES_ANNOTATION
from ovnk_core.annotations.node_zone import ZONE_ANNOTATION
from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION
from ovnk_core.identities import CLUSTER_MANAGER_USER, node_of_user

JSON = dict[str, Any]

NODE_WEBHOOK = "ovn-kubernetes-admission-webhook-node.k8s.io"
POD_WEBHOOK = "ovn-kubernetes-admission-webhook-pod.k8s.io"

POD_ANNOTATIONS = frozenset({POD_NETWORKS_ANNOTATION})
"""Pod annotations only the cluster manager may write."""

CLUSTER_MANAGER_NODE_ANNOTATIONS = frozenset({
    NODE_SUBNETS_ANNOTATION,                                     # ovnk: node_allocator
    NODE_ID_ANNOTATION,                                          # ovnk: node_allocator
    "k8s.ovn.org/node-gateway-router-lrp-ifaddr",                # upstream, deprecated form
    "k8s.ovn.org/node-gateway-router-lrp-ifaddrs",               # join addresses (per net)
    TRANSIT_PORT_ADDRESSES_ANNOTATION,                           # ovnk: node_allocator
    "k8s.ovn.org/network-ids",                                   # network ids per node
    "k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids",  # gateway port tunnel ids
})
"""Node annotations the cluster manager allocates: only it may write them."""

ZONE_NAME = ZONE_ANNOTATION
REMOTE_ZONE_MIGRATED = "k8s.ovn.org/remote-zone-migrated"
DEFAULT_ZONE = "global"

REMOVED, CHANGED, ADDED = "removed", "changed", "added"


@dataclass(frozen=True)
class Change:
    """One annotation's change: ``action`` (added/changed/removed) and the value it has
    now (the old value when removed), as upstream's ``annotationChange``."""

    action: str
    value: str


def _chassis_id(change: Change, _node: str) -> str | None:
    if change.action == REMOVED:
        return f"{CHASSIS_ID_ANNOTATION} cannot be removed"
    if change.action == CHANGED:
        return f"{CHASSIS_ID_ANNOTATION} cannot be changed once set"
    return None


def _zone_name(change: Change, node: str) -> str | None:
    if change.action in (ADDED, CHANGED) and change.value in (DEFAULT_ZONE, node):
        return None
    return f"{ZONE_NAME} can only be set to {DEFAULT_ZONE} or {node}, it cannot be removed"


def _remote_zone_migrated(change: Change, node: str) -> str | None:
    if change.action in (ADDED, CHANGED) and change.value == node:
        return None
    return f"{REMOTE_ZONE_MIGRATED} can only be set to {node}, it cannot be removed"


NodeCheck = Callable[[Change, str], str | None]

NODE_AGENT_CHECKS: dict[str, NodeCheck | None] = {
    # upstream's commonNodeAnnotationChecks
    "k8s.ovn.org/bridge-egress-ips": None,
    "k8s.ovn.org/host-cidrs": None,
    "k8s.ovn.org/secondary-host-egress-ips": None,
    GATEWAY_CONFIG_ANNOTATION: None,
    "k8s.ovn.org/node-mgmt-port-mac-addresses": None,
    PRIMARY_IFADDR_ANNOTATION: None,
    "k8s.ovn.org/node-masquerade-subnet": None,
    "k8s.ovn.org/gateway-mtu-support": None,
    "k8s.ovn.org/node-mgmt-port": None,
    CHASSIS_ID_ANNOTATION: _chassis_id,
    ZONE_NAME: _zone_name,
    NODE_ENCAP_IPS_ANNOTATION: None,
    # upstream's interconnectNodeAnnotationChecks (ovnk's zones are interconnect zones)
    REMOTE_ZONE_MIGRATED: _remote_zone_migrated,
}
"""Node annotations a node agent publishes about its own node, with upstream's value
checks (None: any value)."""

NODE_AGENT_NODE_ANNOTATIONS = frozenset(NODE_AGENT_CHECKS)
NODE_ANNOTATIONS = CLUSTER_MANAGER_NODE_ANNOTATIONS | NODE_AGENT_NODE_ANNOTATIONS


# -- Go formatting ---------------------------------------------------------------------------
def go_list(items: Iterable[str]) -> str:
    """A ``[]string`` as Go's ``%v`` prints it (``[a b]``), sorted."""
    return "[" + " ".join(sorted(items)) + "]"


# -- the rules ---------------------------------------------------------------------------------
def annotation_changes(old: Mapping[str, Any] | None,
                       new: Mapping[str, Any] | None) -> dict[str, Change]:
    """Every annotation added, changed or removed between ``old`` and ``new`` (upstream's
    ``mapDiff``)."""
    old, new = old or {}, new or {}
    changes: dict[str, Change] = {}
    for key, value in old.items():
        if key not in new:
            changes[key] = Change(REMOVED, str(value))
        elif new[key] != value:
            changes[key] = Change(CHANGED, str(new[key]))
    for key, value in new.items():
        if key not in old:
            changes[key] = Change(ADDED, str(value))
    return changes


def _annotations(obj: JSON | None) -> Mapping[str, Any]:
    annotations = ((obj or {}).get("metadata") or {}).get("annotations")
    return annotations if isinstance(annotations, dict) else {}


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def denied(webhook: str, message: str) -> WebhookDenied:
    """A webhook's denial (controller-runtime's ``Denied``: 403 Forbidden, no details)."""
    return WebhookDenied(webhook, message)


def is_master(user: UserInfo) -> bool:
    """A member of ``system:masters`` (the break-glass group)."""
    return MASTERS in user.groups


def validate_pod(operation: str, new: JSON | None, old: JSON | None,
                 user: UserInfo | None) -> None:
    """Only the cluster manager writes ``k8s.ovn.org/pod-networks``."""
    if new is None or user is None or operation not in ("CREATE", "UPDATE"):
        return
    changed = [key for key in annotation_changes(_annotations(old), _annotations(new))
               if key in POD_ANNOTATIONS]
    if not changed or is_master(user) or user.name == CLUSTER_MANAGER_USER:
        return
    node = node_of_user(user.name)
    if node is not None:
        raise denied(POD_WEBHOOK, f"ovnkube-node on node: {go_quote(node)} is not allowed to "
                                  f"set the following annotations on pod: "
                                  f"{go_quote(_name(new))}: {go_list(changed)}")
    raise denied(POD_WEBHOOK, f"user {go_quote(user.name)} is not allowed to set the "
                              f"following annotations on pod: {go_quote(_name(new))}: "
                              f"{go_list(changed)}")


def validate_node(operation: str, new: JSON | None, old: JSON | None,
                  user: UserInfo | None) -> None:
    """Cluster-manager-owned annotations by the cluster manager only; a node's own facts by
    its node agent only, which may change nothing else (upstream's ``NodeAdmission``)."""
    if new is None or user is None or operation not in ("CREATE", "UPDATE"):
        return
    changes = annotation_changes(_annotations(old), _annotations(new))
    name = _name(new)
    agent_node = node_of_user(user.name)
    if agent_node is None:
        protected = [key for key in changes if key in NODE_ANNOTATIONS]
        if not protected:
            return
        if is_master(user):
            _check_values(changes, name, user, name)
            return
        refused = protected
        if user.name == CLUSTER_MANAGER_USER:
            refused = [key for key in protected if key not in CLUSTER_MANAGER_NODE_ANNOTATIONS]
        if refused:
            raise denied(NODE_WEBHOOK, f"user {go_quote(user.name)} is not allowed to set the "
                                       f"following annotations on node: {go_quote(name)}: "
                                       f"{go_list(refused)}")
        return
    _check_values(changes, agent_node, user, name)
    if name != agent_node:
        raise denied(NODE_WEBHOOK, f"ovnkube-node on node: {go_quote(agent_node)} is not "
                                   f"allowed to modify nodes {go_quote(name)} annotations")
    outside = [key for key in changes if key not in NODE_AGENT_NODE_ANNOTATIONS]
    if outside:
        raise denied(NODE_WEBHOOK, f"ovnkube-node on node: {go_quote(agent_node)} is not "
                                   f"allowed to set the following annotations: "
                                   f"{go_list(outside)}")
    if old is not None and _without_annotations(old) != _without_annotations(new):
        raise denied(NODE_WEBHOOK, f"ovnkube-node on node: {go_quote(agent_node)} is not "
                                   "allowed to modify anything other than annotations")


def _check_values(changes: Mapping[str, Change], node: str, user: UserInfo,
                  name: str) -> None:
    for key in sorted(changes):
        check = NODE_AGENT_CHECKS.get(key)
        problem = check(changes[key], node) if check is not None else None
        if problem:
            raise denied(NODE_WEBHOOK, f"user: {go_quote(user.name)} is not allowed to set "
                                       f"{key} on node {go_quote(name)}: {problem}")


def _without_annotations(obj: JSON) -> JSON:
    """``obj`` without what may differ when only annotations changed (annotations,
    managedFields, and the resourceVersion a PUT may omit)."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items()
            if k not in ("annotations", "managedFields", "resourceVersion")}
    return {**obj, "metadata": meta}


NODE_PATH, POD_PATH = "/node", "/pod"
"""Where ``ovnk webhook`` serves each (upstream's ovnkube-identity paths)."""


def register(registry: AdmissionRegistry) -> None:
    """The ``ovnk.webhook`` entry point: both hooks, on the main resource and ``/status``."""
    registry.register_validating("", "pods", validate_pod, name=POD_WEBHOOK,
                                 subresources=("", "status"), operations=("CREATE", "UPDATE"),
                                 with_user=True, path=POD_PATH)
    registry.register_validating("", "nodes", validate_node, name=NODE_WEBHOOK,
                                 subresources=("", "status"), operations=("CREATE", "UPDATE"),
                                 with_user=True, path=NODE_PATH)


__all__ = ["CLUSTER_MANAGER_NODE_ANNOTATIONS", "NODE_AGENT_CHECKS",
           "NODE_AGENT_NODE_ANNOTATIONS", "NODE_PATH", "NODE_WEBHOOK", "POD_ANNOTATIONS",
           "POD_PATH", "POD_WEBHOOK", "annotation_changes", "go_list", "go_quote", "register",
           "validate_node", "validate_pod"]
