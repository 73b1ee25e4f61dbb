"""Entry point of the ``ovnk`` command.

Each subcommand lives in its own module exposing ``register(subparsers)``,
which adds its parser and sets ``func`` to a callable taking the parsed
arguments and returning an exit code.  Errors meant for the operator
(``OvnkError``) are printed as one clear line and exit 2; nothing else is
caught, so a real bug still shows its traceback.

**A reader that stops early** (``ovnk plugins | head``): once the reader of standard
output is gone, writing to it raises ``BrokenPipeError``.  As the Python documentation of
``signal`` advises for SIGPIPE, ``main`` then points standard output at ``os.devnull`` (so
the interpreter's final flush has nowhere to fail) and exits 1 without a word, for every
subcommand.  A ``BrokenPipeError`` while standard output is still readable (a socket the
command writes to, say) is a real error and is not hidden.

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
import importlib
import os
import select
import sys
from collections.abc import Iterable, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol, cast

from ovnk_core.cli import ENTRY_POINT_GROUP
from ovnk_core.errors import OvnkError
from ovnk_core.logsetup import setup_logging

# the core's subcommand modules; each one's word is its name without ``_cmd`` (``command_word``)
SUBCOMMANDS = tuple(f"ovnk_core.cli.{name}" for name in (
    "plugins_cmd", "config_cmd", "cluster_manager_cmd", "controller_cmd", "node_cmd",
    "reachability_cmd", "show_cmd", "version_cmd", "webhook_cmd", "cni_install_cmd"))

READER_GONE_EXIT = 1
"""The exit code when the reader of standard output went away (Python's own on EPIPE)."""


class Subcommand(Protocol):
    def register(self, subparsers: Any) -> None: ...


def command_word(module_name: str) -> str:
    """The subcommand of a core subcommand module (``ovnk_core.cli.show_cmd``: ``show``)."""
    return module_name.rsplit(".", 1)[-1].removesuffix("_cmd").replace("_", "-")


def subcommands(only: str | None = None) -> list[Subcommand]:
    """The core's subcommands, then those of the ``ovnk.cli`` entry points (by name).

    ``only``: when a core module or an entry point (by its name) is that subcommand, it
    alone: a process that runs one subcommand (every component of a cluster) imports no
    other's code, and starts faster."""
    core = [name for name in SUBCOMMANDS if command_word(name) == only]
    if core:
        return [cast(Subcommand, importlib.import_module(core[0]))]
    entries = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    if only is not None and any(entry.name == only for entry in entries):
        alone = _load([entry for entry in entries if entry.name == only])
        if alone:
            return alone
    found: list[Subcommand] = [cast(Subcommand, importlib.import_module(name))
                               for name in SUBCOMMANDS]
    return found + _load(entries)


def _load(entries: Iterable[Any]) -> list[Subcommand]:
    """The subcommands of ``entries`` that load and have ``register`` (the others are
    reported on stderr and left out)."""
    found: list[Subcommand] = []
    for entry in entries:
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
    words = list(sys.argv[1:] if argv is None else argv)
    commands = subcommands(words[0] if words and not words[0].startswith("-") else None)
    parser = build_parser(commands)
    own, command = split_command(words, takes_a_command(commands))
    args = parser.parse_args(own)
    if command is not None:
        args.exec_command = [*args.exec_command, *command]
    try:
        setup_logging(getattr(args, "loglevel", "warning") or "warning")
    except ValueError:
        setup_logging("warning")  # the configuration check reports the bad --loglevel
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # here, not at exit: a reader that is gone is seen in this try
        return code
    except OvnkError as exc:
        print(f"ovnk {args.command}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        if not stdout_reader_gone():
            raise
        silence_stdout()
        return READER_GONE_EXIT


def stdout_reader_gone() -> bool:
    """Whether standard output is a pipe (or socket) whose reader has closed it."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without a file
        return False
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & select.POLLERR for _fd, events in poller.poll(0))


def silence_stdout() -> None:
    """Send what is left of standard output to ``os.devnull`` (the documented way to end
    quietly on a broken pipe: the interpreter flushes it once more at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
