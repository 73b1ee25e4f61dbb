"""``ovnk plugins``: every installed plugin, and whether the configuration enables it.

Listing does not import plugins.  With ``--check`` the enabled ones are also
loaded and configured, exactly as a component would at startup, so a missing
or broken plugin is reported here first.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from ovnk_core.config import add_config_arguments, load_config
from ovnk_core.plugins import PluginHost, discover


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "plugins", help="list discovered plugins (name, group, distribution, version, enabled)",
        description="List the plugins installed in the ovnk.topologies and ovnk.features "
                    "entry-point groups. 'enabled' reflects the configuration given here.",
    )
    parser.add_argument("--check", action="store_true",
                        help="also load and configure the enabled plugins (as at startup)")
    parser.add_argument("-o", "--output", choices=("table", "json"), default="table")
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    check = args.check
    output = args.output
    cli = {key: value for key, value in vars(args).items()
           if key not in ("check", "output", "func", "command")}
    config = load_config(cli)
    infos = discover(config)
    if output == "json":
        print(json.dumps([asdict(info) for info in infos], indent=2))
    else:
        rows = [("NAME", "GROUP", "DISTRIBUTION", "VERSION", "ENABLED")]
        rows += [(i.name, i.group, i.distribution, i.version, "yes" if i.enabled else "no")
                 for i in infos]
        widths = [max(len(row[col]) for row in rows) for col in range(5)]
        for row in rows:
            print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
                  .rstrip())
    if check:
        host = PluginHost.load(config)
        print(f"loaded: topologies={','.join(host.topologies) or '-'} "
              f"features={','.join(host.features) or '-'}")
    return 0
