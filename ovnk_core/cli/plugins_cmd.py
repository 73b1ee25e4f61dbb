"""``ovnk plugins``: every installed plugin, whether the configuration enables it, and what
it contributes in each component (``ovnk_core.plugin_contributions``).

Listing imports each plugin's class to inspect its hooks and ``Topology`` members, but
never instantiates, configures nor runs it; its status is never a bare ``enabled`` for a
plugin that contributes nothing, or a topology whose networks are not rendered.  The
last line is the default network's topology and whether it is usable.  Listing is a
diagnostic: it exits 0 whatever it finds.  With ``--check`` the enabled plugins are also
loaded and configured exactly as a component would at startup, and the default network's
topology must be enabled and render: any problem there exits 2.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ovnk_core.config import add_config_arguments, load_config
from ovnk_core.errors import ConfigError
from ovnk_core.plugin_contributions import (
    NOT_RENDERED,
    NOTHING,
    PluginReport,
    PluginsReport,
    what_plugins_contribute,
)
from ovnk_core.plugins import PluginHost

COLUMNS = ("NAME", "GROUP", "DISTRIBUTION", "VERSION", "STATUS")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plugins", help="list plugins: status and what each contributes per component",
        description="List the plugins installed in the ovnk.topologies and ovnk.features "
                    "entry-point groups: name, group, distribution, version, status for the "
                    "configuration given here (enabled; enabled, contributes nothing; "
                    "enabled, parses only; disabled; not installed) and, under each, what it "
                    "contributes per component (cluster-manager, zone, node, every process, "
                    "topology). The last line is the default network's topology.",
    )
    parser.add_argument("--check", action="store_true",
                        help="also load and configure the enabled plugins (as at startup) and "
                             "fail unless the default network's topology is enabled and "
                             "renders")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check = args.check
    output = args.output
    cli = {key: value for key, value in vars(args).items()
           if key not in ("check", "output", "func", "command")}
    config = load_config(cli)
    report = what_plugins_contribute(config)
    if output == "json":
        print(json.dumps(as_json(report), indent=2))
    else:
        print("\n".join(table_lines(report)))
    if check:
        host = PluginHost.load(config)
        topology = host.default_topology()
        if not topology.renders:
            raise ConfigError(report.default_topology.problem
                              or f"the default network's topology {topology.name!r} does "
                                 "not render")
        print(f"loaded: topologies={','.join(host.topologies) or '-'} "
              f"features={','.join(host.features) or '-'}")
    return 0


def contribution_lines(plugin: PluginReport) -> list[str]:
    """The lines shown under a plugin's row (without indentation)."""
    contributions = plugin.contributions
    lines = []
    if contributions.inspected:
        lines += [f"{component}: {', '.join(labels)}"
                  for component, labels in contributions.components]
        if not contributions.contributes:
            lines.append(NOTHING)
        elif contributions.renders is False:
            lines.append(NOT_RENDERED)
    lines += [f"problem: {problem}" for problem in contributions.problems]
    return lines


def table_lines(report: PluginsReport) -> list[str]:
    rows = [COLUMNS] + [(p.name, p.group, p.distribution, p.version, p.status)
                        for p in report.plugins]
    widths = [max(len(row[col]) for row in rows) for col in range(len(COLUMNS))]

    def line(row: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)
                         ).rstrip()

    lines = [line(COLUMNS)]
    for plugin, row in zip(report.plugins, rows[1:], strict=True):
        lines.append(line(row))
        lines += [f"  {text}" for text in contribution_lines(plugin)]
    default = report.default_topology
    lines.append("")
    if default.problem:
        lines.append(f"default network topology: {default.name}: PROBLEM: {default.problem}")
    else:
        lines.append(f"default network topology: {default.name}: enabled, renders into OVN")
    return lines


def as_json(report: PluginsReport) -> dict[str, Any]:
    return {
        "plugins": [{
            "name": p.name, "group": p.group, "value": p.value,
            "distribution": p.distribution, "version": p.version,
            "enabled": p.enabled, "status": p.status,
            "contributes": {component: list(labels)
                            for component, labels in p.contributions.components},
            "contributes_nothing": p.contributions.inspected
                                   and not p.contributions.contributes,
            "renders": p.contributions.renders,
            "problems": list(p.contributions.problems),
        } for p in report.plugins],
        "default_network_topology": {
            "name": report.default_topology.name,
            "enabled": report.default_topology.enabled,
            "renders": report.default_topology.renders,
            "problem": report.default_topology.problem,
        },
    }
