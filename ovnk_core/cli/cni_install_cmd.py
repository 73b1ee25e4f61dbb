"""``ovnk cni-install``: put the CNI plugin and the node's conflist where the runtime looks.

The node DaemonSet (``dist/ovnkube-node.yaml``) runs it as an init container with the
host's ``/opt/cni/bin`` and ``/etc/cni/net.d`` mounted (``ovnk_cni.install`` says how the
plugin is written).  Idempotent: a restarted pod writes the same files again.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ovnk_cni.install import HOST_PYTHON, write_conflist, write_plugin
from ovnk_cni.shim import SERVER_SOCKET
from ovnk_core.errors import OvnkError


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "cni-install", help="install the CNI plugin ovn-k8s-cni-overlay and the node's "
                            "conflist (the node DaemonSet's init container)")
    parser.add_argument("--bin-dir", type=Path, required=True,
                        help="the node's CNI plugin dir (the host's /opt/cni/bin)")
    parser.add_argument("--conf-dir", type=Path, required=True,
                        help="the node's CNI config dir (the host's /etc/cni/net.d)")
    parser.add_argument("--server-socket", default=SERVER_SOCKET,
                        help=f"the node agent's socket, as the host sees it ({SERVER_SOCKET})")
    parser.add_argument("--interpreter", default=HOST_PYTHON,
                        help=f"the host's Python 3.11+ that runs the plugin ({HOST_PYTHON})")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        plugin = write_plugin(args.bin_dir, args.interpreter)
        conflist = write_conflist(args.conf_dir, args.server_socket)
    except OSError as exc:
        raise OvnkError(f"cannot install the CNI plugin: {exc}") from None
    print(f"installed {plugin} and {conflist}")
    return 0
