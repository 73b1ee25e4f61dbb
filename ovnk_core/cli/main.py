"""Entry point of the ``ovnk`` command.

Each subcommand lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable taking the parsed
arguments and returning an exit code.  Errors meant for the operator
(``OvnkError``) are printed as one clear line and exit 2; nothing else is
caught, so a real bug still shows its traceback.

**Subcommands of other distributions** (entry point group ``ovnk.cli``): the
core's own subcommands are ``SUBCOMMANDS``; another installed distribution adds
one with an entry point ``NAME = "package.module"`` in group ``ovnk.cli`` naming
an object (usually a module) with the same ``register(subparsers)``.  It may also
set ``TAKES_A_COMMAND``: the word paths of its subcommands that run a command of
the user's (e.g. ``(("local", "exec"),)`` for ``ovnk local exec POD -- COMMAND
ARGS``): the words after the first ``--`` are cut off before argparse sees them
(argparse would take the command's options for its own, or the command for
options given after POD) and handed to the subcommand as ``exec_command``.  A
subcommand whose distribution is not installed is simply absent; one that fails
to load is reported on stderr and left out, the rest of ``ovnk`` still works.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol

from ovnk_core.cli import (
    ENTRY_POINT_GROUP,
    cluster_manager_cmd,
    config_cmd,
    controller_cmd,
    node_cmd,
    plugins_cmd,
    reachability_cmd,
    show_cmd,
    version_cmd,
)
from ovnk_core.errors import OvnkError
from ovnk_core.logsetup import setup_logging

SUBCOMMANDS = (plugins_cmd, config_cmd, cluster_manager_cmd, controller_cmd, node_cmd,
               reachability_cmd, show_cmd, version_cmd)



class Subcommand(Protocol):
    def register(self, subparsers: Any) -> None: ...


def subcommands() -> list[Subcommand]:
    """The core's subcommands, then those of the ``ovnk.cli`` entry points (by name)."""
    found: list[Subcommand] = list(SUBCOMMANDS)
    for entry in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            loaded = entry.load()
        except Exception as exc:  # one broken distribution must not take every command down
            print(f"ovnk: subcommand {entry.name!r} ({entry.value}, entry point group "
                  f"{ENTRY_POINT_GROUP}) cannot be loaded: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
            continue
        if not callable(getattr(loaded, "register", None)):
            print(f"ovnk: subcommand {entry.name!r} ({entry.value}, entry point group "
                  f"{ENTRY_POINT_GROUP}) has no register(subparsers); left out",
                  file=sys.stderr)
            continue
        found.append(loaded)
    return found


def build_parser(commands: Iterable[Subcommand] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ovnk",
        description="ovnk: the OVN-Kubernetes User Defined Networks control plane.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in subcommands() if commands is None else commands:
        module.register(subparsers)
    return parser


def takes_a_command(commands: Iterable[Subcommand]) -> list[tuple[str, ...]]:
    """The word paths whose words after ``--`` are a command (each one's
    ``TAKES_A_COMMAND``)."""
    return [tuple(path) for module in commands
            for path in getattr(module, "TAKES_A_COMMAND", ())]


def split_command(argv: Sequence[str], paths: Iterable[Sequence[str]] = (),
                  ) -> tuple[list[str], list[str] | None]:
    """``(ovnk's own arguments, the command after the first "--")`` for a subcommand that
    runs a command (its word path is one of ``paths``); ``(argv, None)`` for any other."""
    words = list(argv)
    if "--" in words and any(words[:len(path)] == list(path) for path in paths):
        cut = words.index("--")
        return words[:cut], words[cut + 1:]
    return words, None


def main(argv: Sequence[str] | None = None) -> int:
    commands = subcommands()
    parser = build_parser(commands)
    own, command = split_command(sys.argv[1:] if argv is None else argv,
                                 takes_a_command(commands))
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
