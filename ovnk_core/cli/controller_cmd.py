"""``ovnk controller``: run the zone controller (renders networks into OVN NB) until SIGTERM."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any

from ovnk_core.config import add_config_arguments, load_config
from ovnk_core.logsetup import setup_logging
from ovnk_core.zone.app import build_zone_app


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "controller", help="run the zone controller (networks, nodes, pods → OVN Northbound)",
        description="Renders the default network and every user-defined network, their "
                    "nodes and pod ports into the zone's OVN Northbound database, through the "
                    "topology plugins; removes what is gone. Stops on SIGTERM.")
    parser.add_argument("--ready-file", type=Path, default=None,
                        help="write this file once running (for supervisors)")
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ready_file = args.ready_file
    cli = {k: v for k, v in vars(args).items() if k not in ("ready_file", "func", "command")}
    config = load_config(cli)
    setup_logging(config.loglevel)
    app = build_zone_app(config)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    app.run(stop, ready_file)
    return 0
