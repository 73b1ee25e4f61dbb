"""Benchmark: UDN isolation with N primary-UDN pods, node side (nftables) and zone side (NB).

Node side (root; a throwaway network namespace, removed at the end), through the node
agent's own ``HostIsolation`` controller fed from a static pod cache (no API server):

* **full sync**: a fresh controller's start-up sync (``initial_sync``: kubelet cgroup,
  every pod's elements, the table compared, then the whole table written in one nftables
  transaction) into a namespace without the table, against two floors fed the same
  ruleset text (the script ``nft.apply_table`` sends): one ``nft -f`` process, and one
  fresh libnftables context in this process (created, ``cmd``, freed);
* **per-pod update**: pods added, their open ports changed, pods deleted, one at a time
  through the controller's ``reconcile`` (the incremental element adds/deletes), against
  the same element commands sent to copies of the table by one ``nft -f`` process each, by
  one fresh libnftables context each (created, ``cmd``, freed) and by one ``cmd`` of a
  libnftables context kept open in the namespace.

Zone side (standalone NB ovsdb-servers): the default network, one node and N isolated
pods' ports already written; then the ``SecondaryPods`` port group, its five ACLs, the N
ports' membership and the OpenPort ACLs of pods with open ports, built by the plugins'
``ovnk_zone_pod_port`` hook and written with ``apply_many`` through ``NbWriter``, once as
one transaction and once as the zone controller does it (the group, then one transaction
per pod), against one ``ovn-nbctl`` invocation creating the same rows.

Every run checks itself: the NBs are compared row by row, a restarted writer must write
nothing, deleting everything leaves no owned row, and no nft element, table or namespace
is left.

    python bench/isolation.py --pods 1000 --updates 200 --repeat 5

prints a table and writes ``bench/results/isolation-<time>.json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from isolation_node import FLOORS, node_side
from isolation_zone import zone_side
from results_file import write_results

from ovnk_core.ovn.install import command, use_development_default
from ovnk_core.testing.configs import udn_config


# -- report ----------------------------------------------------------------------------------
def environment() -> dict[str, Any]:
    def first_line(*argv: str) -> str:
        try:
            out = subprocess.run(argv, capture_output=True, text=True).stdout
        except OSError:
            return "missing"
        return out.splitlines()[0] if out else "unknown"
    return {"python": platform.python_version(),
            "ovn": first_line(*command("ovn-nbctl", "--version")),
            "nft": first_line("nft", "--version"), "kernel": platform.release(),
            "cpus": os.cpu_count(), "db_mode": "standalone"}


def print_node(node: dict[str, Any], pods: int) -> None:
    sync = node["full_sync"]
    print(f"\nnode: full sync of {pods} pods ({sync['elements']} elements, "
          f"{sync['script_bytes']} bytes of nft text, kubelet rule: {sync['kubelet_rule']})")
    print(f"{'ovnk ms':>9}{'(nft write ms)':>16}{'nft -f ms':>11}{'libnftables ms':>16}"
          f"{'/ nft -f':>10}{'write / nft -f':>16}{'/ libnftables':>15}")
    print(f"{sync['ovnk_seconds'] * 1000:>9.1f}{sync['ovnk_write_seconds'] * 1000:>16.1f}"
          f"{sync['nft_f_seconds'] * 1000:>11.1f}{sync['libnftables_seconds'] * 1000:>16.1f}"
          f"{sync['ratio_nft_f']:>9.2f}x{sync['ratio_write_nft_f']:>15.2f}x"
          f"{sync['ratio_libnftables']:>14.2f}x")
    print(f"\nnode: per-pod updates ({node['updates']['all']['count']} per run), "
          "p50 / p99 ms and ovnk's p50, p99 ratios to each floor")
    header = "".join(f"{name:>20}" for name in ("ovnk", *FLOORS))
    print(f"{'change':<8}{'n':>4}{header}" + "".join(f"{'/ ' + f:>22}" for f in FLOORS))
    for kind, row in node["updates"].items():
        cells = "".join(f"{row[f'{name}_ms']['p50']:>12.2f} /{row[f'{name}_ms']['p99']:>6.2f}"
                        for name in ("ovnk", *FLOORS))
        ratios = "".join(f"{row[f'ratio_{f}_p50']:>14.2f}x,{row[f'ratio_{f}_p99']:>6.2f}x"
                         for f in FLOORS)
        print(f"{kind:<8}{row['count']:>4}{cells}{ratios}")


def print_zone(zone: dict[str, Any]) -> None:
    m = zone["median"]
    print(f"\nzone: port group, 5 ACLs, {m['members']} members, {m['acls'] - 5} OpenPort ACLs")
    print(f"{'floor s':>9}{'ovnk s':>9}{'(build s)':>11}{'ratio':>8}{'per-pod s':>11}"
          f"{'ratio':>8}{'txns':>6}")
    print(f"{m['floor_seconds']:>9.3f}{m['ovnk_seconds']:>9.3f}{m['build_seconds']:>11.3f}"
          f"{m['ratio']:>7.2f}x{m['perpod_seconds']:>11.3f}{m['ratio_perpod']:>7.2f}x"
          f"{m['perpod_transactions']:>6}")


def main(argv: list[str] | None = None) -> int:
    use_development_default()  # OVN 26.03 unless OVNK_OVN names another
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=200, help="per-pod changes per run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--skip-node", action="store_true", help="zone side only (no root)")
    parser.add_argument("--skip-zone", action="store_true", help="node side only")
    parser.add_argument("--no-kubelet-rule", action="store_true",
                        help="node side as on a node without cgroup v2 (no kubelet rule)")
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    if not args.skip_node and os.geteuid() != 0:
        parser.error("the node side needs root (network namespace, nftables); "
                     "--skip-node runs the zone side alone")
    config = udn_config()
    report: dict[str, Any] = {"workload": {"pods": args.pods, "updates": args.updates,
                                           "repeat": args.repeat},
                              "environment": environment()}
    env = report["environment"]
    print(f"UDN isolation, {args.pods} pods, median of {args.repeat} run(s) ({env['ovn']}, "
          f"{env['nft']}, Python {env['python']}, {env['cpus']} CPUs, standalone NB)")
    with tempfile.TemporaryDirectory(prefix="ovnk-bench-") as tmp:
        workdir = Path(tmp)
        if not args.skip_node:
            report["node"] = node_side(config, args.pods, args.updates, args.repeat,
                                       not args.no_warmup, workdir,
                                       kubelet_rule=not args.no_kubelet_rule)
            print_node(report["node"], args.pods)
        if not args.skip_zone:
            report["zone"] = zone_side(config, args.pods, args.repeat, not args.no_warmup,
                                       workdir)
            print_zone(report["zone"])
    print("\nchecked: nft tables equal the floors', sets as the pods want, nothing left after "
          "deleting every pod; NB rows equal the floor's, restart wrote nothing, no owned "
          "row left")
    out = write_results(args.results, "isolation", report)
    print(f"raw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
