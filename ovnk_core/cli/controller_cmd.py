"""``ovnk controller``: run the zone controller (renders networks into OVN NB) until SIGTERM."""

from __future__ import annotations

import argparse
from typing import Any

from ovnk_core.cli.daemon import add_daemon_arguments, run_daemon
from ovnk_core.zone.app import build_zone_app


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "controller", help="run the zone controller (networks, nodes, pods → OVN Northbound)",
        description="Renders the default network and every user-defined network, their "
                    "nodes and pod ports into the zone's OVN Northbound database, through the "
                    "topology plugins; removes what is gone. Stops on SIGTERM.")
    add_daemon_arguments(parser, "running")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return run_daemon(args, build_zone_app)
