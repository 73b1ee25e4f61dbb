"""The hooks through which the core calls plugins (pluggy, project name ``ovnk``).

Every loaded plugin object — topology instances and feature plugins alike —
is registered with one ``pluggy.PluginManager("ovnk")``; a plugin implements
any subset of the hooks below by decorating methods of the same name with
``ovnk_core.hookimpl``.  Hooks are always called with keyword arguments, so
an implementation may accept only the arguments it needs.

Conventions:

* A hook that validates raises; it does not return a verdict.  The exception
  type says what happens next (see each hook).
* Implementations run in LIFO registration order: feature plugins are
  registered after topologies, and the core's own checks are registered first,
  so they run last.
* Hooks run on the caller's thread; they must not block on network I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ovnk_core.config import Config
    from ovnk_core.networks.netinfo import NetInfo

PROJECT = "ovnk"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

__all__ = ["hookimpl", "hookspec", "ovnk_configure", "ovnk_validate_network"]


@hookspec
def ovnk_configure(config: Config) -> None:
    """Check that the parsed configuration suits this plugin.

    **When:** once per process, right after all enabled plugins are loaded and
    registered, before any controller starts.  Called in every component
    (cluster-manager, controller, node) and by ``ovnk plugins``.

    :param config: the validated, immutable configuration.
    :raises ConfigError: the plugin cannot run with this configuration; startup
        aborts and the message is shown prefixed with the plugin's name.  Do not
        raise for conditions that may change at run time.
    """


@hookspec
def ovnk_validate_network(netinfo: NetInfo, config: Config) -> None:
    """Veto a network before any component acts on it.

    **When:** each time a NAD's netconf has been parsed by its topology
    plugin — on NAD add and update, and for every NAD at startup.  The core
    registers its own checks (overlap with built-in subnets) as an internal
    plugin.

    :param netinfo: the parsed network.
    :param config: the configuration, for cluster-wide facts such as subnets.
    :raises NetworkConfigError: the network is rejected; the message becomes the
        network's status condition and an event.  Other networks are unaffected.
    """
