"""The zone's view of the networks: what to render for a network name, read from NADs.

The cluster manager validates NADs and writes each network's ID onto them;
the zone only reads.  For a network name this module answers one of:

* ``ready``: a ``NetworkState`` to render (its NADs parse, agree, and carry an ID);
* ``waiting``: NADs name the network but it cannot be rendered yet (no ID written yet,
  or no NAD parses right now); whatever was rendered before is left alone;
* ``gone``: no NAD names the network any more; its rows are to be removed.

The default network is always ``ready``, built from the cluster configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovnk_core.clustermanager.nad_controller import annotated_id
from ovnk_core.config import Config
from ovnk_core.config.values import IPNetwork
from ovnk_core.errors import NetworkConfigError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.resources import object_key
from ovnk_core.networks.netconf import parse_netconf
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME, NetInfo
from ovnk_core.networks.registry import comparable
from ovnk_core.plugins import PluginHost
from ovnk_core.zone.model import NetworkState

READY, WAITING, GONE = "ready", "waiting", "gone"


@dataclass(frozen=True)
class NetworkLookup:
    status: str
    state: NetworkState | None = None
    reason: str = ""
    nads: tuple[str, ...] = ()


def default_network(config: Config) -> NetworkState:
    """The cluster default network: Layer3, role ``default``, the cluster subnets."""
    netinfo = NetInfo(name=DEFAULT_NETWORK_NAME, topology="layer3", role="default",
                      mtu=config.mtu, subnets=tuple(config.cluster_subnets))
    return NetworkState(netinfo, 0, masquerade_subnets(config),
                        tuple(config.join_subnet(v) for v in sorted(config.ip_families)))


def masquerade_subnets(config: Config) -> tuple[IPNetwork, ...]:
    return tuple(config.masquerade_subnet(v) for v in sorted(config.ip_families))


def lookup_network(name: str, nads: list[JSON], config: Config, host: PluginHost
                   ) -> NetworkLookup:
    """What to do with network ``name``, given every NAD that names it."""
    if name == DEFAULT_NETWORK_NAME:
        return NetworkLookup(READY, default_network(config))
    live = sorted((n for n in nads if not n["metadata"].get("deletionTimestamp")),
                  key=object_key)
    if not live:
        return NetworkLookup(GONE)
    keys = tuple(object_key(n) for n in live)
    accepted: list[tuple[JSON, NetInfo]] = []
    problems = []
    for nad in live:
        try:
            netinfo = parse_netconf(nad["spec"]["config"], host)
        except (NetworkConfigError, KeyError, TypeError) as exc:
            problems.append(f"NAD {object_key(nad)}: {exc}")
            continue
        if accepted and comparable(accepted[0][1]) != comparable(netinfo):
            problems.append(f"NAD {object_key(nad)} disagrees with {object_key(accepted[0][0])}")
            continue
        accepted.append((nad, netinfo))
    if not accepted:
        return NetworkLookup(WAITING, reason="; ".join(problems), nads=keys)
    ids = {i for i in (annotated_id(nad) for nad, _ in accepted) if i is not None}
    if len(ids) != 1:
        return NetworkLookup(WAITING, reason="the cluster manager has not written one "
                             f"network ID on its NADs yet (found {sorted(ids) or 'none'})",
                             nads=keys)
    network_id = ids.pop()
    netinfo = accepted[0][1]
    return NetworkLookup(READY, NetworkState(netinfo, network_id, masquerade_subnets(config),
                                             ()), nads=keys)
