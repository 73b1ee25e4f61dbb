"""Which network a namespace's policies are rendered on, as the zone renders its pods.

A namespace with a rendered primary UDN has its policies on that network (controller
``<network>-network-controller``); every other namespace on the default network.  The
network's IP families are its subnets'; the hairpin allow ACLs name the cluster's OVN
service hairpin masquerade addresses (``169.254.169.5``, ``fd69::5`` by default).
"""

from __future__ import annotations

import threading

from ovnk_core.contexts import ZoneContext
from ovnk_core.kube.client import JSON
from ovnk_core.kube.resources import NADS, NAMESPACES
from ovnk_core.networks.addressing import OVN_SERVICE_HAIRPIN_OFFSET
from ovnk_core.networks.nad_config import nad_network_name, ovn_config_of
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL
from ovnk_networkpolicy.rows import NetworkScope


def hairpin_ips(context: ZoneContext) -> list[str]:
    return [str(context.config.masquerade_subnet(version).network_address
                + OVN_SERVICE_HAIRPIN_OFFSET)
            for version in sorted(context.config.ip_families)]


def _declares_primary(nad: JSON | None) -> bool:
    config = ovn_config_of(nad)
    return config is not None and config.get("role") == "primary"


class ZoneNetworks:
    """The networks policies may be on, as the zone last rendered them.

    A namespace labelled for a primary UDN whose network is not rendered (yet) has none:
    its policies wait (never rendered on the default network meanwhile, which would
    open its pods during a restart).  A network no NAD names any more is gone.
    """

    def __init__(self, context: ZoneContext) -> None:
        self.context = context
        self._lock = threading.Lock()
        self._seen: set[str] = {DEFAULT_NETWORK_NAME}
        self.nads = context.informers.get(NADS, indexers={"network": nad_network_name})
        self.namespaces = context.informers.get(NAMESPACES)

    def gone(self, network: str) -> bool:
        """Whether NetworkPolicy will never be on ``network``: no NAD names it any more, or
        each NAD that does declares it secondary (MultiNetworkPolicy's, if anything's).
        Otherwise a network without a scope is one the zone has not rendered yet."""
        if network == DEFAULT_NETWORK_NAME:
            return False
        return not any(_declares_primary(self.nads.peek(key))
                       for key in self.nads.keys_by_index("network", network))

    def saw(self, network: str) -> None:
        with self._lock:
            self._seen.add(network)

    def scope(self, network: str) -> NetworkScope | None:
        state = self.context.rendered_network(network)
        if state is None or not (state.netinfo.is_primary or state.netinfo.is_default):
            return None
        versions: set[int] = {int(s.cidr.version) for s in state.netinfo.subnets} or \
            {int(v) for v in self.context.config.ip_families}
        families = tuple(sorted(versions))
        return NetworkScope(network, families,
                            acl_tiers=self.context.nb_capabilities.acl_tier)

    def of_namespace(self, namespace: str) -> NetworkScope | None:
        network = self.context.primary_network_of_namespace(namespace)
        if network is not None:
            return self.scope(network)
        labels = ((self.namespaces.peek(namespace) or {}).get("metadata") or {}).get(
            "labels") or {}
        if PRIMARY_NAMESPACE_LABEL in labels:
            return None
        return self.scope(DEFAULT_NETWORK_NAME)

    def all(self) -> list[NetworkScope]:
        with self._lock:
            names = sorted(self._seen)
        return [scope for name in names if (scope := self.scope(name)) is not None]
