"""``ovnk config``: show the effective configuration and where each value came from."""

from __future__ import annotations

import argparse
from typing import Any

from ovnk_core.config import add_config_arguments, load_config
from ovnk_core.config.options import OPTIONS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "config", help="validate and print the effective configuration",
        description="Merge flags, OVNK_* environment and the TOML file, run every consistency "
                    "check, and print each option with its source. Exits 2 on invalid input.",
    )
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = load_config(args)
    width = max(len(option.flag) for option in OPTIONS)
    for option in OPTIONS:
        value = getattr(config, option.field)
        if isinstance(value, tuple):
            value = ",".join(str(item) for item in value)
        source = config.sources.get(option.field, "default")
        print(f"{option.flag:<{width}}  {value!s:<40}  ({source})")
    print(f"{'features':<{width}}  {','.join(config.enabled_features) or '-'}")
    return 0
