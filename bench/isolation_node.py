"""The node side of the isolation benchmark (``bench/isolation.py``): nftables through
the node agent's ``HostIsolation`` against ``nft -f`` and libnftables floors."""

from __future__ import annotations

import secrets
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from isolation_pods import (
    NAMESPACE,
    NODE,
    OPEN_PORTS,
    OPEN_PORTS_2,
    base_pods,
    has_open_ports,
    make_pod,
    pod_ip,
)
from ovnk_isolation import host_rules
from ovnk_isolation.host_isolation import HostIsolation

from ovnk_core.config import Config
from ovnk_core.contexts import NodeContext
from ovnk_core.kube.resources import object_key
from ovnk_core.node import nft
from ovnk_core.node.netns import run_in_netns
from ovnk_core.node.nft import cgroup2_root as cgroup2_mount

TABLE = "ovn-kubernetes"


# -- node side -------------------------------------------------------------------------------
class StaticPods:
    """The node agent's pod informer, filled by the benchmark (no API server)."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.items = {object_key(pod): pod for pod in pods}

    def add_handler(self, _handler: Callable[..., None]) -> None:
        pass

    def peek(self, key: str) -> dict[str, Any] | None:
        return self.items.get(key)

    def peek_all(self) -> list[dict[str, Any]]:
        return list(self.items.values())


class StaticInformers:
    def __init__(self, pods: StaticPods) -> None:
        self.pods = pods

    def get(self, _resource: Any, **_selectors: Any) -> StaticPods:
        return self.pods


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def event(self, _obj: Any, _kind: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


def agent(config: Config, pods: StaticPods, netns: str, kubelet_path: str | None
          ) -> HostIsolation:
    """The isolation controller as the node agent builds it (``HostIsolationHooks``);
    ``kubelet_path`` ``None``: as on a node without cgroup v2 (no kubelet rule)."""
    context = NodeContext(config, None, StaticInformers(pods), Recorder(),  # type: ignore
                          NODE, netns, nft_table=lambda _feature: TABLE)
    if kubelet_path is None:
        return HostIsolation(context, kubelet_cgroup_path="", find_cgroup2=lambda: None,
                             kubelet_check_period=0)
    return HostIsolation(context, kubelet_cgroup_path=kubelet_path, kubelet_check_period=0)


class WriteTimer:
    """Times ``nft.apply_table`` calls (the controller's own module attribute is wrapped):
    the full sync's nftables write apart from building the elements."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.original = nft.apply_table

    def __enter__(self) -> WriteTimer:
        def timed(*args: Any, **kwargs: Any) -> None:
            start = time.perf_counter()
            try:
                self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
        nft.apply_table = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *_exc: object) -> None:
        nft.apply_table = self.original  # type: ignore[assignment]


def make_netns() -> str:
    name = f"ovnkb-{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True,
                   capture_output=True)
    return name


def remove_netns(name: str) -> None:
    subprocess.run(["ip", "netns", "del", name], check=True, capture_output=True)


def nft_process(netns: str, script: str, workdir: Path) -> float:
    """One ``nft -f`` process (started from a thread inside ``netns``): its wall time."""
    path = workdir / f"nft-{time.monotonic_ns()}.nft"
    path.write_text(script)

    def run() -> float:
        start = time.perf_counter()
        subprocess.run(["nft", "-f", str(path)], check=True, capture_output=True)
        return time.perf_counter() - start
    try:
        return run_in_netns(netns, run)
    finally:
        path.unlink()


def nft_library(netns: str, script: str) -> float:
    """One ``cmd`` of a fresh libnftables context in ``netns`` (what ``nft -f`` does inside,
    without its process)."""
    import nftables

    def run() -> float:
        start = time.perf_counter()
        context = nftables.Nftables()
        rc, _out, err = context.cmd(script)
        del context  # freeing it closes its netlink socket, inside the time
        seconds = time.perf_counter() - start
        if rc != 0:
            raise RuntimeError(f"nft refused the floor script: {err}")
        return seconds
    return run_in_netns(netns, run)


def elements_of(netns: str, table: str) -> dict[str, set[str]]:
    return {name: set(nft.set_elements(host_rules.FAMILY, table, name, netns))
            for name in host_rules.SET_NAMES}


def full_sync_run(config: Config, pods: list[dict[str, Any]], netns: str,
                  kubelet_path: str | None, workdir: Path) -> dict[str, Any]:
    """One start-up sync of ovnk into an empty namespace, and the two floors."""
    nft.delete_table(host_rules.FAMILY, TABLE, netns)
    controller = agent(config, StaticPods(pods), netns, kubelet_path)
    with WriteTimer() as write:
        start = time.perf_counter()
        controller.initial_sync()
        ovnk = time.perf_counter() - start
    if not controller._synced:
        raise SystemExit("the full sync did not write the table (see the log)")
    members = {name: controller.refs.members(name) for name in host_rules.SET_NAMES}
    script = nft.build_table_script(host_rules.build_table(
        TABLE, controller.kubelet, controller.ip_versions, members))
    ours = (nft.list_table_text(host_rules.FAMILY, TABLE, netns, terse=False),
            elements_of(netns, TABLE))
    nft.delete_table(host_rules.FAMILY, TABLE, netns)
    process = nft_process(netns, script, workdir)
    floor = (nft.list_table_text(host_rules.FAMILY, TABLE, netns, terse=False),
             elements_of(netns, TABLE))
    if floor != ours:
        raise SystemExit("the nft -f floor's table differs from ovnk's")
    nft.delete_table(host_rules.FAMILY, TABLE, netns)
    library = nft_library(netns, script)
    # leave ovnk's own table for the updates that follow
    nft.delete_table(host_rules.FAMILY, TABLE, netns)
    controller.initial_sync()
    elements = sum(len(m) for m in members.values())
    return {"ovnk_seconds": ovnk, "ovnk_write_seconds": write.seconds,
            "nft_f_seconds": process, "libnftables_seconds": library,
            "ratio_nft_f": ovnk / process, "ratio_libnftables": ovnk / library,
            "ratio_write_nft_f": write.seconds / process,
            "elements": elements, "script_bytes": len(script),
            "kubelet_rule": controller.kubelet is not None}


def update_ops(count: int, pods: int) -> list[tuple[str, int]]:
    """``count`` single-pod changes: add a new pod, change a pod's open ports, delete a
    pod added before, in turn."""
    ops: list[tuple[str, int]] = []
    added = 0
    for i in range(count):
        kind = ("add", "update", "delete")[i % 3]
        if kind == "add":
            ops.append(("add", added))
            added += 1
        elif kind == "update":
            ops.append(("update", (i * 7) % pods))
        else:
            ops.append(("delete", added - 1))
    return ops


FLOORS = ("nft_f", "libnftables_fresh", "libnftables_kept")
FLOOR_TABLES = {floor: f"ovnkb-{floor.replace('_', '-')}" for floor in FLOORS}


def floor_script(changes: Mapping[str, Any], table: str) -> str:
    """The element commands of one change on a floor's table (deletes, then adds: what
    ``nft.update_elements`` sends)."""
    lines = [f"delete element {host_rules.FAMILY} {table} {name} "
             f"{{ {', '.join(sorted(change.delete))} }}\n"
             for name, change in changes.items() if change.delete]
    lines += [f"add element {host_rules.FAMILY} {table} {name} "
              f"{{ {', '.join(sorted(change.add))} }}\n"
              for name, change in changes.items() if change.add]
    return "".join(lines)


def updates_run(config: Config, pods: list[dict[str, Any]], netns: str,
                kubelet_path: str | None, count: int, workdir: Path) -> dict[str, Any]:
    """``count`` pod changes through the controller's reconcile, each followed by the same
    element commands on each floor's own copy of the table: one ``nft -f`` process, one
    fresh libnftables context, one libnftables context kept open."""
    cache = StaticPods(pods)
    controller = agent(config, cache, netns, kubelet_path)
    controller.initial_sync()  # the table is already as wanted: nothing written
    members = {name: controller.refs.members(name) for name in host_rules.SET_NAMES}
    for table in FLOOR_TABLES.values():
        nft.apply_table(host_rules.build_table(table, controller.kubelet,
                                               controller.ip_versions, members), netns)
    open_now = {i: has_open_ports(i) for i in range(len(pods))}
    timings: dict[str, list[tuple[str, float, float, float, float]]] = {}
    path = workdir / "update.nft"

    def run_all() -> None:  # in the namespace: nft -f and the contexts start there
        import nftables

        kept = nftables.Nftables()

        def library(context: Any, script: str) -> None:
            rc, _out, err = context.cmd(script)
            if rc != 0:
                raise RuntimeError(f"nft refused the floor's update: {err}")


        for done, (kind, index) in enumerate(update_ops(count, len(pods))):
            if kind == "add":
                pod = make_pod(f"new-{index}", pod_ip(index, 245),
                               OPEN_PORTS_2 if index % 2 else None)
                key = object_key(pod)
                cache.items[key] = pod
            elif kind == "delete":
                key = f"{NAMESPACE}/new-{index}"
                del cache.items[key]
            else:
                key = f"{NAMESPACE}/pod-{index}"
                open_now[index] = not open_now[index]
                cache.items[key] = make_pod(f"pod-{index}", pod_ip(index),
                                            OPEN_PORTS if open_now[index] else None)
            desired = controller.desired_of(key)
            assert desired is not None
            changes = controller.refs.changes(key, desired.elements)
            scripts = {floor: floor_script(changes, table)
                       for floor, table in FLOOR_TABLES.items()}
            path.write_text(scripts["nft_f"])

            def ovnk(key: str = key) -> None:
                controller.reconcile(key)

            def process() -> None:
                subprocess.run(["nft", "-f", str(path)], check=True, capture_output=True)

            def fresh(script: str = scripts["libnftables_fresh"]) -> None:
                context = nftables.Nftables()  # what nft -f does, without its process;
                library(context, script)
                del context  # freeing it closes its netlink socket: inside the time

            def kept_one(script: str = scripts["libnftables_kept"]) -> None:
                library(kept, script)

            # the four in turn, starting with another one each time (no order bias)
            steps = [("ovnk", ovnk), ("nft_f", process), ("libnftables_fresh", fresh),
                     ("libnftables_kept", kept_one)]
            shift = done % len(steps)
            seconds: dict[str, float] = {}
            for name, step in steps[shift:] + steps[:shift]:
                start = time.perf_counter()
                step()
                seconds[name] = time.perf_counter() - start
            timings.setdefault(kind, []).append(
                (key, seconds["ovnk"], seconds["nft_f"], seconds["libnftables_fresh"],
                 seconds["libnftables_kept"]))

    run_in_netns(netns, run_all)
    ours = elements_of(netns, TABLE)
    if any(ours != elements_of(netns, table) for table in FLOOR_TABLES.values()):
        raise SystemExit("after the updates ovnk's sets differ from the floors'")
    wanted = {name: controller.refs.members(name) for name in host_rules.SET_NAMES}
    if ours != wanted:
        raise SystemExit("after the updates the sets are not what the pods want")
    # leak check: every pod deleted through the same path leaves every set empty
    for key in list(cache.items):
        del cache.items[key]
        controller.reconcile(key)
    left = sum(len(e) for e in elements_of(netns, TABLE).values())
    for table in (TABLE, *FLOOR_TABLES.values()):
        nft.delete_table(host_rules.FAMILY, table, netns)
    if left or nft.list_tables(netns):
        raise SystemExit(f"leak: {left} nft element(s) left after deleting every pod")
    every = [t for rows in timings.values() for t in rows]
    return {"by_kind": {kind: latency_summary(rows) for kind, rows in timings.items()},
            "all": latency_summary(every), "updates": len(every)}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def latency_summary(rows: list[tuple[str, float, float, float, float]]) -> dict[str, Any]:
    result: dict[str, Any] = {"count": len(rows)}
    for column, name in enumerate(("ovnk", *FLOORS), start=1):
        values = [float(row[column]) * 1000 for row in rows]
        result[f"{name}_ms"] = {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99)}
    return result


def node_side(config: Config, pods: int, updates: int, repeat: int, warmup: bool,
              workdir: Path, kubelet_rule: bool = True) -> dict[str, Any]:
    netns = make_netns()
    mount = cgroup2_mount() if kubelet_rule else None
    kubelet_path: str | None = None  # no cgroup v2: no kubelet rule
    cgroup_dir: Path | None = None
    if mount is not None:  # a kubelet cgroup for the kubelet rule, as on a real node
        kubelet_path = f"ovnk-bench-{secrets.token_hex(4)}/kubelet.slice/kubelet.service"
        cgroup_dir = mount / kubelet_path
        cgroup_dir.mkdir(parents=True)
    try:
        the_pods = base_pods(pods)
        if warmup:
            full_sync_run(config, base_pods(10), netns, kubelet_path, workdir)
            updates_run(config, base_pods(10), netns, kubelet_path, 6, workdir)
        syncs = [full_sync_run(config, the_pods, netns, kubelet_path, workdir)
                 for _ in range(repeat)]
        update_runs = [updates_run(config, the_pods, netns, kubelet_path, updates, workdir)
                       for _ in range(repeat)]
    finally:
        remove_netns(netns)
        if cgroup_dir is not None:
            for path in (cgroup_dir, cgroup_dir.parent, cgroup_dir.parent.parent):
                path.rmdir()
    keys = ("ovnk_seconds", "ovnk_write_seconds", "nft_f_seconds", "libnftables_seconds",
            "ratio_nft_f", "ratio_libnftables", "ratio_write_nft_f")
    sync = {key: statistics.median(run[key] for run in syncs) for key in keys}
    sync |= {"elements": syncs[0]["elements"], "script_bytes": syncs[0]["script_bytes"],
             "kubelet_rule": syncs[0]["kubelet_rule"]}
    return {"full_sync": sync, "full_sync_runs": syncs, "updates": median_updates(update_runs),
            "update_runs": update_runs}


def median_updates(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per percentile, the median over runs; ratios of those medians."""
    def merged(pick: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("ovnk", *FLOORS):
            out[f"{name}_ms"] = {p: statistics.median(pick(r)[f"{name}_ms"][p] for r in runs)
                                 for p in ("p50", "p99")}
        for p in ("p50", "p99"):
            for floor in FLOORS:
                out[f"ratio_{floor}_{p}"] = out["ovnk_ms"][p] / out[f"{floor}_ms"][p]
        out["count"] = pick(runs[0])["count"]
        return out
    result = {"all": merged(lambda r: r["all"])}
    for kind in runs[0]["by_kind"]:
        result[kind] = merged(lambda r, kind=kind: r["by_kind"][kind])  # type: ignore
    return result
