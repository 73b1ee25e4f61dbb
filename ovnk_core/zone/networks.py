"""The zone's view of the networks: what to render for a network name, read from NADs.

The cluster manager validates NADs and writes each network's ID onto the NADs
it accepts; the zone only reads, and takes a network's definition from those
NADs alone (``networks.definition``): a NAD that names the network without
carrying its ID — say, one in another namespace claiming the network's name
with other subnets, which the cluster manager refused — is never rendered
from, and its pods are not attached to the network.  For a network name this
module answers one of:

* ``ready``: a ``NetworkState`` to render, from the accepted NADs (``nads``);
* ``waiting``: NADs name the network but it cannot be rendered yet (none is accepted
  yet, or none of those parses right now); whatever was rendered before is left alone;
* ``unrendered``: NADs the cluster manager accepted name a topology no loaded plugin
  provides (left out of ``--topologies``, or uninstalled) and none parses; the
  network keeps its ID (the cluster manager holds it until those NADs are deleted),
  but nothing here can render it: its rows are to be removed, as a disabled
  feature's are, and rendered again when the plugin is back;
* ``gone``: no NAD names the network any more; its rows are to be removed.

The default network is always ``ready``, built from the cluster configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovnk_core.annotations.tunnel_keys import annotated_tunnel_keys
from ovnk_core.config import Config
from ovnk_core.config.values import IPNetwork
from ovnk_core.errors import NetworkConfigError, TopologyNotSupported
from ovnk_core.kube.client import JSON
from ovnk_core.kube.resources import object_key
from ovnk_core.networks import definition
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME, DEFAULT_NETWORK_NEEDS, NetInfo
from ovnk_core.networks.registry import comparable
from ovnk_core.plugins import PluginHost
from ovnk_core.render_state import NetworkState

READY, WAITING, UNRENDERED, GONE = "ready", "waiting", "unrendered", "gone"


@dataclass(frozen=True)
class NetworkLookup:
    status: str
    state: NetworkState | None = None
    reason: str = ""
    nads: tuple[str, ...] = ()  # ready: the accepted NADs; waiting: every live NAD naming it


def default_network(config: Config) -> NetworkState:
    """The cluster default network: role ``default``, the cluster subnets, rendered by the
    topology ``--default-network-topology`` names."""
    netinfo = NetInfo(name=DEFAULT_NETWORK_NAME, topology=config.default_network_topology,
                      role="default", mtu=config.mtu, subnets=tuple(config.cluster_subnets),
                      needs=DEFAULT_NETWORK_NEEDS)
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
    candidates: list[tuple[JSON, NetInfo]] = []
    problems = []
    unloaded = []  # accepted NADs whose topology no loaded plugin provides
    for nad in live:
        if definition.accepted_id(nad, name) is None:
            continue  # not accepted by the cluster manager (yet, or ever)
        try:
            candidates.append((nad, host.parse_netconf(nad["spec"]["config"])))
        except TopologyNotSupported as exc:
            unloaded.append(object_key(nad))
            problems.append(f"NAD {object_key(nad)}: {exc}")
        except (NetworkConfigError, KeyError, TypeError) as exc:
            problems.append(f"NAD {object_key(nad)}: {exc}")
    decision = definition.decide(name, candidates,
                                 lambda a, b: comparable(a) == comparable(b),
                                 accepted_only=True)
    if decision.definition is None and unloaded:
        return NetworkLookup(UNRENDERED, reason="; ".join(problems), nads=tuple(unloaded))
    if decision.definition is None or decision.network_id is None:
        reason = "; ".join(problems) or ("the cluster manager has not accepted any of its "
                                         "NADs yet (none carries a network ID)")
        return NetworkLookup(WAITING, reason=reason, nads=tuple(object_key(n) for n in live))
    netinfo = decision.definition
    tunnel_keys: tuple[int, ...] = ()
    if netinfo.needs.extra_tunnel_keys:
        defining = next(nad for nad, _ in candidates if object_key(nad) in decision.accepted)
        tunnel_keys = tuple(annotated_tunnel_keys(defining))
        if len(tunnel_keys) != 1 + netinfo.needs.extra_tunnel_keys:
            return NetworkLookup(WAITING, reason=(
                f"NAD {object_key(defining)} does not list the network's "
                f"{1 + netinfo.needs.extra_tunnel_keys} tunnel keys (yet): "
                f"{list(tunnel_keys)}"), nads=tuple(object_key(n) for n in live))
    return NetworkLookup(READY, NetworkState(netinfo, decision.network_id,
                                             masquerade_subnets(config), (), tunnel_keys),
                         nads=decision.accepted)
