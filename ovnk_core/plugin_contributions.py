"""What each installed plugin contributes, found by introspection — nothing is run.

A plugin contributes through the hooks it implements (``ovnk_core.hookspecs``)
and, for a topology, through the ``Topology`` members it overrides.  Each hook
runs in a known component (``HOOKS``):

* cluster-manager: ``ovnk_cluster_manager_controllers`` (controllers) and
  ``ovnk_validate_network`` (network checks, also applied by the zone);
* zone: ``ovnk_zone_controllers`` (controllers) and ``ovnk_zone_pod_port`` (pod ports);
* node: ``ovnk_node_controllers``;
* every process: ``ovnk_configure`` (a configuration check).

A plugin's ``rbac_rules`` (``ovnk_core.manifests.plugin_rbac``) show as **API
rights** under each component they are for.

A topology's own column lists what it overrides of ``Topology``:
``parse_netconf`` (parse — networks of its kind are accepted), ``pod_routing``
(routes), ``default_mtu`` (mtu), the ``build_*`` methods with ``renders`` set
(render — its networks are rendered into OVN Northbound), ``udn_section`` (udn
section — UDNs and CUDNs may ask for it), and any other public member the base
class gains later, by its name.

**Contributes nothing** means: no hook implementation other than
``ovnk_configure`` — a configuration check changes nothing the cluster sees, and
the one every ``Feature`` inherits (the required-flags check) is not even
listed — and no topology member.  A topology always contributes parsing; one
that does not render is reported as **parses only**: its networks are accepted
and allocated but never rendered into OVN.  ``status`` never says a bare
``enabled`` for either.

Listing imports each entry point (its class is what is inspected) but never
instantiates nor configures it; ``what_plugins_contribute`` never raises for a
broken plugin — the failure is the plugin's problem in the report.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import pluggy

from ovnk_core import hookspecs
from ovnk_core.config import Config
from ovnk_core.errors import PluginLoadError
from ovnk_core.feature import Feature
from ovnk_core.manifests.plugin_rbac import rbac_rules_of
from ovnk_core.plugins import (
    FEATURE_GROUP,
    TOPOLOGY_GROUP,
    PluginInfo,
    default_network_refusal,
    discover,
)
from ovnk_core.topology import Topology

CLUSTER_MANAGER = "cluster-manager"
ZONE = "zone"
NODE = "node"
EVERY_PROCESS = "every process"
TOPOLOGY = "topology"
COMPONENTS = (CLUSTER_MANAGER, ZONE, NODE, EVERY_PROCESS, TOPOLOGY)
"""The components, in the order contributions are shown."""

CONFIGURATION_CHECK = "configuration check"
HOOKS: dict[str, tuple[tuple[str, ...], str]] = {
    "ovnk_cluster_manager_controllers": ((CLUSTER_MANAGER,), "controllers"),
    "ovnk_validate_network": ((CLUSTER_MANAGER, ZONE), "network checks"),
    "ovnk_zone_controllers": ((ZONE,), "controllers"),
    "ovnk_zone_pod_port": ((ZONE,), "pod ports"),
    "ovnk_network_activity": ((CLUSTER_MANAGER, ZONE), "network activity"),
    "ovnk_node_controllers": ((NODE,), "controllers"),
    "ovnk_configure": ((EVERY_PROCESS,), CONFIGURATION_CHECK),
}
"""Each hook of ``ovnk_core.hookspecs``: the components it runs in and what it is called."""

NOT_CONTRIBUTING = frozenset({(EVERY_PROCESS, CONFIGURATION_CHECK)})
"""Contributions that check and change nothing: alone, they are "contributes nothing"."""

PARSE, ROUTES, MTU, RENDER = "parse", "routes", "mtu", "render"
UDN_SECTION = "udn section"
SERVICES = "services"
INTERCONNECT = "interconnect"
NODE_CHECK = "node check"
TOPOLOGY_MEMBERS: dict[str, str] = {
    "parse_netconf": PARSE, "pod_routing": ROUTES, "default_mtu": MTU,
    "build_network": RENDER, "build_node": RENDER, "build_pod": RENDER,
    "udn_section": UDN_SECTION, "service_attachment": SERVICES, "interconnect": INTERCONNECT,
    "build_remote_pod": INTERCONNECT,
    "node_attachment_problem": NODE_CHECK,
}
"""Known ``Topology`` members and what overriding one contributes; any other public member
of the base class is shown by its name."""
RENDER_METHODS = ("build_network", "build_node", "build_pod")
TOPOLOGY_DECLARATIONS = frozenset({"name", "renders", "renders_default_network",
                                   "serves_services", "supports_primary", "rbac_rules",
                                   "renders_remote_pods"})
"""``Topology`` class attributes that describe the topology rather than contribute to it."""

API_RIGHTS = "API rights"
RBAC_COMPONENTS = {"cluster-manager": CLUSTER_MANAGER, "zone": ZONE, "node": NODE}
"""``rbac_rules`` keys → the component they are shown under."""

NOT_RENDERED = "parses only — its networks are not rendered into OVN"
NOTHING = "contributes nothing in any component"

_INHERITED_HOOKS = frozenset(value for value in vars(Feature).values()
                             if inspect.isfunction(value))


@dataclass(frozen=True)
class Contributions:
    """What one plugin adds, per component.

    :ivar components: ``(component, labels)`` pairs in ``COMPONENTS`` order, only those
        with something.
    :ivar contributes: whether anything besides a configuration check is there.
    :ivar renders: for a topology, whether its networks are rendered into OVN
        (``None`` for a feature, or when the plugin could not be inspected).
    :ivar problems: what startup would refuse or what would not work as declared.
    :ivar inspected: False when the entry point could not be imported or is not a class.
    :ivar renders_default_network: for a topology, ``Topology.renders_default_network``.
    """

    components: tuple[tuple[str, tuple[str, ...]], ...] = ()
    contributes: bool = False
    renders: bool | None = None
    problems: tuple[str, ...] = ()
    inspected: bool = True
    renders_default_network: bool = True

    def labels(self, component: str) -> tuple[str, ...]:
        return dict(self.components).get(component, ())


def inspect_plugin(plugin: Any, group: str, name: str | None = None) -> Contributions:
    """The contributions of a plugin class (or instance), without calling any of it.

    :param plugin: what the entry point names (a class), or a plugin object.
    :param group: ``TOPOLOGY_GROUP`` or ``FEATURE_GROUP``.
    :param name: the entry-point name, checked against a topology's ``name``.
    """
    if not inspect.isclass(plugin) and inspect.isroutine(plugin):
        return Contributions(inspected=False, problems=(
            f"the entry point is a {type(plugin).__name__}, not a class: what it contributes "
            "is known only once it is called",))
    found: dict[str, list[str]] = {component: [] for component in COMPONENTS}
    problems: list[str] = []
    for hook in _implemented_hooks(plugin, problems):
        where, label = HOOKS.get(hook, ((EVERY_PROCESS,), hook))
        for component in where:
            found[component].append(label)
    try:
        for component in rbac_rules_of(plugin, f"{group}:{name or '?'}"):
            found[RBAC_COMPONENTS[component]].append(API_RIGHTS)
    except PluginLoadError as exc:
        problems.append(str(exc))
    renders: bool | None = None
    if group == TOPOLOGY_GROUP:
        renders = _inspect_topology(plugin, name, found[TOPOLOGY], problems)
    components = tuple((component, tuple(dict.fromkeys(found[component])))
                       for component in COMPONENTS if found[component])
    contributes = any((component, label) not in NOT_CONTRIBUTING
                      for component, labels in components for label in labels)
    default = bool(getattr(plugin, "renders_default_network", True))
    return Contributions(components=components, contributes=contributes, renders=renders,
                         problems=tuple(problems), renders_default_network=default)


def _implemented_hooks(plugin: Any, problems: list[str]) -> list[str]:
    """The hooks ``plugin`` implements itself (not through ``Feature``), as pluggy sees
    them: registered with a scratch manager, which calls nothing."""
    manager = pluggy.PluginManager(hookspecs.PROJECT)
    manager.add_hookspecs(hookspecs)
    try:
        manager.register(plugin, name="inspected")
    except (pluggy.PluginValidationError, ValueError) as exc:
        problems.append(f"invalid hook implementation (startup refuses it): {exc}")
        return []
    hooks = []
    for caller in manager.get_hookcallers(plugin) or ():
        functions = [getattr(impl.function, "__func__", impl.function)
                     for impl in caller.get_hookimpls() if impl.plugin is plugin]
        if all(function in _INHERITED_HOOKS for function in functions):
            continue
        if caller.spec is None:
            problems.append(f"implements {caller.name}, which is no hook of "
                            "ovnk_core.hookspecs (startup refuses it)")
            continue
        hooks.append(caller.name)
    return sorted(hooks, key=lambda hook: list(HOOKS).index(hook) if hook in HOOKS else 99)


def _inspect_topology(plugin: Any, name: str | None, labels: list[str],
                      problems: list[str]) -> bool | None:
    cls = plugin if inspect.isclass(plugin) else type(plugin)
    if not issubclass(cls, Topology):
        problems.append(f"is a {cls.__name__}, not an ovnk_core.Topology (startup refuses it)")
        return None
    if name is not None and getattr(cls, "name", None) != name:
        problems.append(f"declares name {getattr(cls, 'name', None)!r}; the entry-point name "
                        "and Topology.name must be equal (startup refuses it)")
    if "parse_netconf" in getattr(cls, "__abstractmethods__", ()):
        problems.append("does not implement parse_netconf (it cannot be instantiated)")
    overridden = [member for member in _topology_members() if _overrides(cls, member)]
    built = [member for member in RENDER_METHODS if member in overridden]
    renders = bool(getattr(cls, "renders", False))
    if renders and len(built) < len(RENDER_METHODS):
        missing = [member for member in RENDER_METHODS if member not in built]
        problems.append(f"sets renders but does not implement {', '.join(missing)}")
    if built and not renders:
        problems.append(f"implements {', '.join(built)} but does not set renders: the zone "
                        "does not call them")
    known = [TOPOLOGY_MEMBERS[m] for m in overridden if m in TOPOLOGY_MEMBERS and m not in
             RENDER_METHODS]
    if renders and built:
        known.append(RENDER)
    order = list(dict.fromkeys(TOPOLOGY_MEMBERS.values()))
    labels.extend(sorted(known, key=order.index))
    labels.extend(m for m in overridden if m not in TOPOLOGY_MEMBERS)
    return renders


def _topology_members() -> list[str]:
    return [member for member in vars(Topology)
            if not member.startswith("_") and member not in TOPOLOGY_DECLARATIONS]


def _overrides(cls: type, member: str) -> bool:
    return inspect.getattr_static(cls, member, None) is not inspect.getattr_static(
        Topology, member)


# ------------------------------------------------------------------------ the report

ENABLED = "enabled"
DISABLED = "disabled"
NOT_INSTALLED = "not installed"


@dataclass(frozen=True)
class PluginReport:
    """One plugin: its entry point, whether the configuration enables it, and what it does.

    :ivar enabled: the configuration enables it (it would be loaded) — not whether it does
        anything; ``status`` says that.
    :ivar status: ``enabled``, ``enabled, contributes nothing``, ``enabled, parses only``,
        ``enabled, fails to load``, ``disabled`` (``disabled, fails to load``) or
        ``not installed`` (enabled by the configuration, no such entry point).
    """

    name: str
    group: str
    value: str
    distribution: str
    version: str
    enabled: bool
    installed: bool
    status: str
    contributions: Contributions


@dataclass(frozen=True)
class DefaultTopologyReport:
    """The topology of the cluster default network (``--default-network-topology``).

    :ivar problem: why the default network would not be rendered (None: it is).
    """

    name: str
    enabled: bool
    renders: bool | None
    problem: str | None


@dataclass(frozen=True)
class PluginsReport:
    plugins: tuple[PluginReport, ...]
    default_topology: DefaultTopologyReport


def status_of(enabled: bool, installed: bool, contributions: Contributions) -> str:
    """A plugin's status: never a bare ``enabled`` for one that contributes nothing."""
    if not installed:
        return NOT_INSTALLED
    if not contributions.inspected:
        return f"{ENABLED if enabled else DISABLED}, fails to load"
    if not enabled:
        return DISABLED
    if not contributions.contributes:
        return f"{ENABLED}, contributes nothing"
    if contributions.renders is False:
        return f"{ENABLED}, parses only"
    return ENABLED


def what_plugins_contribute(config: Config) -> PluginsReport:
    """Every installed plugin (and every one the configuration enables but is missing),
    with its status and contributions, and the default network's topology."""
    infos = discover(config)
    claimed: dict[tuple[str, str], int] = {}
    for info in infos:
        claimed[(info.group, info.name)] = claimed.get((info.group, info.name), 0) + 1
    reports = []
    for info in infos:
        contributions = _contributions_of(info)
        if claimed[(info.group, info.name)] > 1:
            contributions = _with_problem(
                contributions, f"{info.name!r} is provided by several distributions; "
                               "uninstall all but one (startup refuses it)")
        reports.append(PluginReport(
            name=info.name, group=info.group, value=info.value,
            distribution=info.distribution, version=info.version, enabled=info.enabled,
            installed=True, status=status_of(info.enabled, True, contributions),
            contributions=contributions))
    for group, names in ((FEATURE_GROUP, config.enabled_features),
                         (TOPOLOGY_GROUP, config.topologies)):
        for name in _missing(names, group, infos):
            contributions = Contributions(inspected=False, problems=(
                f"enabled by the configuration but not installed (no entry point {name!r} in "
                f"group {group!r})",))
            reports.append(PluginReport(
                name=name, group=group, value="", distribution="-", version="-", enabled=True,
                installed=False, status=NOT_INSTALLED, contributions=contributions))
    reports.sort(key=lambda report: (report.group, report.name, report.distribution))
    return PluginsReport(plugins=tuple(reports), default_topology=_default_topology(
        config, reports))


def _contributions_of(info: PluginInfo) -> Contributions:
    for ep in metadata.entry_points(group=info.group, name=info.name):
        if ep.value == info.value and (ep.dist.name if ep.dist else "?") == info.distribution:
            try:
                loaded = ep.load()
            except Exception as exc:  # any import failure is the plugin's, reported
                return Contributions(inspected=False, problems=(
                    f"{info.value} fails to import: {type(exc).__name__}: {exc}",))
            return inspect_plugin(loaded, info.group, info.name)
    return Contributions(inspected=False, problems=(f"entry point {info.value} not found",))


def _with_problem(contributions: Contributions, problem: str) -> Contributions:
    return Contributions(components=contributions.components,
                         contributes=contributions.contributes,
                         renders=contributions.renders,
                         problems=(*contributions.problems, problem),
                         inspected=contributions.inspected)


def _missing(names: Iterable[str], group: str, infos: list[PluginInfo]) -> list[str]:
    installed = {info.name for info in infos if info.group == group}
    return [name for name in dict.fromkeys(names) if name not in installed]


def _default_topology(config: Config, reports: list[PluginReport]) -> DefaultTopologyReport:
    name = config.default_network_topology
    topologies = [r for r in reports if r.group == TOPOLOGY_GROUP and r.installed]
    enabled = sorted({r.name for r in topologies if r.enabled})
    mine = [r for r in topologies if r.name == name]
    problem = None
    renders: bool | None = None
    if not mine or not mine[0].enabled:
        state = "enabled (--topologies)" if mine else "installed"
        problem = (f"the default network's topology {name!r} (--default-network-topology) is "
                   f"not {state}; enabled topologies: {', '.join(enabled) or 'none'}")
    else:
        renders = mine[0].contributions.renders
        if not mine[0].contributions.inspected:
            problem = f"the default network's topology {name!r} fails to load"
        elif not renders:
            problem = (f"the default network's topology {name!r} (--default-network-topology) "
                       "only parses: the default network is not rendered into OVN and its "
                       "pods get no network")
        elif not mine[0].contributions.renders_default_network:
            problem = default_network_refusal(name)
    return DefaultTopologyReport(name=name, enabled=bool(mine and mine[0].enabled),
                                 renders=renders, problem=problem)
