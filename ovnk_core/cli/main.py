"""Entry point of the ``ovnk`` command.

Each subcommand lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable taking the parsed
arguments and returning an exit code.  Errors meant for the operator
(``OvnkError``) are printed as one clear line and exit 2; nothing else is
caught, so a real bug still shows its traceback.

``ovnk local exec POD -- COMMAND ARGS`` runs a command of the user's: the
words after the first ``--`` are cut off before argparse sees them (argparse
would take the command's options for its own, or the command for options of
``exec`` given after POD) and handed to the subcommand as ``exec_command``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ovnk_core.cli import (
    cluster_manager_cmd,
    config_cmd,
    controller_cmd,
    local_cmd,
    node_cmd,
    plugins_cmd,
    reachability_cmd,
    show_cmd,
    version_cmd,
)
from ovnk_core.errors import OvnkError
from ovnk_core.logsetup import setup_logging

SUBCOMMANDS = (plugins_cmd, config_cmd, cluster_manager_cmd, controller_cmd, node_cmd,
               local_cmd, reachability_cmd, show_cmd, version_cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ovnk",
        description="ovnk: the OVN-Kubernetes User Defined Networks control plane.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


TAKES_A_COMMAND = (("local", "exec"),)  # subcommands whose words after "--" are a command


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """``(ovnk's own arguments, the command after the first "--")`` for a subcommand that
    runs a command; ``(argv, None)`` for any other."""
    words = list(argv)
    if "--" in words and any(words[:len(path)] == list(path) for path in TAKES_A_COMMAND):
        cut = words.index("--")
        return words[:cut], words[cut + 1:]
    return words, None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    own, command = split_command(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(own)
    if command is not None:
        args.exec_command = [*args.exec_command, *command]
    try:
        setup_logging(getattr(args, "loglevel", "warning") or "warning")
    except ValueError:
        setup_logging("warning")  # the configuration check reports the bad --loglevel
    try:
        return int(args.func(args))
    except OvnkError as exc:
        print(f"ovnk {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
