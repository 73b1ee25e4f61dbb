"""API rights plugins contribute: ClusterRoles aggregated into ovnk's components' roles.

Each ovnk component runs as its own identity, bound to the least it needs
(``manifests/rbac/``).  A plugin whose controllers need more — a feature that
writes ConfigMaps from the cluster manager, say — declares it on its class::

    class QuotaFeature(Feature):
        name = "quota"
        rbac_rules = {"cluster-manager": [
            {"apiGroups": [""], "resources": ["configmaps"],
             "verbs": ["get", "create", "update", "delete"]}]}

Keys are the components plugins run in (``COMPONENT_ROLES``: ``cluster-manager``,
``zone``, ``node``), values Kubernetes PolicyRules.  For every enabled plugin
that declares some, ``plugin_cluster_roles`` makes one ClusterRole per
component (``ovnk:<feature|topology>:<name>:<component>``) labelled
``rbac.k8s.ovn.org/aggregate-to-<role>: "true"`` (``aggregation_label``).
ovnk's manifests ship, per component, a ClusterRole ``<role>-plugins`` whose
``aggregationRule`` selects that label, bound to the component's identity:
Kubernetes' ClusterRole aggregation copies the rules in, as it grows ``edit``
from the roles labelled ``rbac.authorization.k8s.io/aggregate-to-edit``.  So
rights can also be added by hand, with any ClusterRole carrying the label.

The class attribute is read without instantiating the plugin (like
``Feature.nft_table_name``); ``python -m ovnk_core.manifests.rbac`` prints
the documents for a configuration and ``ovnk local`` applies them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import Any

from ovnk_core.config import Config
from ovnk_core.errors import PluginLoadError
from ovnk_core.plugins import FEATURE_GROUP, TOPOLOGY_GROUP, discover

JSON = dict[str, Any]

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
AGGREGATION_LABEL_PREFIX = "rbac.k8s.ovn.org/aggregate-to-"
PLUGIN_LABEL = "rbac.k8s.ovn.org/plugin"
COMPONENT_ROLES: dict[str, str] = {"cluster-manager": "ovnkube-cluster-manager",
                                   "zone": "ovnkube-controller",
                                   "node": "ovnkube-node"}
"""The component a plugin runs in (its hooks' ``ovnk_<component>_controllers``) → the
ClusterRole of that component's identity."""
PLUGINS_ROLE_SUFFIX = "-plugins"
KINDS = {TOPOLOGY_GROUP: "topology", FEATURE_GROUP: "feature"}
RULE_KEYS = frozenset({"apiGroups", "resources", "resourceNames", "verbs",
                       "nonResourceURLs"})


def aggregation_label(component: str) -> str:
    """``rbac.k8s.ovn.org/aggregate-to-<role>``: the label that adds a ClusterRole's rules
    to ``component``'s identity (``COMPONENT_ROLES``)."""
    return AGGREGATION_LABEL_PREFIX + COMPONENT_ROLES[component]


def plugins_role_name(component: str) -> str:
    """The aggregated ClusterRole of ``component`` that holds what plugins add."""
    return COMPONENT_ROLES[component] + PLUGINS_ROLE_SUFFIX


def rbac_rules_of(plugin: Any, label: str) -> dict[str, list[JSON]]:
    """A plugin class's ``rbac_rules``, checked: component → PolicyRules (empty: none).

    :param label: how errors name the plugin (``ovnk.features:quota``).
    :raises PluginLoadError: not a mapping of known components to lists of PolicyRules.
    """
    declared = getattr(plugin, "rbac_rules", None) or {}
    if not isinstance(declared, Mapping):
        raise PluginLoadError(f"plugin {label}: rbac_rules is a {type(declared).__name__}, "
                              "not a mapping of component to PolicyRules")
    rules: dict[str, list[JSON]] = {}
    for component, items in declared.items():
        if component not in COMPONENT_ROLES:
            raise PluginLoadError(
                f"plugin {label}: rbac_rules names component {component!r}; components: "
                f"{', '.join(COMPONENT_ROLES)}")
        if isinstance(items, str | bytes | Mapping) or not isinstance(items, Iterable):
            raise PluginLoadError(f"plugin {label}: rbac_rules[{component!r}] is not a list "
                                  "of PolicyRules")
        rules[component] = [_checked_rule(rule, f"{label}: rbac_rules[{component!r}]")
                            for rule in items]
    return rules


def _checked_rule(rule: Any, where: str) -> JSON:
    """A PolicyRule as Kubernetes accepts it: verbs, and resources (with apiGroups) or
    nonResourceURLs, every value a list of strings."""
    problem = None
    if not isinstance(rule, Mapping):
        problem = f"a rule is a {type(rule).__name__}, not a mapping"
    elif set(rule) - RULE_KEYS:
        problem = f"unknown PolicyRule field(s) {', '.join(sorted(set(rule) - RULE_KEYS))}"
    elif any(not isinstance(v, list | tuple) or not all(isinstance(i, str) for i in v)
             for v in rule.values()):
        problem = "every PolicyRule field is a list of strings"
    elif not rule.get("verbs"):
        problem = "a rule without verbs grants nothing"
    elif bool(rule.get("resources")) == bool(rule.get("nonResourceURLs")):
        problem = "a rule names resources (with apiGroups) or nonResourceURLs, not both"
    elif rule.get("resources") and "apiGroups" not in rule:
        problem = 'a rule on resources needs apiGroups ("" for the core group)'
    if problem:
        raise PluginLoadError(f"plugin {where}: {problem}")
    return {key: list(rule[key]) for key in sorted(rule)}


def plugin_cluster_roles(group: str, name: str, plugin: Any) -> list[JSON]:
    """The ClusterRoles that carry the ``rbac_rules`` of the plugin ``name`` of entry-point
    ``group`` (its class, or an instance), one per component, in ``COMPONENT_ROLES`` order.

    :raises PluginLoadError: its ``rbac_rules`` are malformed.
    """
    kind = KINDS[group]
    rules = rbac_rules_of(plugin, f"{group}:{name}")
    return [{"apiVersion": RBAC_API_VERSION, "kind": "ClusterRole",
             "metadata": {"name": f"ovnk:{kind}:{name}:{component}",
                          "labels": {aggregation_label(component): "true",
                                     PLUGIN_LABEL: name}},
             "rules": rules[component]}
            for component in COMPONENT_ROLES if rules.get(component)]


def plugin_rbac_documents(config: Config) -> list[JSON]:
    """The ClusterRoles of every plugin ``config`` enables (imported, never instantiated).

    :raises PluginLoadError: an enabled plugin cannot be imported, or its ``rbac_rules``
        are malformed.
    """
    documents: list[JSON] = []
    for info in discover(config):
        if not info.enabled:
            continue
        for ep in metadata.entry_points(group=info.group, name=info.name):
            if ep.value != info.value:
                continue
            try:
                plugin = ep.load()
            except Exception as exc:  # the same failure stops the component at startup
                raise PluginLoadError(f"plugin {info.name} = {info.value} ({info.group}) "
                                      f"failed to load: {type(exc).__name__}: {exc}") from None
            documents += plugin_cluster_roles(info.group, info.name, plugin)
    return documents


def missing_aggregated_rules(roles: Iterable[JSON], contributed: Iterable[JSON]
                             ) -> list[str]:
    """The aggregated component roles (among ``roles``, as read from the API) that do not
    hold every rule of the ``contributed`` ClusterRoles yet: the aggregation controller has
    not caught up.  Empty once it has."""
    current = {role["metadata"]["name"]: [_comparable(rule) for rule in role.get("rules") or []]
               for role in roles}
    late = []
    for component in COMPONENT_ROLES:
        name = plugins_role_name(component)
        label = aggregation_label(component)
        wanted = [_comparable(rule) for role in contributed
                  if (role["metadata"].get("labels") or {}).get(label) == "true"
                  for rule in role.get("rules") or []]
        if any(rule not in current.get(name, []) for rule in wanted):
            late.append(name)
    return late


def _comparable(rule: JSON) -> JSON:
    """A PolicyRule without its empty fields (an API server may add or drop them)."""
    return {key: value for key, value in rule.items() if value}


__all__ = ["AGGREGATION_LABEL_PREFIX", "COMPONENT_ROLES", "PLUGIN_LABEL",
           "aggregation_label", "missing_aggregated_rules", "plugin_cluster_roles",
           "plugin_rbac_documents", "plugins_role_name", "rbac_rules_of"]
