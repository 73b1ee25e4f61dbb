"""Who is who: the Kubernetes identities ovnk's processes run as.

One place for the user names that RBAC bindings (``manifests/rbac``), the
annotation admission rules and ``ovnk local`` agree on.  The cluster manager
and the zone controller are service accounts in ``ovn-kubernetes`` (as
upstream's ``ovnkube-cluster-manager``); each node agent authenticates with a
per-node client certificate as ``system:ovn-node:<node>`` in group
``system:ovn-nodes``, the names upstream's ovnkube-identity issues, so that
admission can tell which node a request comes from.
"""

from __future__ import annotations

OVN_NAMESPACE = "ovn-kubernetes"
CLUSTER_MANAGER_SA = "ovnkube-cluster-manager"
CONTROLLER_SA = "ovnkube-controller"
CLUSTER_MANAGER_USER = f"system:serviceaccount:{OVN_NAMESPACE}:{CLUSTER_MANAGER_SA}"
CONTROLLER_USER = f"system:serviceaccount:{OVN_NAMESPACE}:{CONTROLLER_SA}"
NODE_USER_PREFIX = "system:ovn-node:"
NODES_GROUP = "system:ovn-nodes"


def node_agent_user(node: str) -> str:
    """``system:ovn-node:<node>``: the user a node agent authenticates as."""
    return f"{NODE_USER_PREFIX}{node}"


def node_of_user(user: str) -> str | None:
    """The node a node agent's user name speaks for; None for any other user."""
    if not user.startswith(NODE_USER_PREFIX):
        return None
    return user[len(NODE_USER_PREFIX):] or None


__all__ = ["CLUSTER_MANAGER_SA", "CLUSTER_MANAGER_USER", "CONTROLLER_SA", "CONTROLLER_USER",
           "NODES_GROUP", "NODE_USER_PREFIX", "OVN_NAMESPACE", "node_agent_user",
           "node_of_user"]
