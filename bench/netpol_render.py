"""Benchmark: render K NetworkPolicies in each of N namespaces of P pods into a real NB, vs
the floor.

The policies (``--policies`` per namespace) are made as a cluster would hold them: policy
``k`` of namespace ``n`` selects the pods labelled ``app: app<k>``, lets in TCP 8080 from
the pods labelled ``app: app<k+1>`` of its namespace and lets out to every pod of namespace
``n+1`` (two address sets, one shared by the namespace's policies).  Their rows are built
by NetworkPolicy's own builders (``ovnk_networkpolicy.rows``: the per-network rows, each
namespace's default-deny groups, each policy's group and ACLs, each selector's address
set with the selected pods' addresses).  The pods' ports joining the groups are the zone's
pod transactions, not counted here.  For each repetition, on fresh standalone NB servers:

* **floor**: the same rows, written by one ``ovn-nbctl`` transaction per namespace;
* **ovnk**: a child process writes them the way the controller converges them (one
  transaction per policy with its address sets, one per namespace, one for the network);
* **restart**: a fresh child converges the same state again; it must write nothing;
* **leak check**: every owner deleted; zero NetworkPolicy rows may remain.

Both NBs are compared row by row first (``nb_digest``).

    python bench/netpol_render.py --namespaces 100 --pods 20 --policies 10 --repeat 5

prints a table and writes ``bench/results/netpol_render-<time>.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nbctl_floor import nbctl_commands, run_nbctl
from ovnk_networkpolicy import ids
from ovnk_networkpolicy.peers import PeerSelector
from ovnk_networkpolicy.policy_spec import parse_policy
from ovnk_networkpolicy.rows import (
    NetworkScope,
    build_address_set_rows,
    build_namespace_rows,
    build_network_rows,
    build_policy_rows,
    policy_peer_selectors,
)
from render_topology import environment, in_child, same_rows
from results_file import write_results

from ovnk_core.ovn.declarative import DesiredRow, apply_many
from ovnk_core.ovn.install import schema, use_development_default
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import OvsdbServer

NETWORK = "default"
SCOPE = NetworkScope(NETWORK, (4,), acl_tiers=True)
HAIRPIN = ("169.254.0.5",)
SWITCH = "bench-switch"


@dataclass(frozen=True)
class Workload:
    namespaces: int
    pods: int  # per namespace
    policies: int  # per namespace

    def pod_ip(self, namespace: int, pod: int) -> str:
        index = namespace * self.pods + pod
        return f"10.{128 + index // 65536}.{index // 256 % 256}.{index % 256}"

    def pod_labels(self, pod: int) -> dict[str, str]:
        return {"app": f"app{pod % self.policies}"}

    def policy(self, namespace: int, k: int) -> dict[str, Any]:
        return {"metadata": {"namespace": f"ns{namespace}", "name": f"np{k}"},
                "spec": {"podSelector": {"matchLabels": {"app": f"app{k}"}},
                         "policyTypes": ["Ingress", "Egress"],
                         "ingress": [{"from": [{"podSelector": {"matchLabels": {
                             "app": f"app{(k + 1) % self.policies}"}}}],
                             "ports": [{"protocol": "TCP", "port": 8080}]}],
                         "egress": [{"to": [{"namespaceSelector": {"matchLabels": {
                             "name": f"ns{(namespace + 1) % self.namespaces}"}}}]}]}}


def selector_members(workload: Workload, selector: PeerSelector) -> list[str]:
    found = []
    for n in range(workload.namespaces):
        if selector.selects_namespace(f"ns{n}", {"name": f"ns{n}"}):
            found += [workload.pod_ip(n, p) for p in range(workload.pods)
                      if selector.selects_pod(workload.pod_labels(p))]
    return found


def owners_of_namespace(workload: Workload, n: int) -> list[dict[Owner, list[DesiredRow]]]:
    """The controller's transactions for namespace ``n``: each policy with its address sets,
    then the namespace's default-deny groups; the pods join the groups with their port."""
    steps: list[dict[Owner, list[DesiredRow]]] = []
    namespace = f"ns{n}"
    policies = [parse_policy(workload.policy(n, k)) for k in range(workload.policies)]
    for policy in policies:
        rows = build_policy_rows(SCOPE, policy)
        step = {ids.policy_owner(NETWORK, namespace, policy.name): rows}
        for selector in policy_peer_selectors(policy):
            step[ids.address_set_owner(NETWORK, selector.key)] = build_address_set_rows(
                SCOPE, selector.key, selector_members(workload, selector))
        steps.append(step)
    steps.append({ids.namespace_owner(NETWORK, namespace): build_namespace_rows(SCOPE,
                                                                                namespace)})
    return steps


def network_step() -> dict[Owner, list[DesiredRow]]:
    return {ids.network_owner(NETWORK): build_network_rows(SCOPE, HAIRPIN)}


def all_steps(workload: Workload) -> list[dict[Owner, list[DesiredRow]]]:
    return [network_step()] + [step for n in range(workload.namespaces)
                               for step in owners_of_namespace(workload, n)]


def ovnk_phase(remote: str, workload: Workload, queue: Any) -> None:
    from ovnk_core.ovn.writer import NbWriter

    start = time.perf_counter()  # building the rows is the controller's work: timed
    nb = NbWriter([remote], timeout=3600).start()
    apply_many(nb, network_step())
    for n in range(workload.namespaces):
        for step in owners_of_namespace(workload, n):
            apply_many(nb, step)
    queue.put({"seconds": time.perf_counter() - start, "transactions": nb.transactions,
               "owned_rows": nb.owned_row_count()})
    nb.stop()


def delete_phase(remote: str, workload: Workload, queue: Any) -> None:
    from ovnk_core.ovn.writer import NbWriter

    nb = NbWriter([remote], timeout=3600).start()
    start = time.perf_counter()
    for step in reversed(all_steps(workload)):
        apply_many(nb, {owner: [] for owner in step})
    seconds = time.perf_counter() - start
    nb.stop()
    with NbWriter([remote], timeout=3600).start() as fresh:  # an independent read
        left = fresh.owned_row_count()
    queue.put({"seconds": seconds, "left": left})


def floor_phase(remote: str, workload: Workload) -> float:
    batches = [nbctl_commands([row for rows in network_step().values() for row in rows])]
    for n in range(workload.namespaces):
        rows = {(row.table, row.ids.primary_id): row  # a set the policies share: once
                for step in owners_of_namespace(workload, n) for rows in step.values()
                for row in rows}
        batches.append(nbctl_commands(list(rows.values())))
    start = time.perf_counter()
    for args in batches:
        run_nbctl(remote, args)
    return time.perf_counter() - start


def one_run(workload: Workload, workdir: Path, check: bool) -> dict[str, Any]:
    ovnk_db = OvsdbServer("ovnk", workdir / f"ovnk-{time.monotonic_ns()}",
                          schema("ovn-nb")).start()
    floor_db = OvsdbServer("floor", workdir / f"floor-{time.monotonic_ns()}",
                           schema("ovn-nb")).start()
    try:
        floor = floor_phase(floor_db.remote, workload)
        ovnk = in_child(ovnk_phase, ovnk_db.remote, workload)
        restart = in_child(ovnk_phase, ovnk_db.remote, workload)
        differences = same_rows(ovnk_db.remote, floor_db.remote) if check else []
        deleted = in_child(delete_phase, ovnk_db.remote, workload)
    finally:
        ovnk_db.stop()
        floor_db.stop()
    if differences:
        raise SystemExit("ovnk and the floor wrote different rows:\n" +
                         "\n".join(differences[:20]))
    if restart["transactions"]:
        raise SystemExit(f"restart wrote {restart['transactions']} transaction(s); "
                         "expected 0")
    if deleted["left"]:
        raise SystemExit(f"leak: {deleted['left']} ovnk-owned rows left after deleting all")
    return {"floor_seconds": floor, "ovnk_seconds": ovnk["seconds"],
            "ratio": ovnk["seconds"] / floor, "restart_seconds": restart["seconds"],
            "restart_writes": restart["transactions"], "transactions": ovnk["transactions"],
            "owned_rows": ovnk["owned_rows"], "delete_seconds": deleted["seconds"]}


def main(argv: list[str] | None = None) -> int:
    use_development_default()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--namespaces", type=int, default=10)
    parser.add_argument("--pods", type=int, default=20, help="pods per namespace")
    parser.add_argument("--policies", type=int, default=10, help="policies per namespace")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    workload = Workload(args.namespaces, args.pods, args.policies)
    report: dict[str, Any] = {"workload": vars(workload) | {"repeat": args.repeat},
                              "environment": environment()}
    with tempfile.TemporaryDirectory(prefix="ovnk-bench-") as tmp:
        workdir = Path(tmp)
        if not args.no_warmup:
            one_run(Workload(2, 4, 2), workdir, True)
        runs = [one_run(workload, workdir, check=(i == 0)) for i in range(args.repeat)]
    keys = ("floor_seconds", "ovnk_seconds", "ratio", "restart_seconds", "delete_seconds")
    m = report["median"] = {key: statistics.median(r[key] for r in runs) for key in keys}
    report["runs"] = runs
    env = report["environment"]
    print(f"NetworkPolicy render: {workload.namespaces} namespaces x {workload.pods} pods x "
          f"{workload.policies} policies ({runs[0]['owned_rows']} NB rows), median of "
          f"{args.repeat} run(s) ({env['ovn']}, Python {env['python']}, {env['cpus']} CPUs, "
          "standalone NB)")
    print(f"{'floor s':>9}{'ovnk s':>9}{'ratio':>7}{'txns':>7}{'restart s':>11}{'writes':>8}"
          f"{'delete s':>10}")
    print(f"{m['floor_seconds']:>9.2f}{m['ovnk_seconds']:>9.2f}{m['ratio']:>7.2f}"
          f"{runs[0]['transactions']:>7}{m['restart_seconds']:>11.2f}{0:>8}"
          f"{m['delete_seconds']:>10.2f}")
    print("rows: ovnk's NB equals the floor's (checked); restart wrote nothing; no "
          "ovnk-owned row left after delete-all")
    out = write_results(args.results, "netpol_render", report)
    print(f"raw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
