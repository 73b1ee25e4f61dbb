"""Whether an enabled plugin renders a topology into OVN, and the words for when none does.

A topology plugin may parse and allocate networks without rendering them
(``Topology.renders`` is false), and a NAD made while a plugin was enabled may
outlive it.  Such a network has its NAD, ``NetworkCreated`` stays true (the
NAD exists), yet nothing is rendered into OVN Northbound, so its pods' ports
are never bound.  The cluster manager says so with a Warning event on the NAD
and on the UDN/CUDN (``REASON``), and the node agent refuses the pods' CNI ADD
with the same explanation instead of waiting for a binding that never comes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

REASON = "NetworkNotRendered"


class Topology(Protocol):
    """What this module reads of a topology plugin (``ovnk_core.topology.Topology``)."""

    @property
    def renders(self) -> bool: ...


def rendering_problem(topologies: Mapping[str, Topology], topology: str) -> str | None:
    """Why no enabled plugin renders ``topology`` (None: one does).

    :param topologies: the enabled topology plugins by name (``PluginHost.topologies``).
    """
    plugin = topologies.get(topology)
    if plugin is not None and plugin.renders:
        return None
    rendering = ", ".join(sorted(n for n, t in topologies.items() if t.renders)) or "none"
    if plugin is None:
        return (f'no enabled topology plugin provides topology "{topology}" (plugins that '
                f"render into OVN: {rendering})")
    return (f'no enabled plugin renders topology "{topology}" into OVN: the {topology} plugin '
            f"only parses and allocates its networks (plugins that render into OVN: "
            f"{rendering})")


def not_rendered_message(network: str, problem: str) -> str:
    """The Warning event's message on a NAD and its UDN/CUDN."""
    return f"network {network} is not rendered: {problem}; its pods get no network"
