"""``ovnk cluster-manager``: run the cluster manager until SIGTERM."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any

from ovnk_core.clustermanager.app import build_cluster_manager
from ovnk_core.config import add_config_arguments, load_config
from ovnk_core.logsetup import setup_logging


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cluster-manager", help="run the cluster manager (UDN/CUDN → NADs, allocations)",
        description="The single active cluster-wide component: renders UserDefinedNetworks and "
                    "ClusterUserDefinedNetworks into NetworkAttachmentDefinitions, allocates "
                    "network IDs and subnets. Runs behind a Lease; stops on SIGTERM.")
    parser.add_argument("--ready-file", type=Path, default=None,
                        help="write this file once leading and running (for supervisors)")
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    ready_file = args.ready_file
    cli = {k: v for k, v in vars(args).items() if k not in ("ready_file", "func", "command")}
    config = load_config(cli)
    setup_logging(config.loglevel)
    manager = build_cluster_manager(config)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    manager.run(stop, ready_file)
    return 0
