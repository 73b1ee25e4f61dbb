"""Routes a pod's pod-networks entry carries, as building blocks for topologies.

Upstream's rules (``AddRoutesGatewayIP``): a pod's primary network is its way
out, so its entry has the default gateway and routes to the service CIDRs and
to the network's join subnet through it.  A topology composes its
``Topology.pod_routing`` from these helpers instead of restating the rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ovnk_core.config import Config
from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.addressing import IPAddress
from ovnk_core.networks.netinfo import NetInfo


def routes_to(destinations: Iterable[IPNetwork], gateways: Sequence[IPAddress]
              ) -> list[tuple[str, str]]:
    """``(destination, gateway)`` for every destination, through the gateway of its family."""
    routes = []
    for dest in destinations:
        for gateway in gateways:
            if gateway.version == dest.version:
                routes.append((str(dest), str(gateway)))
    return routes


def primary_network_routes(config: Config, netinfo: NetInfo, gateways: Sequence[IPAddress]
                           ) -> list[tuple[str, str]]:
    """The routes of a pod's primary network besides its default route: the cluster's
    service CIDRs and the network's join subnets, through the pod's gateways."""
    return routes_to(config.service_cidrs, gateways) + routes_to(netinfo.join_subnets, gateways)
