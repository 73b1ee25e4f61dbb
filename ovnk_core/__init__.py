"""ovnk: the OVN-Kubernetes User Defined Networks control plane, in Python.

This package is the core: configuration and feature flags, the plugin host,
OVN Northbound access, node helpers and the ``ovnk`` command.  Topologies and
features are separate distributions found through entry points; see
``ovnk_core.hookspecs``, ``ovnk_core.topology`` and ``ovnk_core.contexts`` for
the contracts they implement and the parts of each component they get.

Only names that plugin authors need are re-exported here.
"""

from __future__ import annotations

from ovnk_core.errors import ConfigError, NetworkConfigError, OvnkError, PluginLoadError
from ovnk_core.hookspecs import hookimpl
from ovnk_core.topology import NodeHost, PodRouting, ServiceAttachment, Topology

__all__ = [
    "ConfigError",
    "NetworkConfigError",
    "NodeHost",
    "OvnkError",
    "PluginLoadError",
    "PodRouting",
    "ServiceAttachment",
    "Topology",
    "hookimpl",
]
