"""Benchmark: S services x E endpoints in U primary Layer3 networks over N nodes, vs the floor.

The networks and nodes are rendered first (with their load balancer groups, held by the
switches and gateway routers, as the zone controller does); the measured part is the
services.  For each repetition, on fresh standalone NB servers:

* **ovnk**: a child process connects (reading the networks' rows, not timed, as the floor
  reads nothing) and converges each service's owner the way the services controller does:
  its workers each build a service's load balancers (linked into the network's
  ``clusterLBGroup`` or onto the nodes) and write them through one ``GroupCommit``, so the
  services of workers waiting on a transaction go out together in the next; it reports the
  time and its peak RSS;
* **floor**: the same load balancers written by one ``ovn-nbctl`` transaction per network;
* **restart**: a fresh child converges every service again and must write nothing;
* **churn**: one endpoint of each of C services replaced, one transaction each, timed per
  change (p50/p99);
* every owner is deleted at the end; no ovnk-owned row may remain.

Both NBs are compared row by row (``nb_digest``) before a ratio is reported.

    python bench/render_services.py --services 1000 --endpoints 3 --networks 20 --nodes 20

``--node-ports`` makes every tenth service a NodePort (per-node load balancers on every
node's switch and gateway router).  Writes ``bench/results/render_services-<time>.json``.
"""

from __future__ import annotations

import argparse
import ipaddress
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nb_digest import digest, digest_difference
from nbctl_floor import create_command, nbctl_commands, run_nbctl
from ovnk_layer3.topology import Layer3Topology
from render_topology import _peak_rss_mb, environment, in_child, network_state, node_state
from results_file import write_results

from ovnk_core.ovn.declarative import DesiredRow, apply_many
from ovnk_core.ovn.group_commit import GroupCommit
from ovnk_core.ovn.install import schema, use_development_default
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.render_state import NetworkState, NodeState
from ovnk_core.testing.configs import udn_config
from ovnk_core.topology import ServiceAttachment
from ovnk_core.zone.owners import network_owner, node_owner, service_owner
from ovnk_core.zone.services.controller import WORKERS, node_ips
from ovnk_core.zone.services.desired import group_rows, load_balancer_rows, with_groups
from ovnk_core.zone.services.lb_config import (
    NodeAddresses,
    base_options,
    build_configs,
    cluster_load_balancers,
    node_load_balancers,
    parse_service,
)
from ovnk_core.zone.services.names import LB_GROUPS, group_name

TOPOLOGY = Layer3Topology(udn_config())
SERVICE_CIDR = ipaddress.ip_network("10.96.0.0/12")


@dataclass(frozen=True)
class Workload:
    services: int
    endpoints: int
    networks: int
    nodes: int
    node_ports: bool = False


def nodes_of(workload: Workload) -> list[NodeState]:
    return [node_state(n) for n in range(workload.nodes)]


def network_rows(workload: Workload, index: int) -> dict[Owner, list[DesiredRow]]:
    """The network, its nodes and its load balancer groups: one transaction."""
    state = network_state(index)
    netinfo = state.netinfo
    desired = {network_owner(netinfo): TOPOLOGY.build_network(state) + group_rows(netinfo)}
    attachments = []
    for node in nodes_of(workload):
        desired[node_owner(netinfo, node.name)] = TOPOLOGY.build_node(state, node)
        attachment = TOPOLOGY.service_attachment(state, node)
        if attachment is not None:
            attachments.append(attachment)
    return {owner: with_groups(rows, netinfo, attachments) for owner, rows in desired.items()}


def service_object(workload: Workload, number: int, generation: int = 0
                   ) -> tuple[dict[str, Any], list[dict[str, Any]], int]:
    """Service ``number``, its slice and its network index (services spread round-robin);
    ``generation`` moves the first endpoint to another address (endpoint churn)."""
    index = number % workload.networks
    cluster_ip = SERVICE_CIDR.network_address + 10 + number
    port: dict[str, Any] = {"name": "http", "protocol": "TCP", "port": 80}
    spec: dict[str, Any] = {"clusterIP": str(cluster_ip), "clusterIPs": [str(cluster_ip)],
                            "ports": [port]}
    if workload.node_ports and number % 10 == 0:
        spec["type"] = "NodePort"
        port["nodePort"] = 30000 + number % 2000
    service = {"metadata": {"namespace": f"ns{index}", "name": f"svc-{number}"}, "spec": spec}
    endpoints = []
    for e in range(workload.endpoints):
        node = (number + e) % workload.nodes
        subnet = node_state(node).subnets[0]
        host = 3 + (number // workload.networks) % 200 + (generation if e == 0 else 0)
        endpoints.append({"addresses": [str(subnet.network_address + host)],
                          "nodeName": f"node-{node}", "conditions": {"ready": True}})
    slice_ = {"addressType": "IPv4", "endpoints": endpoints,
              "ports": [{"name": "http", "protocol": "TCP", "port": 8080}]}
    return service, [slice_], index


ServiceInput = tuple[dict[str, Any], list[dict[str, Any]], int]


def service_inputs(workload: Workload, generation: int = 0) -> list[ServiceInput]:
    """Every service with its slices and network: what the informers would hold."""
    return [service_object(workload, number, generation)
            for number in range(workload.services)]


def service_rows(workload: Workload, source: ServiceInput, states: dict[int, NetworkState],
                 nodes: list[NodeState]) -> tuple[Owner, list[DesiredRow]]:
    """What the services controller writes for one service (its pure part)."""
    service, slices, index = source
    state = states[index]
    netinfo = state.netinfo
    spec = parse_service(service)
    assert spec is not None
    owner = service_owner(netinfo, spec.namespace, spec.name)
    configs = build_configs(spec, slices, [s.cidr for s in netinfo.subnets])
    options = base_options(["169.254.0.5"], None)
    balancers = cluster_load_balancers(spec, configs.cluster, netinfo.name, options)
    attachments: dict[str, ServiceAttachment] = {}
    if configs.per_node:
        for node in nodes:
            attachment = TOPOLOGY.service_attachment(state, node)
            if attachment is None:
                continue
            attachments[node.name] = attachment
            balancers += node_load_balancers(
                spec, configs.per_node, netinfo.name,
                NodeAddresses(node.name, node_ips(node, (4,)), ("169.254.0.2",)), options)
    return owner, load_balancer_rows(netinfo, owner, balancers, attachments)


def states_of(workload: Workload) -> dict[int, NetworkState]:
    return {index: network_state(index) for index in range(workload.networks)}


def render_networks(remote: str, workload: Workload) -> None:
    from ovnk_core.ovn.writer import NbWriter

    with NbWriter([remote], timeout=3600).start() as nb:
        for index in range(workload.networks):
            apply_many(nb, network_rows(workload, index))


def ovnk_phase(remote: str, workload: Workload, queue: Any) -> None:
    """Child process: every service in its own transaction, as the services controller."""
    from ovnk_core.ovn.writer import NbWriter

    states, nodes, inputs = states_of(workload), nodes_of(workload), service_inputs(workload)
    connect = time.perf_counter()
    nb = NbWriter([remote], timeout=3600).start()  # reads the networks' rows: not timed
    commit = GroupCommit(nb)

    def converge(source: ServiceInput) -> None:
        owner, rows = service_rows(workload, source, states, nodes)
        commit.apply({owner: rows})

    start = time.perf_counter()
    with ThreadPoolExecutor(WORKERS) as pool:  # as many as the controller's workers
        list(pool.map(converge, inputs))
    done = time.perf_counter()
    queue.put({"seconds": done - start, "connect_seconds": start - connect,
               "transactions": nb.transactions,
               "peak_rss_mb": _peak_rss_mb(), "owned_rows": nb.owned_row_count()})
    nb.stop()


def churn_phase(remote: str, workload: Workload, changes: int, queue: Any) -> None:
    """Child process: replace one endpoint of ``changes`` services, timing each write."""
    from ovnk_core.ovn.writer import NbWriter

    states, nodes = states_of(workload), nodes_of(workload)
    inputs = service_inputs(workload, generation=1)[:changes]
    nb = NbWriter([remote], timeout=3600).start()
    latencies = []
    writes = 0
    for source in inputs:
        start = time.perf_counter()
        owner, rows = service_rows(workload, source, states, nodes)
        result = apply_many(nb, {owner: rows})
        latencies.append(time.perf_counter() - start)
        writes += int(result.changed)
    nb.stop()
    queue.put({"latencies": latencies, "writes": writes})


def delete_phase(remote: str, workload: Workload, queue: Any) -> None:
    from ovnk_core.ovn.writer import NbWriter

    states, nodes = states_of(workload), nodes_of(workload)
    with NbWriter([remote], timeout=3600).start() as nb:
        for source in service_inputs(workload):
            owner, _rows = service_rows(workload, source, states, nodes)
            apply_many(nb, {owner: []})
        for index in range(workload.networks):
            step = network_rows(workload, index)
            network = network_owner(states[index].netinfo)
            for group in LB_GROUPS:  # read back unclaimed: the zone claims them so, too
                nb.claim("Load_Balancer_Group", group_name(states[index].netinfo, group),
                         network)
            apply_many(nb, {owner: [] for owner in step if owner != network})
            apply_many(nb, {network: []})
    with NbWriter([remote], timeout=3600).start() as fresh:
        queue.put({"left": fresh.owned_row_count()})


def floor_phase(remote: str, workload: Workload) -> float:
    """The networks first (not timed), then every network's load balancers in one
    ``ovn-nbctl`` transaction, each added to its group, switch or router by name."""
    states, nodes = states_of(workload), nodes_of(workload)
    batches: dict[int, list[DesiredRow]] = {i: [] for i in range(workload.networks)}
    for source in service_inputs(workload):
        _owner, rows = service_rows(workload, source, states, nodes)
        batches[source[2]] += rows
    names: dict[tuple[str, str], str] = {}
    for index in range(workload.networks):
        rows = [row for owner_rows in network_rows(workload, index).values()
                for row in owner_rows]
        names.update({(row.table, row.ids.primary_id): row.columns["name"] for row in rows
                      if "name" in row.columns})
        run_nbctl(remote, nbctl_commands(rows))
    commands = [floor_commands(rows, names) for rows in batches.values() if rows]
    start = time.perf_counter()
    for args in commands:
        run_nbctl(remote, args)
    return time.perf_counter() - start


def floor_commands(rows: list[DesiredRow], names: dict[tuple[str, str], str]) -> list[str]:
    """Create each load balancer and add it to its parents (found by name)."""
    args: list[str] = []
    for number, row in enumerate(rows):
        args += create_command(row, f"@lb{number}")
        for link in row.links:
            parent = names[(link.parent.table, link.parent.primary_id)]
            args += ["--", "add", link.parent.table, parent, link.column, f"@lb{number}"]
    return args


def one_run(workload: Workload, workdir: Path, check: bool, changes: int) -> dict[str, Any]:
    ovnk_db = OvsdbServer("ovnk", workdir / f"ovnk-{time.monotonic_ns()}",
                         schema("ovn-nb")).start()
    floor_db = OvsdbServer("floor", workdir / f"floor-{time.monotonic_ns()}",
                         schema("ovn-nb")).start()
    try:
        floor = floor_phase(floor_db.remote, workload)
        render_networks(ovnk_db.remote, workload)
        ovnk = in_child(ovnk_phase, ovnk_db.remote, workload)
        restart = in_child(ovnk_phase, ovnk_db.remote, workload)
        differences = digest_difference(digest(ovnk_db.remote), digest(floor_db.remote)) \
            if check else []
        churn = in_child(churn_phase, ovnk_db.remote, workload, changes)
        deleted = in_child(delete_phase, ovnk_db.remote, workload)
    finally:
        ovnk_db.stop()
        floor_db.stop()
    if differences:
        raise SystemExit("ovnk and the floor wrote different rows:\n" + "\n".join(differences))
    if restart["transactions"]:
        raise SystemExit(f"restart wrote {restart['transactions']} transaction(s); expected 0")
    if churn["writes"] != len(churn["latencies"]):
        raise SystemExit(f"churn: {churn['writes']} of {len(churn['latencies'])} changes "
                         "were written")
    if deleted["left"]:
        raise SystemExit(f"leak: {deleted['left']} ovnk-owned rows left after deleting all")
    latencies = sorted(churn["latencies"])
    return {"floor_seconds": floor, "ovnk_seconds": ovnk["seconds"],
            "ratio": ovnk["seconds"] / floor, "peak_rss_mb": ovnk["peak_rss_mb"],
            "restart_seconds": restart["seconds"], "owned_rows": ovnk["owned_rows"],
            "churn_p50_ms": 1000 * statistics.median(latencies),
            "churn_p99_ms": 1000 * latencies[min(len(latencies) - 1,
                                                 int(0.99 * len(latencies)))]}


def main(argv: list[str] | None = None) -> int:
    use_development_default()  # OVN 26.03 unless OVNK_OVN names another
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", type=int, default=100)
    parser.add_argument("--endpoints", type=int, default=3)
    parser.add_argument("--networks", type=int, default=5)
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--node-ports", action="store_true")
    parser.add_argument("--changes", type=int, default=200, help="endpoint changes timed")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    workload = Workload(args.services, args.endpoints, args.networks, args.nodes,
                        args.node_ports)
    report: dict[str, Any] = {"workload": vars(workload) | {"repeat": args.repeat},
                              "environment": environment()}
    with tempfile.TemporaryDirectory(prefix="ovnk-bench-") as tmp:
        runs = [one_run(workload, Path(tmp), check=(i == 0), changes=args.changes)
                for i in range(args.repeat)]
    keys = ("floor_seconds", "ovnk_seconds", "ratio", "peak_rss_mb", "restart_seconds",
            "churn_p50_ms", "churn_p99_ms")
    m = report["median"] = {key: statistics.median(r[key] for r in runs) for key in keys}
    report["runs"] = runs
    print(f"services render: {workload.services} services x {workload.endpoints} endpoints in "
          f"{workload.networks} networks over {workload.nodes} nodes"
          f"{' (every 10th a NodePort)' if workload.node_ports else ''}, median of "
          f"{args.repeat} run(s) ({report['environment']['ovn']}, "
          f"{report['environment']['cpus']} CPUs)")
    print(f"{'floor s':>9}{'ovnk s':>9}{'ratio':>7}{'RSS MB':>8}{'restart s':>11}"
          f"{'change p50 ms':>15}{'p99 ms':>8}")
    print(f"{m['floor_seconds']:>9.2f}{m['ovnk_seconds']:>9.2f}{m['ratio']:>7.2f}"
          f"{m['peak_rss_mb']:>8.0f}{m['restart_seconds']:>11.2f}{m['churn_p50_ms']:>15.2f}"
          f"{m['churn_p99_ms']:>8.2f}")
    print("rows: ovnk's NB equals the floor's (checked); restart wrote nothing; every change "
          "was one write; no ovnk-owned row left after delete-all")
    out = write_results(args.results, "render_services", report)
    print(f"raw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
