"""The UDN/CUDN sections of a set of loaded topology plugins.

``UdnSections`` is what the CRD generator, the admission rules and the NAD
rendering take instead of a list of topology names: the ``UdnSection`` of
every loaded topology that has one (``Topology.udn_section``), in CRD order.
``sections_for(config)`` loads the plugins a configuration enables;
``installed_sections()`` those of every installed topology (the default of
the functions that take sections, and what the checked-in CRDs are made of).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from typing import Any

from ovnk_core.config import Config, load_config
from ovnk_core.errors import PluginLoadError
from ovnk_core.plugins import TOPOLOGY_GROUP, PluginHost
from ovnk_core.topology import Topology
from ovnk_core.udn_section import UdnSection


class UdnSections:
    """Sections, each topology value and spec key at most once, ordered by
    ``(crd_position, topology)``."""

    def __init__(self, sections: Iterable[UdnSection] = ()) -> None:
        ordered = sorted(sections, key=lambda s: (s.crd_position, s.topology))
        for section in ordered:
            if not isinstance(section, UdnSection):
                raise PluginLoadError(f"{section!r} is not an ovnk_core UdnSection")
        for attribute in ("topology", "key"):
            values = [getattr(s, attribute) for s in ordered]
            twice = sorted({v for v in values if values.count(v) > 1})
            if twice:
                raise PluginLoadError(f"several topology plugins provide the UDN section "
                                      f"{attribute} {', '.join(map(repr, twice))}")
        self._sections = tuple(ordered)
        self._by_topology = {s.topology: s for s in ordered}

    @classmethod
    def of(cls, topologies: Iterable[Topology]) -> UdnSections:
        """The sections of loaded topologies (those without one are left out).

        :raises PluginLoadError: a section's ``topology`` in lower case is not its plugin's
            name (the NADs rendered from it would name another topology), or two plugins
            provide the same topology value or key.
        """
        sections = []
        for topology in topologies:
            section = topology.udn_section
            if section is None:
                continue
            if not isinstance(section, UdnSection):
                raise PluginLoadError(
                    f"topology plugin {topology.name!r} ({TOPOLOGY_GROUP}): udn_section is a "
                    f"{type(section).__name__}, not an ovnk_core UdnSection")
            if section.netconf_topology != topology.name:
                raise PluginLoadError(
                    f"topology plugin {topology.name!r} ({TOPOLOGY_GROUP}): its UDN section's "
                    f"topology {section.topology!r} in lower case must be the plugin's name "
                    "(it is the netconf topology of the NADs rendered from it)")
            sections.append(section)
        return cls(sections)

    def __iter__(self) -> Iterator[UdnSection]:
        return iter(self._sections)

    def __len__(self) -> int:
        return len(self._sections)

    def get(self, topology: Any) -> UdnSection | None:
        """The section selected by ``spec.topology`` = ``topology``, if loaded."""
        return self._by_topology.get(topology) if isinstance(topology, str) else None

    def namespaced(self) -> UdnSections:
        """The sections a namespaced ``UserDefinedNetwork`` may use."""
        return UdnSections(s for s in self._sections if s.namespaced)

    def values(self) -> tuple[str, ...]:
        """The ``topology`` values, sorted: the enum, and the "supported values" of an
        unsupported one."""
        return tuple(sorted(self._by_topology))

    def by_value(self) -> list[UdnSection]:
        """The sections sorted by ``topology`` value."""
        return [self._by_topology[value] for value in self.values()]


def sections_for(config: Config) -> UdnSections:
    """The sections of the topology plugins ``config`` enables (``--topologies``).

    :raises PluginLoadError: as ``PluginHost.load``, or as ``UdnSections.of``.
    :raises ConfigError: a plugin rejected the configuration.
    """
    return UdnSections.of(PluginHost.load(config).topologies.values())


@functools.cache
def installed_sections() -> UdnSections:
    """The sections of every installed topology plugin (loaded once per process)."""
    return sections_for(load_config({}, env={}))
