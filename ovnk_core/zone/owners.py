"""Who owns which rows: one owner per network, per (network, node), per (network, pod) and
per (network, service).

Owner scopes are the units the zone controller converges in one transaction
and deletes as a whole.  They are written into every row's external_ids
(``ovnk_core.ovn.ownership``), so after a restart the controller can tell,
from NB alone, which networks, nodes and pods it once rendered.
"""

from __future__ import annotations

from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME, NetInfo
from ovnk_core.ovn.ownership import Owner

DEFAULT_CONTROLLER = "default-network-controller"
CONTROLLER_SUFFIX = "-network-controller"
NETWORK_SCOPE = "network"
NODE_SCOPE_PREFIX = "node:"
POD_SCOPE_PREFIX = "pod:"


def controller_name(network: str) -> str:
    """``default-network-controller`` or ``<network>-network-controller`` (upstream)."""
    return DEFAULT_CONTROLLER if network == DEFAULT_NETWORK_NAME else \
        f"{network}{CONTROLLER_SUFFIX}"


def network_of_controller(controller: str) -> str | None:
    """The network a controller name belongs to (``None`` for other controllers)."""
    if controller == DEFAULT_CONTROLLER:
        return DEFAULT_NETWORK_NAME
    if controller.endswith(CONTROLLER_SUFFIX):
        return controller[:-len(CONTROLLER_SUFFIX)]
    return None


def network_owner(netinfo: NetInfo) -> Owner:
    return network_owner_of(netinfo.name)


def network_owner_of(network: str) -> Owner:
    return Owner(controller_name(network), NETWORK_SCOPE)


def service_owner(netinfo: NetInfo, namespace: str, name: str) -> Owner:
    """A service's load balancers in a network: owner key ``<ns>/<name>``, which is also
    upstream's ``k8s.ovn.org/owner`` of a service load balancer."""
    return Owner(controller_name(netinfo.name), f"{namespace}/{name}")


def scope_service(owner: Owner) -> str | None:
    """The ``ns/name`` of a service owner (``None`` for other owners)."""
    key = owner.key
    if "/" not in key or ":" in key.split("/", 1)[0]:
        return None  # pod:ns/name, feature:...
    return key


def node_owner(netinfo: NetInfo, node: str) -> Owner:
    return Owner(controller_name(netinfo.name), NODE_SCOPE_PREFIX + node)


def pod_owner(netinfo: NetInfo, namespace: str, name: str) -> Owner:
    return Owner(controller_name(netinfo.name), f"{POD_SCOPE_PREFIX}{namespace}/{name}")


def scope_node(owner: Owner) -> str | None:
    """The node name of a node owner."""
    return owner.key[len(NODE_SCOPE_PREFIX):] if owner.key.startswith(NODE_SCOPE_PREFIX) \
        else None


def scope_pod(owner: Owner) -> str | None:
    """The ``ns/name`` of a pod owner."""
    return pod_of_scope(owner.key)


def pod_of_scope(scope: str) -> str | None:
    """The ``ns/name`` in an owner scope ``pod:<ns>/<name>`` (``None`` for other scopes)."""
    return scope[len(POD_SCOPE_PREFIX):] if scope.startswith(POD_SCOPE_PREFIX) else None
