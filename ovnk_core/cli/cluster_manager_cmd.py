"""``ovnk cluster-manager``: run the cluster manager until SIGTERM."""

from __future__ import annotations

import argparse
from typing import Any

from ovnk_core.cli.daemon import add_daemon_arguments, run_daemon
from ovnk_core.clustermanager.app import build_cluster_manager


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cluster-manager", help="run the cluster manager (UDN/CUDN → NADs, allocations)",
        description="The single active cluster-wide component: renders UserDefinedNetworks and "
                    "ClusterUserDefinedNetworks into NetworkAttachmentDefinitions, allocates "
                    "network IDs and subnets. Runs behind a Lease; stops on SIGTERM.")
    add_daemon_arguments(parser, "leading and running")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return run_daemon(args, build_cluster_manager)
