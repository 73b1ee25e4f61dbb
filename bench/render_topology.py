"""Benchmark: render U primary networks of a topology over N nodes into a real NB, vs the floor.

For each repetition, on fresh standalone NB servers:

* **ovnk**: a child process connects an ``NbClient`` and converges every owner the way
  the zone controller does (the network, then its nodes, then its pods: one transaction
  each step per network), reporting the time and its peak RSS;
* **floor**: the same rows, written by one ``ovn-nbctl`` transaction per network;
* **restart**: a fresh child process connects to ovnk's NB and converges everything again;
  it must write nothing (0 transactions); its time is the resync time;
* **leak check**: every owner is deleted; zero ovnk-owned rows may remain.

Both NBs are compared row by row (``ovnk_core.ovn.snapshot``): the ratio is only reported
for equal content.  The ovnk phases run once with the pure-Python ``ovs`` JSON parser and
once with the C parser of Debian's python3-openvswitch (when it is installed).

    python bench/render_topology.py --topology layer3 --networks 100 --nodes 20 --repeat 5
    python bench/render_topology.py --topology layer2 --networks 1000 --nodes 20 --repeat 3

prints a table and writes ``bench/results/render_<topology>-<time>.json``.  A Layer3 network
has a /24 per node; a Layer2 network one /16 across nodes, its pods numbered per node.
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import multiprocessing
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nb_digest import digest, digest_difference
from nbctl_floor import nbctl_commands, run_nbctl
from ovnk_layer2.topology import Layer2Topology
from ovnk_layer3.topology import Layer3Topology
from raw_txn import transact_checked, transact_ops
from results_file import write_results

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, apply_many
from ovnk_core.ovn.install import command, schema, use_development_default
from ovnk_core.ovn.jsonrpc import OvsdbConnection
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState, PodAttachment
from ovnk_core.testing.configs import udn_config
from ovnk_core.topology import Topology
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner

MASQUERADE = (ipaddress.ip_network("169.254.0.0/17"),)
CLUSTER = ipaddress.ip_network("10.128.0.0/14")


@dataclass(frozen=True)
class Workload:
    networks: int
    nodes: int
    pods: int  # per network per node
    topology: str = "layer3"
    active_fraction: float = 1.0  # of the nodes each network is rendered on (dynamic)

    def active_nodes(self, index: int) -> list[int]:
        """The nodes network ``index`` is rendered on: all, or with dynamic allocation the
        ``ceil(fraction x nodes)`` nodes its pods are on (a different run of nodes for each
        network, so every node carries some)."""
        count = max(1, math.ceil(self.active_fraction * self.nodes))
        if count >= self.nodes:
            return list(range(self.nodes))
        return sorted((index + k) % self.nodes for k in range(count))


TOPOLOGIES: dict[str, type[Topology]] = {"layer3": Layer3Topology, "layer2": Layer2Topology}
LAYER2_SUBNET = ipaddress.ip_network("10.200.0.0/16")


def topology_of(workload: Workload) -> Topology:
    return TOPOLOGIES[workload.topology](udn_config())


def network_state(index: int, topology: str = "layer3") -> NetworkState:
    if topology == "layer2":
        netinfo = NetInfo(name=f"ns{index}_udn", topology="layer2", role="primary", mtu=1400,
                          subnets=(ClusterSubnet(LAYER2_SUBNET, LAYER2_SUBNET.prefixlen),),
                          join_subnets=(ipaddress.ip_network("100.65.0.0/16"),),
                          transit_subnets=(ipaddress.ip_network("100.88.0.0/16"),),
                          nad_key=f"ns{index}/udn")
        return NetworkState(netinfo, index + 1, MASQUERADE, (),
                            (16711683 + index + 1, 16715779 + index))
    netinfo = NetInfo(name=f"ns{index}_udn", topology="layer3", role="primary", mtu=1400,
                      subnets=(ClusterSubnet(CLUSTER, 24),),
                      join_subnets=(ipaddress.ip_network("100.65.0.0/16"),))
    return NetworkState(netinfo, index + 1, MASQUERADE, ())


def node_state(index: int, topology: str = "layer3") -> NodeState:
    ip = f"172.18.{index // 250}.{index % 250 + 2}"
    subnet = ipaddress.ip_network(f"10.{128 + index // 256}.{index % 256}.0/24")
    return NodeState(f"node-{index}", (subnet,) if topology == "layer3" else (), index + 2,
                     f"chassis-{index}",
                     GatewayConfig("shared", "breth0", mac_from_ip(ip), (f"{ip}/16",),
                                   ("172.18.0.1",)))


def pod_attachment(index: int, node_index: int, node: NodeState, p: int,
                   topology: str) -> PodAttachment:
    if topology == "layer2":
        ip = LAYER2_SUBNET.network_address + 3 + node_index * 256 + p
        return PodAttachment(f"ns{index}", f"pod-{node.name}-{p}", f"uid-{p}", node.name,
                             f"ns{index}/udn", mac_from_ip(ip), (f"{ip}/16",), "primary",
                             10 + node_index * 256 + p, node.node_id)
    ip = node.subnets[0].network_address + 3 + p
    return PodAttachment(f"ns{index}", f"pod-{node.name}-{p}", f"uid-{p}", node.name,
                         f"ns{index}/udn", mac_from_ip(ip), (f"{ip}/24",))


def owners_of(workload: Workload, index: int) -> list[dict[Owner, list[DesiredRow]]]:
    """The transactions of one network, in the zone controller's order."""
    topology = topology_of(workload)
    state = network_state(index, workload.topology)
    netinfo = state.netinfo
    nodes = [(n, node_state(n, workload.topology)) for n in workload.active_nodes(index)]
    network_and_nodes = {network_owner(netinfo): topology.build_network(state)}
    for _node_index, node in nodes:
        network_and_nodes[node_owner(netinfo, node.name)] = topology.build_node(state, node)
    steps: list[dict[Owner, list[DesiredRow]]] = [network_and_nodes]
    pods: dict[Owner, list[DesiredRow]] = {}
    for node_index, node in nodes:
        for p in range(workload.pods):
            attachment = pod_attachment(index, node_index, node, p, workload.topology)
            pods[pod_owner(netinfo, attachment.namespace, attachment.name)] = \
                topology.build_pod(state, attachment)
    if pods:
        steps.append(pods)
    return steps


def _peak_rss_mb() -> float:
    """This process's peak RSS since it started its interpreter (``VmHWM``).

    Not ``getrusage``: Linux keeps ``ru_maxrss`` across exec, so a spawned child would
    report the RSS of the parent it was forked from whenever that was larger.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def ovnk_phase(remote: str, workload: Workload, queue: Any) -> None:
    """Child process: converge everything as the zone controller does; report time,
    writes, RSS."""
    from ovnk_core.ovn.writer import NbWriter

    start = time.perf_counter()
    nb = NbWriter([remote], timeout=3600).start()
    connected = time.perf_counter()
    for index in range(workload.networks):
        for step in owners_of(workload, index):
            apply_many(nb, step)
    done = time.perf_counter()
    queue.put({"seconds": done - start, "connect_seconds": connected - start,
               "transactions": nb.transactions, "peak_rss_mb": _peak_rss_mb(),
               "owned_rows": nb.owned_row_count()})
    nb.stop()


def delete_phase(remote: str, workload: Workload, queue: Any) -> None:
    from ovnk_core.ovn.writer import NbWriter

    nb = NbWriter([remote], timeout=3600).start()
    start = time.perf_counter()
    for index in range(workload.networks):
        steps = owners_of(workload, index)
        for step in reversed(steps):  # pods, then the network with its nodes
            network = [o for o in step if o.key == "network"]
            apply_many(nb, {owner: [] for owner in step if owner not in network})
            apply_many(nb, {owner: [] for owner in network})
    seconds = time.perf_counter() - start
    nb.stop()
    # An independent read decides what is left.
    with NbWriter([remote], timeout=3600).start() as fresh:
        left = fresh.owned_row_count()
    queue.put({"seconds": seconds, "left": left})


def in_child(target: Any, *args: Any) -> dict[str, Any]:
    """Run ``target`` in a fresh interpreter (its own RSS)."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(*args, queue))
    process.start()
    result: dict[str, Any] = queue.get(timeout=7200)
    process.join()
    return result


def floor_phase(remote: str, workload: Workload) -> float:
    batches = []
    for index in range(workload.networks):
        rows = [row for step in owners_of(workload, index) for rows in step.values()
                for row in rows]
        batches.append(nbctl_commands(rows))
    start = time.perf_counter()
    for args in batches:
        run_nbctl(remote, args)
    return time.perf_counter() - start


def raw_phase(remote: str, workload: Workload) -> float:
    """The same rows as one raw transaction per network from this process (no IDL)."""
    connection = OvsdbConnection(remote, timeout=600)
    try:
        start = time.perf_counter()
        for index in range(workload.networks):
            rows = [row for step in owners_of(workload, index) for rows in step.values()
                    for row in rows]
            transact_checked(connection, transact_ops(rows))
        return time.perf_counter() - start
    finally:
        connection.close()


def same_rows(remote_a: str, remote_b: str) -> list[str]:
    return digest_difference(digest(remote_a), digest(remote_b))


def one_run(workload: Workload, workdir: Path, check: bool) -> dict[str, Any]:
    ovnk_db = OvsdbServer("ovnk", workdir / f"ovnk-{time.monotonic_ns()}",
                         schema("ovn-nb")).start()
    floor_db = OvsdbServer("floor", workdir / f"floor-{time.monotonic_ns()}",
                         schema("ovn-nb")).start()
    raw_db = OvsdbServer("raw", workdir / f"raw-{time.monotonic_ns()}",
                         schema("ovn-nb")).start()
    try:
        floor = floor_phase(floor_db.remote, workload)
        raw = raw_phase(raw_db.remote, workload)
        raw_differences = same_rows(raw_db.remote, floor_db.remote) if check else []
        ovnk = in_child(ovnk_phase, ovnk_db.remote, workload)
        restart = in_child(ovnk_phase, ovnk_db.remote, workload)
        differences = same_rows(ovnk_db.remote, floor_db.remote) if check else []
        deleted = in_child(delete_phase, ovnk_db.remote, workload)
    finally:
        ovnk_db.stop()
        floor_db.stop()
        raw_db.stop()
    if raw_differences:
        raise SystemExit("raw transactions and the floor wrote different rows:\n" +
                         "\n".join(raw_differences[:20]))
    if differences:
        raise SystemExit("ovnk and the floor wrote different rows:\n" +
                         "\n".join(differences[:20]))
    if restart["transactions"]:
        raise SystemExit(f"restart wrote {restart['transactions']} transaction(s); "
                         "expected 0")
    if deleted["left"]:
        raise SystemExit(f"leak: {deleted['left']} ovnk-owned rows left after deleting all")
    return {"floor_seconds": floor, "raw_seconds": raw, "ovnk_seconds": ovnk["seconds"],
            "ratio": ovnk["seconds"] / floor, "peak_rss_mb": ovnk["peak_rss_mb"],
            "restart_seconds": restart["seconds"], "restart_writes": restart["transactions"],
            "restart_peak_rss_mb": restart["peak_rss_mb"], "owned_rows": ovnk["owned_rows"],
            "delete_seconds": deleted["seconds"]}


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    keys = ("floor_seconds", "raw_seconds", "ovnk_seconds", "ratio", "peak_rss_mb",
            "restart_seconds", "restart_peak_rss_mb", "delete_seconds")
    return {key: statistics.median(r[key] for r in runs) for key in keys} | {
        "runs": len(runs), "owned_rows": runs[0]["owned_rows"]}


def environment() -> dict[str, Any]:
    import subprocess

    ovn = subprocess.run(command("ovn-nbctl", "--version"), capture_output=True, text=True)
    return {"python": platform.python_version(), "ovn": ovn.stdout.splitlines()[0],
            "cpus": os.cpu_count(), "db_mode": "standalone"}


def main(argv: list[str] | None = None) -> int:
    use_development_default()  # OVN 26.03 unless OVNK_OVN names another
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topology", choices=sorted(TOPOLOGIES), default="layer3")
    parser.add_argument("--networks", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--pods", type=int, default=0, help="pods per network per node")
    parser.add_argument("--active-fraction", type=float, default=1.0,
                        help="dynamic allocation: each network rendered only on this fraction "
                             "of the nodes (its pods' nodes); the rows are also compared with "
                             "the full render's")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    workload = Workload(args.networks, args.nodes, args.pods, args.topology,
                        args.active_fraction)
    report: dict[str, Any] = {"workload": vars(workload) | {"repeat": args.repeat},
                              "environment": environment()}
    with tempfile.TemporaryDirectory(prefix="ovnk-bench-") as tmp:
        workdir = Path(tmp)
        if not args.no_warmup:
            one_run(Workload(2, 2, 0, args.topology), workdir, True)
        runs = [one_run(workload, workdir, check=(i == 0)) for i in range(args.repeat)]
    m = report["median"] = summarise(runs)
    report["runs"] = runs
    if workload.active_fraction < 1:
        full = Workload(workload.networks, workload.nodes, workload.pods, workload.topology)
        m["full_render_rows"] = sum(len(rows) for index in range(full.networks)
                                    for step in owners_of(full, index)
                                    for rows in step.values())
        m["rows_vs_full_render"] = m["owned_rows"] / m["full_render_rows"]
    print(f"{workload.topology} render: {workload.networks} networks x {workload.nodes} nodes x "
          f"{workload.pods} pods/node ({m['owned_rows']} rows), median of {args.repeat} run(s) "
          f"({report['environment']['ovn']}, Python {report['environment']['python']}, "
          f"{report['environment']['cpus']} CPUs, standalone NB)")
    print(f"{'floor s':>9}{'raw txn s':>11}{'ovnk s':>9}{'ratio':>7}{'RSS MB':>8}"
          f"{'restart s':>11}{'writes':>8}{'restart RSS':>13}{'delete s':>10}")
    print(f"{m['floor_seconds']:>9.2f}{m['raw_seconds']:>11.2f}{m['ovnk_seconds']:>9.2f}"
          f"{m['ratio']:>7.2f}{m['peak_rss_mb']:>8.0f}{m['restart_seconds']:>11.2f}"
          f"{0:>8}{m['restart_peak_rss_mb']:>13.0f}{m['delete_seconds']:>10.2f}")
    print("rows: ovnk's NB and the raw transactions' NB equal the floor's NB (checked); "
          "restart wrote nothing; no ovnk-owned row left after delete-all")
    if "full_render_rows" in m:
        print(f"dynamic allocation: each network on {workload.active_fraction:.0%} of the "
              f"nodes: {m['owned_rows']} rows, {m['rows_vs_full_render']:.2f}x the full "
              f"render's {m['full_render_rows']}")
    out = write_results(args.results, f"render_{workload.topology}", report)
    print(f"raw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
