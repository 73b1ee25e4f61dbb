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
    from ovnk_core.contexts import ClusterManagerContext, NodeContext, ZoneContext
    from ovnk_core.kube.client import JSON
    from ovnk_core.kube.controller import Controller
    from ovnk_core.kube.factory import InformerFactory
    from ovnk_core.networks.activity import NetworkActivity
    from ovnk_core.networks.netinfo import NetInfo
    from ovnk_core.ovn.declarative import DesiredRow
    from ovnk_core.ovn.ownership import Owner
    from ovnk_core.pod_port import PodPortExtras
    from ovnk_core.render_state import PodAttachment

PROJECT = "ovnk"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

__all__ = ["hookimpl", "hookspec", "ovnk_cluster_manager_controllers", "ovnk_configure",
           "ovnk_network_activity", "ovnk_node_controllers", "ovnk_validate_network",
           "ovnk_zone_controllers", "ovnk_zone_pod_port"]


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


@hookspec
def ovnk_cluster_manager_controllers(context: ClusterManagerContext) -> list[Controller]:
    """Contribute controllers to the cluster-manager process.

    **When:** once per cluster-manager process, while it is being built (before leader
    election; nothing runs yet).  The returned controllers are started when this replica
    becomes leader — after the core's own controllers, with the shared informers already
    running — and stopped when it stops leading.  Their reconcile counters appear in the
    process's metrics like the core's.

    Get informers from ``context.informers`` here (they are shared with the core's
    controllers and started together); subscribe to network changes with
    ``context.on_networks_changed``.  Each ``Controller`` waits for its informers and
    runs its ``initial_sync`` (the startup repair) before its workers start.

    :param context: the cluster manager's shared parts (client, informers, event recorder,
        network registry); see ``ovnk_core.contexts``.
    :returns: the controllers to run (an empty list is fine).
    :raises ConfigError: the plugin cannot build its controllers; startup aborts with the
        message.
    """
    raise NotImplementedError  # a specification: plugins implement it


@hookspec
def ovnk_zone_controllers(context: ZoneContext) -> list[Controller]:
    """Contribute controllers to the zone-controller process (upstream: ovnkube-controller).

    **When:** once per zone-controller process, while it is being built (nothing runs
    yet).  The returned controllers are started after the zone's own controllers, with the
    shared informers synced, and stopped before them.  Their reconcile counters appear in
    the process's metrics.

    A feature writes its Northbound rows through ``context.nb`` under
    ``ovnk_core.contexts.feature_owner(<feature>, scope)`` only; the zone controller never
    touches them, and deletes every row of a feature that is no longer enabled when it
    starts.  Read the rendered networks with ``context.rendered_network(name)`` and hear
    about changes with ``context.on_networks_changed``.

    :param context: the zone controller's shared parts; see ``ovnk_core.contexts``.
    :returns: the controllers to run (an empty list is fine).
    :raises ConfigError: the plugin cannot build its controllers; startup aborts with the
        message.
    """
    raise NotImplementedError  # a specification: plugins implement it


@hookspec
def ovnk_node_controllers(context: NodeContext) -> list[Controller]:
    """Contribute controllers to the node agent of one node (upstream: ovnkube-node).

    **When:** once per node-agent process, while it is being built (nothing runs yet).
    The returned controllers are started after the agent's own (CNI server, gateway,
    management ports), with the shared informers synced, and stopped before them.

    A feature keeps its host rules in its own nftables table,
    ``context.nft_table(<feature>)`` (family ``inet``: ``ovnk-feature-<name>``, or the name
    its class claims with ``Feature.nft_table_name``), inside ``context.node_netns``; the
    agent never touches it, and deletes the table of a feature that is no longer enabled
    (claimed tables included, for features installed but not enabled) when it starts.
    A missing kernel feature must be detected and reported (an Event through
    ``context.recorder``), never crash-loop the agent.

    :param context: the node agent's shared parts; see ``ovnk_core.contexts``.
    :returns: the controllers to run (an empty list is fine).
    :raises ConfigError: the plugin cannot build its controllers; startup aborts with the
        message.
    """
    raise NotImplementedError  # a specification: plugins implement it


@hookspec
def ovnk_zone_pod_port(pod: JSON, attachment: PodAttachment, netinfo: NetInfo, owner: Owner,
                       port: DesiredRow) -> PodPortExtras | None:
    """Add to a pod's logical switch port, in the transaction that writes it.

    **When:** in the zone-controller process, on its pod worker thread, each time it
    reconciles a pod's attachment to a network it renders (the pod was created or
    changed, its network or node changed, at startup), after the topology built the
    pod's rows (``Topology.build_pod``) and before they are written.  Only attachments
    whose rows include a ``Logical_Switch_Port`` are offered; ``port`` is the first such
    row.  Every enabled plugin is asked; a plugin returns ``None`` for ports it has
    nothing to do with (decide from ``netinfo`` and ``attachment.role``, e.g.
    ``infrastructure-locked`` on the default network).  Work here must not grow with the
    cluster: build from the arguments, never scan informers or Northbound.

    :param pod: the pod as the zone's informer holds it (read-only: never modify it).
    :param attachment: the pod's entry for this network (IPs, MAC, role, NAD key).
    :param netinfo: the network.
    :param owner: the pod's owner of its rows on this network; ``PodPortExtras.rows``
        must carry it.
    :param port: the port row as the topology built it (its ``ids``, name and columns).
    :returns: ``ovnk_core.pod_port.PodPortExtras``: links the port joins, rows of the
        pod's owner, or an ``error`` for unusable pod input (see its docstring for what
        follows); ``None`` for nothing.
    :raises: nothing for bad input (return an ``error``).  Any exception is a bug in
        the plugin: the pod's rows on this network are left as they are in Northbound,
        the message goes to the log and the pod is retried with backoff.
    """
    raise NotImplementedError  # a specification: plugins implement it


@hookspec(firstresult=True)
def ovnk_network_activity(config: Config, informers: InformerFactory
                          ) -> NetworkActivity | None:
    """Say where each network is active: the per-node NAD filter (OKEP-5552).

    **When:** once per process, while the cluster manager or the zone controller is being
    built (its informers not started yet); the first plugin that returns an object wins.
    The cluster manager gives a node a subnet of a network only where ``is_active`` says
    so (and takes it back when it does not any more); the zone renders a network's
    per-node rows only there.  Both act again when a listener is told
    ``(network, node)``, and at startup report every node they find allocated or
    rendered through ``assume_active``.  Without an implementation every network is
    active on every node (``ovnk_core.networks.activity.EveryNode``).

    :param config: the configuration.
    :param informers: the process's informer factory; ask it for informers here and add
        handlers and indexers, never start them.
    :returns: an ``ovnk_core.networks.activity.NetworkActivity`` (its ``start`` is called
        once the informers synced, ``stop`` at shutdown), or ``None`` to leave every
        network everywhere.
    """
    raise NotImplementedError  # a specification: plugins implement it
