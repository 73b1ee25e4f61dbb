"""``ovnk version``: the installed core, plugin and subcommand (``ovnk.cli``) distributions."""

from __future__ import annotations

import argparse
from importlib import metadata
from typing import Any

from ovnk_core.cli import ENTRY_POINT_GROUP
from ovnk_core.plugins import discover


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("version", help="print the version of ovnk and its plugins")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    print(f"ovnk-core {metadata.version('ovnk-core')}")
    seen = set()
    for info in discover():
        if info.distribution not in seen:
            seen.add(info.distribution)
            print(f"{info.distribution} {info.version}")
    for entry in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        dist = entry.dist
        if dist is not None and dist.name not in seen:
            seen.add(dist.name)
            print(f"{dist.name} {dist.version}")
    return 0
