"""What each component lends to the plugins that run inside it.

Every process — cluster manager, zone controller, node agent — loads the
enabled plugins and offers each the same kind of entry: a context of that
component's shared parts and a hook returning the controllers the plugin runs
there (``ovnk_cluster_manager_controllers``, ``ovnk_zone_controllers``,
``ovnk_node_controllers`` in ``ovnk_core.hookspecs``).  Plugins get these
contexts instead of the components themselves, so the surface they may rely
on is small and written down here.

Features own what they write: Northbound rows under ``feature_owner(feature,
scope)`` and nftables tables named ``feature_table_name(feature)``.  The
components never touch another's rows or tables, and remove those of a
feature that is no longer enabled when they start.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from ovnk_core.config import Config
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.networks.activity import EveryNode, NetworkActivity
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.registry import NetworkRegistry
from ovnk_core.ovn.capabilities import NbCapabilities, of_writer
from ovnk_core.ovn.declarative import RowWriter
from ovnk_core.ovn.ownership import Owner
from ovnk_core.render_state import NetworkState, NodeSwitch

NetworkListener = Callable[[str], None]

FEATURE_CONTROLLER_SUFFIX = "-feature-controller"
FEATURE_OWNER_PREFIX = "feature:"
FEATURE_TABLE_PREFIX = "ovnk-feature-"
FEATURE_TABLE_FAMILY = "inet"


def feature_owner(feature: str, scope: str, controller: str | None = None) -> Owner:
    """The owner of a feature's Northbound rows: owner key ``feature:<feature>:<scope>``
    (``scope`` chosen by the feature: one unit it converges and deletes as a whole, e.g.
    ``network:<name>``, ``pod:<ns>/<name>`` or ``cluster``) and, in every row's external_ids,
    controller ``<feature>-feature-controller`` unless the feature names another one to match
    upstream's rows (e.g. ``default-network-controller``).  The owner key,
    not the controller, tells a feature's rows from the core's."""
    return Owner(controller or f"{feature}{FEATURE_CONTROLLER_SUFFIX}",
                 f"{FEATURE_OWNER_PREFIX}{feature}:{scope}")


def feature_of_owner(owner: Owner) -> str | None:
    """The feature owning ``owner``'s rows (``None`` for the core's owners)."""
    if owner.key.startswith(FEATURE_OWNER_PREFIX):
        return owner.key[len(FEATURE_OWNER_PREFIX):].split(":", 1)[0] or None
    return feature_of_controller(owner.controller)


def is_feature_key(owner_key: str) -> bool:
    """Whether an owner key (``k8s.ovn.org/owner``) is a feature's."""
    return owner_key.startswith(FEATURE_OWNER_PREFIX)


def feature_of_controller(controller: str) -> str | None:
    """The feature of a ``<feature>-feature-controller`` (``None`` for any other)."""
    if controller.endswith(FEATURE_CONTROLLER_SUFFIX):
        return controller[:-len(FEATURE_CONTROLLER_SUFFIX)] or None
    return None


def feature_table_name(feature: str) -> str:
    """The nftables table (family ``inet``) a feature owns on a node: ``ovnk-feature-<name>``.
    A feature keeps all of its host rules in it; the node agent deletes the table of a
    feature that is not enabled."""
    return f"{FEATURE_TABLE_PREFIX}{feature}"


def feature_of_table(family: str, table: str) -> str | None:
    """The feature owning an nftables table (``None`` for any other table)."""
    if family == FEATURE_TABLE_FAMILY and table.startswith(FEATURE_TABLE_PREFIX):
        return table[len(FEATURE_TABLE_PREFIX):] or None
    return None


class _NetworkListeners:
    """``on_networks_changed`` for the contexts that offer it (a ``_listeners`` field)."""

    _listeners: list[NetworkListener]

    def on_networks_changed(self, listener: NetworkListener) -> None:
        """Call ``listener(network_name)`` whenever a network appears, changes, gains or
        loses a NAD, or goes away.  It runs on a controller thread and must only enqueue."""
        self._listeners.append(listener)

    def networks_changed(self, network: str) -> None:
        """Tell every listener that ``network`` changed (called by the component)."""
        for listener in list(self._listeners):
            listener(network)


@dataclass
class ClusterManagerContext(_NetworkListeners):
    """The cluster manager's shared parts, as plugins see them.

    :ivar config: the process configuration.
    :ivar client: the Kubernetes client (official client underneath).
    :ivar informers: the process-wide informer factory; ask it for informers in the
        hook (before the controllers start), never create informers of your own.
    :ivar recorder: emits Events as ``ovnkube-cluster-manager``.
    :ivar networks: the network registry filled by the NAD controller; read it only.
    :ivar activity: where each network is active (``ovnk_core.networks.activity``): what
        the process's ``ovnk_network_activity`` answer says, else every network
        everywhere.  Add listeners in the hook; never start or stop it.
    :ivar metrics: the process's Prometheus registry, for collectors of a plugin's own.
    """

    config: Config
    client: KubeClient
    informers: InformerFactory
    recorder: EventRecorder
    networks: NetworkRegistry
    _listeners: list[NetworkListener] = field(default_factory=list)
    activity: NetworkActivity = field(default_factory=EveryNode)
    metrics: CollectorRegistry | None = None

    def primary_network_of_namespace(self, namespace: str) -> tuple[str, NetInfo] | None:
        """``(nad_key, netinfo)`` of the namespace's primary user-defined network, or None
        when the namespace has none (yet) and its pods use the default network."""
        nad_key = self.networks.primary_nad_for_namespace(namespace)
        if nad_key is None:
            return None
        name = self.networks.network_of_nad(nad_key)
        entry = self.networks.get(name) if name is not None else None
        if entry is None or not entry.netinfo.is_primary:
            return None
        return nad_key, entry.netinfo


@dataclass
class ZoneContext(_NetworkListeners):
    """The zone controller's shared parts, as plugins see them.

    :ivar config: the process configuration.
    :ivar client: the Kubernetes client.
    :ivar informers: the process-wide informer factory (shared with the zone controller).
    :ivar recorder: emits Events as ``ovnkube-controller``.
    :ivar nb: the zone's Northbound writer.  Write only rows owned by
        ``feature_owner(<your feature>, scope)`` with ``ovnk_core.ovn.declarative.apply``
        / ``delete_owner``; rows of other owners are never yours to touch.
    :ivar rendered_network: the network as the zone last rendered it (``None``: not
        rendered, or gone); hear about changes with ``on_networks_changed``.
    :ivar owners_in_nb: the owners that have rows in NB whose owner key starts with a
        prefix; use ``feature_owners`` (e.g. at startup, to remove rows of objects deleted
        while the zone was down).
    """

    config: Config
    client: KubeClient
    informers: InformerFactory
    recorder: EventRecorder | None
    nb: RowWriter
    rendered_network: Callable[[str], NetworkState | None]
    owners_in_nb: Callable[[str], Collection[Owner]]
    _listeners: list[NetworkListener] = field(default_factory=list)
    # whether NB holds an owned row of a table with a primary id (``k8s.ovn.org/id``),
    # whoever owns it: to take over rows an earlier version of a feature wrote under other
    # ids (upstream's legacy names), which ``adopt_and_delete`` then removes
    row_exists: Callable[[str, str], bool] = lambda _table, _primary_id: False
    # the rendered primary user-defined network of a namespace (``None``: its pods use the
    # default network), as the zone renders its pods
    primary_network_of_namespace: Callable[[str], str | None] = lambda _namespace: None
    # ask the zone to reconcile these pods (``ns/name`` keys) again: for a feature whose
    # ``ovnk_zone_pod_port`` answer depends on other objects (a policy selecting the pod)
    # and has changed; only enqueues
    reconcile_pods: Callable[[Iterable[str]], None] = lambda _keys: None
    # the switches of a network's nodes in this zone with their management addresses
    # (``ovnk_core.render_state.NodeSwitch``; none while the network is not rendered)
    node_switches: Callable[[str], list[NodeSwitch]] = lambda _network: []
    _capability_listeners: list[Callable[[NbCapabilities], None]] = field(
        default_factory=list)

    @property
    def nb_capabilities(self) -> NbCapabilities:
        """What the zone's Northbound supports (``ovnk_core.ovn.capabilities``): render
        upstream's rows where it can hold them, today's where it cannot."""
        return of_writer(self.nb)

    def on_nb_capabilities_changed(self, listener: Callable[[NbCapabilities], None]) -> None:
        """Call ``listener(capabilities)`` when NB supports other things than before (OVN
        upgraded or downgraded under the zone): render again.  It runs with the writer's
        lock held and must only enqueue."""
        self._capability_listeners.append(listener)

    def nb_capabilities_changed(self, capabilities: NbCapabilities) -> None:
        """Tell every listener (called by the component)."""
        for listener in list(self._capability_listeners):
            listener(capabilities)

    def feature_owners(self, feature: str) -> set[Owner]:
        """Every owner of ``feature``'s rows now in NB (``feature_owner(feature, ...)``,
        whatever controller it names)."""
        return set(self.owners_in_nb(f"{FEATURE_OWNER_PREFIX}{feature}:"))


@dataclass
class NodeContext:
    """The node agent's shared parts, as plugins see them.

    :ivar config: the process configuration.
    :ivar client: the Kubernetes client (the node's own identity: it may read what its
        RBAC allows and write only its Node's status).
    :ivar informers: the process-wide informer factory.
    :ivar recorder: emits Events as ``ovnkube-node``.
    :ivar node: this node's name.
    :ivar node_netns: the network namespace the node's host networking lives in (``None``:
        the agent's own).  Apply nftables and routes there.
    :ivar nft_table: the name of the nftables table (family ``inet``) each feature owns
        here: ``nft_table(<feature>)``.  A feature keeps every host rule in its own table:
        ``ovnk-feature-<name>``, or the one its class claims (``Feature.nft_table_name``,
        e.g. ``ovn-kubernetes``); ``NodeFeatureControllers`` sets this to
        ``PluginHost.nft_table`` before calling the hook.
    """

    config: Config
    client: KubeClient
    informers: InformerFactory
    recorder: EventRecorder
    node: str
    node_netns: str | None
    nft_table: Callable[[str], str] = feature_table_name
