"""What a plugin contributes, by introspection: hooks per component, Topology members, status."""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

from ovnk_core import hookimpl, hookspecs
from ovnk_core.config import Config, load_config
from ovnk_core.contexts import ClusterManagerContext, NodeContext, ZoneContext
from ovnk_core.feature import Feature
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.plugin_contributions import (
    CLUSTER_MANAGER,
    EVERY_PROCESS,
    HOOKS,
    NODE,
    TOPOLOGY,
    ZONE,
    Contributions,
    inspect_plugin,
    status_of,
    what_plugins_contribute,
)
from ovnk_core.plugins import FEATURE_GROUP, TOPOLOGY_GROUP, PluginHost
from ovnk_core.topology import Topology

pytestmark = pytest.mark.unit

UDN = {"enable_multi_network": "true", "enable_network_segmentation": "true",
       "v4_masquerade_subnet": "169.254.0.0/17"}
DYNAMIC = {**UDN, "enable_dynamic_udn_allocation": "true"}


RENDERING_TOPOLOGY = ("parse", "routes", "render", "udn section", "services")

def config(**cli: str) -> Config:
    return load_config(cli, env={})


# --------------------------------------------------------------------------- hooks

class ZoneOnly:
    @hookimpl
    def ovnk_zone_controllers(self, context: ZoneContext) -> list[Any]:
        raise AssertionError("introspection never calls a hook")


class Everywhere(Feature):
    name = "everywhere"
    required_flags = ("enable-multi-network",)

    @hookimpl
    def ovnk_cluster_manager_controllers(self, context: ClusterManagerContext) -> list[Any]:
        raise AssertionError("introspection never calls a hook")

    @hookimpl
    def ovnk_node_controllers(self, context: NodeContext) -> list[Any]:
        raise AssertionError("introspection never calls a hook")

    @hookimpl(specname="ovnk_validate_network")
    def no_red(self, netinfo: NetInfo) -> None:
        raise AssertionError("introspection never calls a hook")


class FlagsOnly(Feature):
    name = "flags-only"
    required_flags = ("enable-multi-network",)


class ChecksItsConfig(Feature):
    name = "checks"

    @hookimpl
    def ovnk_configure(self, config: Config) -> None:
        raise AssertionError("introspection never calls a hook")


def test_a_zone_hook_is_a_zone_contribution() -> None:
    contributions = inspect_plugin(ZoneOnly, FEATURE_GROUP)
    assert contributions == Contributions(components=((ZONE, ("controllers",)),),
                                          contributes=True)
    # An instance (as a host registers it) is described the same way.
    assert inspect_plugin(ZoneOnly(), FEATURE_GROUP) == contributions


def test_hooks_are_grouped_by_the_component_they_run_in() -> None:
    contributions = inspect_plugin(Everywhere, FEATURE_GROUP)
    assert contributions.components == (
        (CLUSTER_MANAGER, ("controllers", "network checks")),
        (ZONE, ("network checks",)),
        (NODE, ("controllers",)),
    )
    assert contributions.contributes and contributions.problems == ()
    assert contributions.renders is None


def test_a_feature_with_only_the_inherited_flag_check_contributes_nothing() -> None:
    contributions = inspect_plugin(FlagsOnly, FEATURE_GROUP)
    assert contributions == Contributions(components=(), contributes=False)
    assert status_of(True, True, contributions) == "enabled, contributes nothing"
    assert status_of(False, True, contributions) == "disabled"


def test_a_configuration_check_of_its_own_is_shown_but_is_no_contribution() -> None:
    contributions = inspect_plugin(ChecksItsConfig, FEATURE_GROUP)
    assert contributions.components == ((EVERY_PROCESS, ("configuration check",)),)
    assert not contributions.contributes
    assert status_of(True, True, contributions) == "enabled, contributes nothing"


def test_an_unknown_hook_is_a_problem() -> None:
    class Typo:
        @hookimpl
        def ovnk_zone_controler(self, context: ZoneContext) -> list[Any]:
            return []

    contributions = inspect_plugin(Typo, FEATURE_GROUP)
    assert contributions.problems == (
        "implements ovnk_zone_controler, which is no hook of ovnk_core.hookspecs "
        "(startup refuses it)",)
    assert not contributions.contributes


def test_every_hook_has_a_component() -> None:
    specs = {name for name in dir(hookspecs) if name.startswith("ovnk_")}
    assert set(HOOKS) == specs


# --------------------------------------------------------------------------- topologies

class ParsesOnly(Topology):
    name = "parses-only"

    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        raise AssertionError("introspection never parses")


class BuildsWithoutRenders(ParsesOnly):
    name = "builds"

    def build_network(self, network: Any) -> list[Any]:
        raise AssertionError("introspection never renders")


class RendersWithoutBuilding(ParsesOnly):
    name = "renders"
    renders = True

    def build_pod(self, network: Any, pod: Any) -> list[Any]:
        raise AssertionError("introspection never renders")


class TopologyWithHook(ParsesOnly):
    name = "with-hook"

    @hookimpl
    def ovnk_zone_controllers(self, context: ZoneContext) -> list[Any]:
        raise AssertionError("introspection never calls a hook")


def test_a_topology_that_only_parses_says_so() -> None:
    contributions = inspect_plugin(ParsesOnly, TOPOLOGY_GROUP, "parses-only")
    assert contributions == Contributions(components=((TOPOLOGY, ("parse",)),),
                                          contributes=True, renders=False)
    assert status_of(True, True, contributions) == "enabled, parses only"


@pytest.mark.parametrize(
    ("cls", "labels", "problem"),
    [(BuildsWithoutRenders, ("parse",),
      "implements build_network but does not set renders: the zone does not call them"),
     (RendersWithoutBuilding, ("parse", "render"),
      "sets renders but does not implement build_network, build_node")],
    ids=["builds-without-renders", "renders-without-building"],
)
def test_render_declaration_and_build_methods_must_agree(cls: type, labels: tuple[str, ...],
                                                         problem: str) -> None:
    contributions = inspect_plugin(cls, TOPOLOGY_GROUP, cls.name)  # type: ignore[attr-defined]
    assert contributions.labels(TOPOLOGY) == labels
    assert contributions.problems == (problem,)


def test_a_topology_may_contribute_hooks_too() -> None:
    contributions = inspect_plugin(TopologyWithHook, TOPOLOGY_GROUP, "with-hook")
    assert contributions.components == ((ZONE, ("controllers",)), (TOPOLOGY, ("parse",)))


def test_topology_entry_point_problems() -> None:
    assert inspect_plugin(ZoneOnly, TOPOLOGY_GROUP, "zone-only").problems == (
        "is a ZoneOnly, not an ovnk_core.Topology (startup refuses it)",)
    assert inspect_plugin(ParsesOnly, TOPOLOGY_GROUP, "other").problems == (
        "declares name 'parses-only'; the entry-point name and Topology.name must be equal "
        "(startup refuses it)",)


def test_a_member_the_base_class_gains_later_is_shown_by_its_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Topology, "future_section", None, raising=False)

    class WithSection(ParsesOnly):
        future_section = "spec.future"

    assert inspect_plugin(WithSection, TOPOLOGY_GROUP, "parses-only").labels(TOPOLOGY) == (
        "parse", "future_section")
    assert inspect_plugin(ParsesOnly, TOPOLOGY_GROUP, "parses-only").labels(TOPOLOGY) == (
        "parse",)


def test_a_factory_entry_point_cannot_be_inspected() -> None:
    contributions = inspect_plugin(lambda config: FlagsOnly(config), FEATURE_GROUP)
    assert not contributions.inspected
    assert status_of(True, True, contributions) == "enabled, fails to load"


# --------------------------------------------------------------------------- bundled plugins

def test_bundled_plugins_contributions_and_status() -> None:
    report = what_plugins_contribute(config(**DYNAMIC))
    plugins = {p.name: p for p in report.plugins}
    assert {name: (plugins[name].status, plugins[name].contributions.components)
            for name in ("dynamic", "isolation", "mirror", "networkpolicy", "layer2", "layer3",
                         "localnet")} == {
        "dynamic": ("enabled", ((CLUSTER_MANAGER, ("controllers", "network activity")),
                                ("zone", ("network activity",)))),
        "isolation": ("enabled", (("zone", ("controllers", "pod ports")),
                                  ("node", ("controllers",)))),
        "mirror": ("enabled", ((CLUSTER_MANAGER, ("controllers",)),)),
        "networkpolicy": ("enabled", (("zone", ("controllers", "pod ports", "API rights")),)),
        # both also render interconnect (Topology.interconnect; layer2 its remote pods)
        "layer3": ("enabled", ((TOPOLOGY, (*RENDERING_TOPOLOGY, "interconnect")),)),
        "layer2": ("enabled", ((TOPOLOGY, (*RENDERING_TOPOLOGY, "interconnect")),)),
        "localnet": ("enabled", ((TOPOLOGY, ("parse", "mtu", "render", "udn section",
                                             "node check")),)),
    }
    assert all(not p.contributions.problems for p in report.plugins)
    default = report.default_topology
    assert (default.name, default.enabled, default.renders, default.problem) == (
        "layer3", True, True, None)


def test_introspection_agrees_with_the_loaded_host() -> None:
    host = PluginHost.load(config(**DYNAMIC))
    for name, plugin in {**host.topologies, **host.features}.items():
        group = TOPOLOGY_GROUP if name in host.topologies else FEATURE_GROUP
        assert inspect_plugin(plugin, group, name) == inspect_plugin(type(plugin), group, name)
        # The hooks found are those the host's manager has for the instance.
        hooks = {caller.name for caller in host.manager.get_hookcallers(plugin) or ()
                 if caller.name != "ovnk_configure"}
        found = {hook for hook, (components, label) in HOOKS.items()
                 if label in inspect_plugin(plugin, group, name).labels(components[0])
                 and hook != "ovnk_configure"}
        assert hooks == found, name


def test_an_import_failure_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    real = metadata.entry_points
    broken = metadata.EntryPoint(name="broken", value="ovnk_no_such_module.plugin:Broken",
                                 group=FEATURE_GROUP)

    def entry_points(**select: Any) -> Any:
        found: list[Any] = list(real(**select))
        if broken.matches(**select):
            found.append(broken)
        return metadata.EntryPoints(found)

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    report = what_plugins_contribute(config(extra_features="broken"))
    plugin = {p.name: p for p in report.plugins}["broken"]
    assert plugin.status == "enabled, fails to load"
    assert plugin.contributions.problems == (
        "ovnk_no_such_module.plugin:Broken fails to import: ModuleNotFoundError: No module "
        "named 'ovnk_no_such_module'",)


# --------------------------------------------------------------------------- API rights

class WithRights(Feature):
    name = "rights"
    rbac_rules = {"cluster-manager": [{"apiGroups": [""], "resources": ["configmaps"],
                                       "verbs": ["get"]}],
                  "node": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}


class BadRights(Feature):
    name = "bad"
    rbac_rules = {"scheduler": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}


class RightsWithoutVerbs(Feature):
    name = "noverbs"
    rbac_rules = {"zone": [{"apiGroups": [""], "resources": ["pods"]}]}


def test_api_rights_show_under_their_components_and_count_as_a_contribution() -> None:
    found = inspect_plugin(WithRights, FEATURE_GROUP, "rights")
    assert found.components == ((CLUSTER_MANAGER, ("API rights",)), (NODE, ("API rights",)))
    assert found.contributes and found.problems == ()
    assert status_of(True, True, found) == "enabled"


@pytest.mark.parametrize(("plugin", "problem"), [
    (BadRights, "plugin ovnk.features:bad: rbac_rules names component 'scheduler'; "
                "components: cluster-manager, zone, node"),
    (RightsWithoutVerbs, "plugin ovnk.features:noverbs: rbac_rules['zone']: a rule without "
                         "verbs grants nothing")])
def test_malformed_api_rights_are_a_problem(plugin: type, problem: str) -> None:
    found = inspect_plugin(plugin, FEATURE_GROUP, plugin.name)  # type: ignore[attr-defined]
    assert found.problems == (problem,)
