"""Networks whose topology no loaded plugin provides keep their IDs until their NADs go.

A NAD the cluster manager accepted carries its network's ID
(``k8s.ovn.org/network-id``).  When the plugin of the network's topology is left
out (``--topologies``) or uninstalled, no component can parse that NAD any more.
The network is not gone for all that: its NAD is there, OVN holds rows carrying
its ID until the zone removes them, its pods keep their addresses, and it renders
again when the plugin comes back.  Were its ID released, the next network would
be given it while those rows still carry it.  So the NAD controller keeps the ID
(and the tunnel keys) reserved while a live NAD carrying the ID names the
network, and each such NAD says why the network is not rendered: the Warning
``NetworkNotRendered`` a network of a topology that only parses gets
(``networks.rendering``).  A UDN's or CUDN's NAD gets it from the UDN
controllers, together with its owner (``udn.unrendered``), so it is said once.
Deleting the last such NAD releases the ID.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from ovnk_core.errors import TopologyNotSupported
from ovnk_core.kube.client import JSON
from ovnk_core.networks import definition
from ovnk_core.networks.rendering import not_rendered_message, rendering_problem
from ovnk_core.udn.nad import CUDN_KIND, UDN_KIND


class Topology(Protocol):
    """What the message reads of a loaded topology plugin."""

    @property
    def renders(self) -> bool: ...


def held_nads(network: str, unloaded: Iterable[tuple[JSON, TopologyNotSupported]]
              ) -> list[tuple[JSON, TopologyNotSupported]]:
    """The NADs of ``network`` whose topology no plugin provides and that carry the
    network's ID (the cluster manager accepted them before), oldest first: the first one's
    ID is the network's."""
    return sorted(((nad, exc) for nad, exc in unloaded
                   if definition.accepted_id(nad, network) is not None),
                  key=lambda pair: definition.age(pair[0]))


def owned_by_udn(nad: JSON) -> bool:
    """Whether a UDN or CUDN controls ``nad`` (the UDN controllers report on it)."""
    return any(ref.get("controller") and ref.get("kind") in (UDN_KIND, CUDN_KIND)
               for ref in (nad.get("metadata") or {}).get("ownerReferences") or [])


def unrendered_message(network: str, topology: str, loaded: Mapping[str, Topology]) -> str:
    """The Warning's message on a held NAD: the network, and the topology no plugin
    provides (``loaded``: the enabled topology plugins, by name)."""
    problem = rendering_problem(loaded, topology) or f'topology "{topology}" is not loaded'
    return not_rendered_message(network, problem)
