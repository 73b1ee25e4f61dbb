"""The plugin host: stevedore finds and loads plugins, pluggy dispatches hooks.

Two entry-point groups exist.  ``ovnk.topologies`` holds ``Topology``
classes, one per topology string; every installed topology is loaded unless
``--topologies`` names a subset.  ``ovnk.features`` holds feature plugins,
loaded only when the configuration enables them (``Config.enabled_features``)
— an installed but disabled feature is never instantiated nor registered; only a
node agent imports its class, to learn the nftables table it claims
(``Feature.nft_table_name``) and delete it (``disabled_feature_tables``).

Loading is explicit (``PluginHost.load(config)``), never a side effect of an
import, so tests build as many independent hosts as they like.  Anything that
would leave the process half-working fails here, at startup, with a message
naming the entry point: an enabled plugin that is not installed, one whose
import fails, two distributions claiming one name.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, cast

import pluggy
from stevedore import ExtensionManager, NamedExtensionManager

from ovnk_core import hookspecs
from ovnk_core.config import Config
from ovnk_core.contexts import feature_table_name
from ovnk_core.errors import (
    ConfigError,
    NetworkConfigError,
    PluginLoadError,
    TopologyNotSupported,
)
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.networks import builtin_checks
from ovnk_core.networks.activity import EveryNode, NetworkActivity
from ovnk_core.networks.netconf import parse_common
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.pods.ip_pools import check_pod_pools
from ovnk_core.topology import Topology

log = logging.getLogger(__name__)

TOPOLOGY_GROUP = "ovnk.topologies"
FEATURE_GROUP = "ovnk.features"
GROUPS = (TOPOLOGY_GROUP, FEATURE_GROUP)
TRACE_ENV = "OVNK_TRACE_HOOKS"


@dataclass(frozen=True)
class PluginInfo:
    """One discovered entry point, described without importing it."""

    name: str
    group: str
    value: str
    distribution: str
    version: str
    enabled: bool


def discover(config: Config | None = None) -> list[PluginInfo]:
    """Every plugin installed in either group, with whether ``config`` enables it."""
    found = []
    for group in GROUPS:
        for ep in metadata.entry_points(group=group):
            dist = ep.dist
            found.append(PluginInfo(
                name=ep.name, group=group, value=ep.value,
                distribution=dist.name if dist else "?",
                version=dist.version if dist else "?",
                enabled=config is not None and _is_enabled(config, group, ep.name),
            ))
    return sorted(found, key=lambda info: (info.group, info.name, info.distribution))


def _is_enabled(config: Config, group: str, name: str) -> bool:
    if group == FEATURE_GROUP:
        return name in config.enabled_features
    return not config.topologies or name in config.topologies


class BuiltinNetworkChecks:
    """The core's own network checks (``networks.builtin_checks``, then
    ``pods.ip_pools.check_pod_pools``), registered first so they run after every
    plugin's."""

    @hookspecs.hookimpl
    def ovnk_validate_network(self, netinfo: NetInfo, config: Config) -> None:
        builtin_checks.check_network(netinfo, config)
        check_pod_pools(netinfo)


class PluginHost:
    """The loaded plugins of one process and the pluggy manager that calls them."""

    def __init__(self, config: Config, manager: pluggy.PluginManager,
                 topologies: dict[str, Topology], features: dict[str, Any]) -> None:
        self.config = config
        self.manager = manager
        self.topologies = topologies
        self.features = features

    @property
    def hook(self) -> Any:
        return self.manager.hook

    @classmethod
    def load(cls, config: Config) -> PluginHost:
        """Load every enabled plugin, register it, and run ``ovnk_configure``.

        :raises PluginLoadError: an enabled plugin is missing, broken or ambiguous.
        :raises ConfigError: a plugin rejected the configuration.
        """
        manager = pluggy.PluginManager(hookspecs.PROJECT)
        manager.add_hookspecs(hookspecs)
        manager.register(BuiltinNetworkChecks(), name="core:network-checks")
        if os.environ.get(TRACE_ENV):
            manager.trace.root.setwriter(lambda text: log.debug("hook %s", text.rstrip()))
            manager.enable_tracing()

        topologies = _load_group(config, TOPOLOGY_GROUP, config.topologies or None)
        features = _load_group(config, FEATURE_GROUP, config.enabled_features)
        for name, obj in topologies.items():
            if not isinstance(obj, Topology):
                raise PluginLoadError(
                    f"topology plugin {name!r} ({TOPOLOGY_GROUP}) is a {type(obj).__name__}, "
                    "not an ovnk_core.Topology"
                )
            if getattr(obj, "name", None) != name:
                raise PluginLoadError(
                    f"topology plugin {name!r} ({TOPOLOGY_GROUP}) declares name "
                    f"{getattr(obj, 'name', None)!r}; the entry-point name and Topology.name "
                    "must be equal"
                )
            manager.register(obj, name=f"{TOPOLOGY_GROUP}:{name}")
        for name, obj in features.items():
            manager.register(obj, name=f"{FEATURE_GROUP}:{name}")
        try:
            manager.check_pending()
        except pluggy.PluginValidationError as exc:
            raise PluginLoadError(f"plugin implements an unknown hook: {exc}") from None

        host = cls(config, manager, dict(topologies), features)
        host._configure()
        log.info("plugins loaded: topologies=%s features=%s",
                 ",".join(topologies) or "-", ",".join(features) or "-")
        return host

    def _configure(self) -> None:
        for impl in reversed(self.manager.hook.ovnk_configure.get_hookimpls()):
            available = {"config": self.config}
            try:
                impl.function(**{arg: available[arg] for arg in impl.argnames})
            except ConfigError as exc:
                raise ConfigError(f"plugin {impl.plugin_name}: {exc}") from None

    def contributed_controllers(self, hook_name: str, context: Any) -> list[Controller]:
        """Call one of the ``ovnk_*_controllers`` hooks and gather the controllers.

        Implementations run in pluggy's order; each gets only the arguments it names.

        :raises ConfigError: an implementation refused; the message names the plugin.
        """
        controllers: list[Controller] = []
        hook = getattr(self.manager.hook, hook_name)
        for impl in reversed(hook.get_hookimpls()):
            available = {"context": context}
            try:
                result = impl.function(**{arg: available[arg] for arg in impl.argnames})
            except ConfigError as exc:
                raise ConfigError(f"plugin {_label(impl)}: {exc}") from None
            controllers.extend(result or [])
        return controllers

    def network_activity(self, informers: InformerFactory) -> NetworkActivity:
        """Where each network is active (hook ``ovnk_network_activity``): the first
        plugin's answer, else every network on every node.

        :raises ConfigError: the implementation refused; the message names the plugin.
        """
        hook = self.manager.hook.ovnk_network_activity
        for impl in reversed(hook.get_hookimpls()):
            available = {"config": self.config, "informers": informers}
            try:
                result = impl.function(**{arg: available[arg] for arg in impl.argnames})
            except ConfigError as exc:
                raise ConfigError(f"plugin {_label(impl)}: {exc}") from None
            if result is not None:
                return cast(NetworkActivity, result)
        return EveryNode()

    def nft_table(self, feature: str) -> str:
        """The nftables table (family ``inet``) of an enabled ``feature`` on a node: the one
        it claims (``Feature.nft_table_name``), else ``ovnk-feature-<name>``."""
        claimed = getattr(self.features.get(feature), "nft_table_name", None)
        return claimed if isinstance(claimed, str) and claimed else feature_table_name(feature)

    def disabled_feature_tables(self) -> dict[str, str]:
        """Feature → the nftables table it claims, for features installed but not enabled
        (their classes are imported, not instantiated) whose table no enabled feature uses.
        A class that cannot be imported is logged and left out (its table stays)."""
        in_use = {self.nft_table(name) for name in self.features}
        claimed: dict[str, str] = {}
        for ep in metadata.entry_points(group=FEATURE_GROUP):
            if ep.name in self.features or ep.name in claimed:
                continue
            try:
                table = getattr(ep.load(), "nft_table_name", None)
            except Exception as exc:  # a broken disabled plugin must not stop the agent
                log.warning("disabled feature %s (%s) cannot be imported to find its "
                            "nftables table: %s: %s", ep.name, ep.value,
                            type(exc).__name__, exc)
                continue
            if isinstance(table, str) and table and table not in in_use:
                claimed[ep.name] = table
        return claimed

    def default_topology(self) -> Topology:
        """The topology that renders the cluster default network.

        :raises ConfigError: ``--default-network-topology`` names no enabled topology.
        """
        name = self.config.default_network_topology
        if name not in self.topologies:
            state = "enabled (--topologies)" if _installed(TOPOLOGY_GROUP, name) \
                else "installed"
            raise ConfigError(
                f"the default network's topology {name!r} (--default-network-topology) is "
                f"not {state}; enabled topologies: "
                f"{', '.join(sorted(self.topologies)) or 'none'}")
        topology = self.topologies[name]
        if topology.renders and not topology.renders_default_network:
            raise ConfigError(default_network_refusal(name))
        return topology

    def topology(self, name: str) -> Topology:
        """The enabled topology plugin for ``name``.

        :raises TopologyNotSupported: no enabled plugin provides it (reported on the network).
        """
        try:
            return self.topologies[name]
        except KeyError:
            raise TopologyNotSupported(name, list(self.topologies)) from None

    def parse_netconf(self, document: str | Mapping[str, Any]) -> NetInfo:
        """Full parse of a NAD's CNI config: the keys every netconf shares
        (``networks.netconf.parse_common``), the rest by the topology plugin named by
        ``topology`` (``Topology.parse_netconf``), then every plugin's
        ``ovnk_validate_network``.

        :raises NetworkConfigError: the config is invalid (a plugin's veto included).
        :raises TopologyNotSupported: no enabled plugin provides its topology.
        """
        conf = parse_common(document)
        topology = self.topology(conf.topology)
        netinfo = topology.parse_netconf(conf)
        if netinfo.is_primary and not topology.supports_primary:
            raise NetworkConfigError(
                f"unexpected network field \"role\" {netinfo.role!r} for {topology.name!r} "
                "topology: the topology does not support primary networks")
        self.hook.ovnk_validate_network(netinfo=netinfo, config=self.config)
        return netinfo


def _label(impl: Any) -> str:
    """How an error names a hook implementation's plugin: its registration name
    (``ovnk.features:<name>``), or its class for one registered without a name."""
    name = str(impl.plugin_name)
    return type(impl.plugin).__name__ if name.isdigit() else name


def default_network_refusal(name: str) -> str:
    """Why a topology that renders only user-defined networks cannot be the default one."""
    return (f"the default network's topology {name!r} (--default-network-topology) renders "
            "user-defined networks only: it cannot render the cluster default network")


def _installed(group: str, name: str) -> bool:
    return any(ep.name == name for ep in metadata.entry_points(group=group))


def _load_group(config: Config, group: str, names: Iterable[str] | None) -> dict[str, Any]:
    """Load (and instantiate with ``config``) the named entry points of ``group``.

    ``names=None`` loads every installed one.
    """
    installed: dict[str, list[str]] = {}
    for ep in metadata.entry_points(group=group):
        installed.setdefault(ep.name, []).append(ep.dist.name if ep.dist else "?")
    wanted = list(installed) if names is None else list(names)
    for name in wanted:
        dists = sorted(set(installed.get(name, [])))
        if len(dists) > 1:
            raise PluginLoadError(
                f"plugin {name!r} ({group}) is provided by several distributions: "
                f"{', '.join(dists)}; uninstall all but one"
            )
    missing = [name for name in wanted if name not in installed]
    if missing:
        raise PluginLoadError(
            f"enabled plugin(s) not installed: {', '.join(missing)} "
            f"(no entry point of that name in group {group!r}; "
            f"installed: {', '.join(sorted(installed)) or 'none'})"
        )
    if not wanted:
        return {}
    failures: list[str] = []

    def on_failure(_manager: Any, ep: Any, exc: BaseException) -> None:
        failures.append(f"{ep.name} = {ep.value}: {type(exc).__name__}: {exc}")

    kwargs: dict[str, Any] = dict(
        invoke_on_load=True, invoke_kwds={"config": config},
        on_load_failure_callback=on_failure,
    )
    if names is None:
        extensions: Any = ExtensionManager(group, **kwargs)
    else:
        extensions = NamedExtensionManager(group, names=wanted, name_order=True, **kwargs)
    if failures:
        raise PluginLoadError(
            f"plugin(s) in group {group!r} failed to load: " + "; ".join(failures)
        )
    loaded = list(extensions)
    if names is None:
        loaded.sort(key=lambda ext: ext.name)
    return {ext.name: ext.obj for ext in loaded}
