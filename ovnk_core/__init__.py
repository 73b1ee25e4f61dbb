"""ovnk: the OVN-Kubernetes User Defined Networks control plane, in Python.

This package is the core: configuration and feature flags, the plugin host,
OVN Northbound access, node helpers and the ``ovnk`` command.  Topologies
(layer3, layer2, localnet) and features (mirror, isolation, dynamic) are
separate distributions found through entry points; see ``ovnk_core.hookspecs``
and ``ovnk_core.topology`` for the contracts they implement.

Only names that plugin authors need are re-exported here.
"""

from __future__ import annotations

from ovnk_core.errors import ConfigError, NetworkConfigError, OvnkError, PluginLoadError
from ovnk_core.hookspecs import hookimpl
from ovnk_core.topology import Topology

__all__ = [
    "ConfigError",
    "NetworkConfigError",
    "OvnkError",
    "PluginLoadError",
    "Topology",
    "hookimpl",
]
