"""Shared plumbing of the long-running ``ovnk`` commands (cluster-manager, controller).

Both take the configuration flags plus ``--ready-file``, build their
process object from the configuration, and run it until SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from ovnk_core.config import Config, add_config_arguments, load_config
from ovnk_core.logsetup import setup_logging


class Runnable(Protocol):
    def run(self, stop: threading.Event, ready_file: Path | None = None) -> None: ...


def add_daemon_arguments(parser: Any, what: str) -> None:
    parser.add_argument("--ready-file", type=Path, default=None,
                        help=f"write this file once {what} (for supervisors)")
    add_config_arguments(parser)


def run_daemon(args: argparse.Namespace, build: Callable[[Config], Runnable]) -> int:
    cli = {k: v for k, v in vars(args).items() if k not in ("ready_file", "func", "command")}
    config = load_config(cli)
    setup_logging(config.loglevel)
    process = build(config)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    process.run(stop, args.ready_file)
    return 0
