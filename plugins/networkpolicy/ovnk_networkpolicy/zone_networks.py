"""Which network a namespace's policies are rendered on, as the zone renders its pods.

A namespace with a rendered primary UDN has its policies on that network (controller
``<network>-network-controller``); every other namespace on the default network.  The
network's IP families are its subnets'; the hairpin allow ACLs name the cluster's OVN
service hairpin masquerade addresses (``169.254.169.5``, ``fd69::5`` by default).
"""

from __future__ import annotations

import threading

from ovnk_core.contexts import ZoneContext
from ovnk_core.networks.addressing import OVN_SERVICE_HAIRPIN_OFFSET
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME
from ovnk_networkpolicy.rows import NetworkScope


def hairpin_ips(context: ZoneContext) -> list[str]:
    return [str(context.config.masquerade_subnet(version).network_address
                + OVN_SERVICE_HAIRPIN_OFFSET)
            for version in sorted(context.config.ip_families)]


class ZoneNetworks:
    """The networks policies may be on, as the zone last rendered them."""

    def __init__(self, context: ZoneContext) -> None:
        self.context = context
        self._lock = threading.Lock()
        self._seen: set[str] = {DEFAULT_NETWORK_NAME}

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
        return NetworkScope(network, families)

    def of_namespace(self, namespace: str) -> NetworkScope | None:
        network = self.context.primary_network_of_namespace(namespace) or DEFAULT_NETWORK_NAME
        return self.scope(network)

    def all(self) -> list[NetworkScope]:
        with self._lock:
            names = sorted(self._seen)
        return [scope for name in names if (scope := self.scope(name)) is not None]
