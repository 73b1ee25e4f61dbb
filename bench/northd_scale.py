"""ovn-northd of each OVN at scale: how long one pod port takes to reach SB in a large cluster.

For each OVN (``--ovn``, default the host's 23.03 and the pinned 26.03, in the same run): a
fresh NB + SB + ovn-northd of that OVN; ``U`` Layer3-like networks of ``N`` nodes (per
network a router, per node a switch with its router port pair and one pod port; one
transaction per network), written with ``ovn-nbctl`` or, with ``--builder jsonrpc``, as raw
OVSDB transactions over one connection (``ovn-nbctl`` reads all of NB at each call, which
makes U = 1000 take hours); then SB is waited for (``--wait=sb sync``: how long northd takes
to absorb the topology, and its CPU for that); then ``--pods`` single pod ports are added
one at a time with ``ovn-nbctl --wait=sb``: the time until SB reflects each (the pod-start
cost northd adds).  northd's CPU (utime + stime) and peak RSS (``VmHWM``) come from
``/proc``.  Only OVN's own programs run: this measures OVN, not ovnk.

    .venv/bin/python bench/northd_scale.py --udns 100 --nodes 20 --pods 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results_file import machine_facts, write_results

from ovnk_core.ovn import install
from ovnk_core.ovn.jsonrpc import OvsdbConnection
from ovnk_core.ovn.processes import Northd, OvsdbServer

CLK_TCK = os.sysconf("SC_CLK_TCK")


def nbctl(remote: str, *args: str, timeout: float = 3600) -> str:
    return subprocess.run(install.command("ovn-nbctl", f"--db={remote}", *args), check=True,
                          capture_output=True, text=True, timeout=timeout).stdout


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def network_commands(u: int, nodes: int) -> list[str]:
    """One network's rows as ovn-nbctl commands (one transaction)."""
    router = f"net{u}_ovn_cluster_router"
    commands = ["--", "lr-add", router]
    for n in range(nodes):
        switch, rtos = f"net{u}_node{n}", f"rtos-net{u}_node{n}"
        mac = f"0a:58:0a:{u // 256:02x}:{u % 256:02x}:{n:02x}"
        commands += ["--", "lrp-add", router, rtos, mac, f"10.{u % 250}.{n}.1/24",
                     "--", "ls-add", switch,
                     "--", "lsp-add", switch, f"stor-{switch}",
                     "--", "lsp-set-type", f"stor-{switch}", "router",
                     "--", "lsp-set-addresses", f"stor-{switch}", "router",
                     "--", "lsp-set-options", f"stor-{switch}", f"router-port={rtos}",
                     "--", "lsp-add", switch, f"pod-{switch}-0",
                     "--", "lsp-set-addresses", f"pod-{switch}-0",
                     f"0a:58:0a:{u % 250:02x}:{n:02x}:03 10.{u % 250}.{n}.3"]
    return commands


def network_operations(u: int, nodes: int) -> list[dict[str, Any]]:
    """The rows of ``network_commands`` as raw OVSDB operations (one transaction)."""
    ops: list[dict[str, Any]] = []
    router_ports = []
    for n in range(nodes):
        switch, rtos = f"net{u}_node{n}", f"rtos-net{u}_node{n}"
        mac = f"0a:58:0a:{u // 256:02x}:{u % 256:02x}:{n:02x}"
        ops.append({"op": "insert", "table": "Logical_Router_Port", "uuid-name": f"lrp{n}",
                    "row": {"name": rtos, "mac": mac,
                            "networks": ["set", [f"10.{u % 250}.{n}.1/24"]]}})
        router_ports.append(["named-uuid", f"lrp{n}"])
        ops.append({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"stor{n}",
                    "row": {"name": f"stor-{switch}", "type": "router",
                            "addresses": ["set", ["router"]],
                            "options": ["map", [["router-port", rtos]]]}})
        ops.append({"op": "insert", "table": "Logical_Switch_Port", "uuid-name": f"pod{n}",
                    "row": {"name": f"pod-{switch}-0", "addresses": ["set", [
                        f"0a:58:0a:{u % 250:02x}:{n:02x}:03 10.{u % 250}.{n}.3"]]}})
        ops.append({"op": "insert", "table": "Logical_Switch", "uuid-name": f"ls{n}",
                    "row": {"name": switch, "ports": ["set", [["named-uuid", f"stor{n}"],
                                                              ["named-uuid", f"pod{n}"]]]}})
    ops.append({"op": "insert", "table": "Logical_Router", "uuid-name": "lr",
                "row": {"name": f"net{u}_ovn_cluster_router",
                        "ports": ["set", router_ports]}})
    return ops


def build(remote: str, builder: str, udns: int, nodes: int) -> None:
    """U networks of N nodes in NB, one transaction per network."""
    if builder == "nbctl":
        for u in range(udns):
            nbctl(remote, *network_commands(u, nodes)[1:])  # (without the leading --)
        return
    connection = OvsdbConnection(remote, timeout=3600)
    try:
        for u in range(udns):
            results = connection.transact("OVN_Northbound", network_operations(u, nodes))
            errors = [r for r in results if isinstance(r, dict) and "error" in r]
            if errors:
                raise RuntimeError(f"network {u}: {errors[:2]}")
    finally:
        connection.close()


def measure(spec: str, udns: int, nodes: int, pods: int, workdir: Path,
            builder: str = "nbctl") -> dict[str, Any]:
    os.environ[install.OVN_ENV] = spec
    ovn = install.selected()
    nb = OvsdbServer("nb", workdir, ovn.schema("ovn-nb")).start()
    sb = OvsdbServer("sb", workdir, ovn.schema("ovn-sb")).start()
    northd = Northd(workdir, nb.remote, sb.remote).start()
    try:
        assert northd.proc is not None
        pid = northd.proc.pid
        started = time.monotonic()
        build(nb.remote, builder, udns, nodes)
        built = time.monotonic() - started
        cpu_before = cpu_seconds(pid)
        nbctl(nb.remote, "--timeout=7200", "--wait=sb", "sync", timeout=7300)
        absorbed = time.monotonic() - started
        absorb_cpu = cpu_seconds(pid)
        latencies = []
        for index in range(pods):
            switch = f"net{index % udns}_node{index % nodes}"
            began = time.monotonic()
            nbctl(nb.remote, "--timeout=3600", "--wait=sb", "lsp-add", switch,
                  f"pod-{switch}-extra{index}", "--", "lsp-set-addresses",
                  f"pod-{switch}-extra{index}", f"0a:58:0b:00:00:{index:02x} 11.0.0.{index + 3}")
            latencies.append(time.monotonic() - began)
        return {"ovn": ovn.describe(), "udns": udns, "nodes": nodes, "builder": builder,
                "build_s": round(built, 1), "absorb_s": round(absorbed, 1),
                "absorb_northd_cpu_s": round(absorb_cpu, 1),
                "northd_cpu_during_build_s": round(cpu_before, 1),
                "pod_wait_sb_s": [round(x, 3) for x in latencies],
                "pod_wait_sb_median_s": round(statistics.median(latencies), 3),
                "northd_cpu_total_s": round(cpu_seconds(pid), 1),
                "northd_peak_rss_mb": round(peak_rss_mb(pid))}
    finally:
        northd.stop()
        sb.stop()
        nb.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--udns", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--pods", type=int, default=5)
    parser.add_argument("--ovn", default=f"{install.SYSTEM},{install.PINNED_SERIES}",
                        help="comma-separated OVNs (ovnk_core.ovn.install specs)")
    parser.add_argument("--builder", choices=("nbctl", "jsonrpc"), default="nbctl",
                        help="how the topology is written (jsonrpc: one raw transaction per "
                             "network, for large U)")
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    runs = []
    for spec in args.ovn.split(","):
        with tempfile.TemporaryDirectory(prefix="northd-scale-") as workdir:
            run = measure(spec, args.udns, args.nodes, args.pods, Path(workdir),
                          args.builder)
        print(json.dumps(run), flush=True)
        runs.append(run)
    report = {"machine": {**machine_facts(), "load": os.getloadavg()}, "runs": runs}
    print(f"results: {write_results(args.results, 'northd_scale', report)}")
    print("| OVN | U x N | topology absorbed (s) | northd CPU to absorb (s) | "
          "pod port until SB, median (s) | northd peak RSS (MB) |")
    print("|---|---|---|---|---|---|")
    for run in runs:
        print(f"| {run['ovn']} | {run['udns']} x {run['nodes']} | {run['absorb_s']} | "
              f"{run['absorb_northd_cpu_s']} | {run['pod_wait_sb_median_s']} | "
              f"{run['northd_peak_rss_mb']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
