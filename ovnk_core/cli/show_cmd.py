"""``ovnk show network NAME``: the logical topology ovnk rendered for a network."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ovnk_core.cli.cluster_access import add_connect_timeout, northbound, tool_config
from ovnk_core.config import add_config_arguments
from ovnk_core.inspect.network_view import build_view, render_dot, render_tree, resolve_network_name


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("show", help="show what ovnk rendered into OVN",
                                   description="Read-only views of OVN Northbound.")
    what = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    network = what.add_parser(
        "network", help="a network's routers, switches, ports, routes and NATs",
        description="Prints the logical topology of one network from OVN Northbound. NAME "
                    "is the network name (ns_udn or ns/udn, a CUDN name, or default). The "
                    "database is --nb-address, from --config, or from the ovnk.toml next to "
                    "the kubeconfig (--kubeconfig or KUBECONFIG) as ovnk local writes it.")
    network.add_argument("name", metavar="NAME")
    network.add_argument("--format", choices=("tree", "dot"), default="tree",
                         help="indented tree (default) or Graphviz dot")
    add_connect_timeout(network)
    add_config_arguments(network)
    network.set_defaults(func=run_network)


def run_network(args: argparse.Namespace) -> int:
    skip = ("name", "format", "what", "func", "command", "connect_timeout")
    config = tool_config({k: v for k, v in vars(args).items() if k not in skip})
    with northbound(config, args.connect_timeout) as nb:
        view = build_view(nb, resolve_network_name(nb, args.name),
                          default_topology=config.default_network_topology)
    sys.stdout.write(render_dot(view) if args.format == "dot" else render_tree(view))
    return 0
