"""Benchmark: pod start latency and throughput as the number of networks grows.

For each U (primary Layer3 UDNs) and N (nodes), on a fresh ``ovnk local`` cluster without a
dataplane (API server, scheduler, kubelet stand-in, cluster manager and zone controller as
their own processes, NB and SB with northd):

* setup: U labelled namespaces, each with a primary Layer3 UDN (the same CIDR: isolated
  networks may overlap), until every NAD has its network ID;
* for each offered rate R: P pods are created round-robin over the namespaces at a steady R
  pods/s (the scheduler places them); per pod, from the create request's response:
  **annotation** (its ``k8s.ovn.org/pod-networks`` seen by a separate watch in this process)
  and **NB port** (its primary-network port seen by a separate OVSDB monitor);
* **floor** (what any controller must spend, same run, same server): an *echo* handler in
  this process watches a namespace of host-network pods (which ovnk leaves alone) and
  patches each new pod's annotation at once — one API write and two watch deliveries; its
  create→annotation latency is measured the same way;
* percentiles p50/p95/p99/max, sustained throughput (pods annotated per second over the
  run) and CPU-seconds per pod of the cluster manager, the zone controller and the API
  server (from ``/proc/<pid>/stat``).

    python bench/pod_latency.py --udns 10,100 --nodes 3 --pods 200 --rate 10,50

prints a table and writes ``bench/results/pod_latency-<time>.json``.  Targets (issue 20, at
U = 1000, 20 nodes, R = 50): annotation and NB-port p99 ≤ 3x the floor's p99, ≥ 100 pods/s
when offered, CPU per pod at U = 1000 within 1.25x of U = 10.
"""

from __future__ import annotations

import _thread
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nb_monitor import monitor_lines
from ovnk_local.cluster import LocalCluster
from results_file import machine_facts, write_results
from udn_workload import create_primary_udns

from ovnk_core.kube.client import JSON, KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.resources import NAMESPACES, NODES, PODS
from ovnk_core.ovn.install import command, use_development_default
from ovnk_core.testing.waiting import wait_until

POD_NETWORKS = "k8s.ovn.org/pod-networks"
NODE_SUBNETS = "k8s.ovn.org/node-subnets"
ECHO_NS = "bench-echo"
ECHO_ANNOTATION = "bench.ovnk/echo"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def available_memory() -> int:
    """Bytes the kernel says can be allocated without swapping (``MemAvailable``)."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 0


class MemoryGuard:
    """Stops the run (KeyboardInterrupt in the main thread, so the cluster is taken down)
    when available memory falls below ``minimum`` bytes.  At 1000 networks x 20 nodes
    ovn-northd 23.03 recomputes everything on every change and grows past 16 GB: without
    a guard the kernel's OOM killer picks among the machine's processes."""

    def __init__(self, minimum: int) -> None:
        self.minimum = minimum
        self.tripped = ""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._previous_handler = signal.getsignal(signal.SIGINT)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> MemoryGuard:
        left = available_memory()
        if left < self.minimum:  # too little already: nothing is started
            self._trip(left)
            raise KeyboardInterrupt
        # the interrupt runs the SIGINT handler: make it the one that raises
        # KeyboardInterrupt while guarded (something may have installed another)
        self._previous_handler = signal.signal(signal.SIGINT, signal.default_int_handler)
        self._thread.start()
        return self

    def _trip(self, left: int) -> None:
        self.tripped = (f"stopped: {left / 2**30:.1f} GiB of memory left (minimum "
                        f"{self.minimum / 2**30:.1f} GiB; --min-free-memory)")

    def __exit__(self, *exc: object) -> None:
        with self._lock:  # no interrupt once the guarded block is left
            self._stop.set()
        signal.signal(signal.SIGINT, self._previous_handler)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            left = available_memory()
            if left >= self.minimum:
                continue
            with self._lock:
                if self._stop.is_set():
                    return
                self._trip(left)
                _thread.interrupt_main()
                return


def cpu_times(pids: dict[str, int]) -> dict[str, float]:
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def cpu_used(pids: dict[str, int], before: dict[str, float], per: float) -> dict[str, float]:
    """CPU-seconds each process used since ``before`` (``cpu_times``), divided by ``per``."""
    return {name: (cpu_seconds(pid) - before[name]) / per for name, pid in pids.items()}


def percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"p50": float("nan"), "p95": float("nan"), "p99": float("nan"),
                "max": float("nan")}
    ordered = sorted(values)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {"p50": statistics.median(ordered), "p95": at(0.95), "p99": at(0.99),
            "max": ordered[-1]}


@dataclass
class Seen:
    """First time each pod key was seen (annotation / NB port / echo), from watchers."""

    created: dict[str, float] = field(default_factory=dict)
    annotated: dict[str, float] = field(default_factory=dict)
    ported: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def mark(self, table: dict[str, float], key: str) -> None:
        now = time.monotonic()
        with self.lock:
            table.setdefault(key, now)


def follow_pods(client: KubeClient, stop: threading.Event, namespace: str | None,
                on_event: Callable[[str, JSON], None]) -> None:
    """Call ``on_event(type, pod)`` for every pod event until ``stop`` (watch resumed when
    the server ends it; the cluster going away at the end is not an error)."""
    try:
        rv = client.list(PODS, namespace=namespace)["metadata"]["resourceVersion"]
        while not stop.is_set():
            stream = client.watch(PODS, namespace=namespace, resource_version=rv,
                                  timeout_seconds=5, read_timeout=30)
            for event in stream:
                if not isinstance(event, dict):
                    continue  # an object that cannot be decoded: not one of ours
                obj = event.get("object") or {}
                rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                on_event(str(event.get("type")), obj)
                if stop.is_set():
                    stream.close()
                    break
    except Exception:
        if not stop.is_set():
            raise


def watch_annotations(client: KubeClient, seen: Seen, key: str, stop: threading.Event,
                      namespace: str | None = None) -> None:
    """Mark pods whose ``key`` annotation appears."""
    def on_event(_type: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        if key in (meta.get("annotations") or {}):
            seen.mark(seen.annotated, f"{meta.get('namespace')}/{meta.get('name')}")
    follow_pods(client, stop, namespace, on_event)


OWNER = re.compile(r'""k8s\.ovn\.org/owner"",""pod:([^"]+)""')
NETWORK = re.compile(r'""k8s\.ovn\.org/network"",""([^"]+)""')


def watch_ports(nb_socket: Path, seen: Seen, stop: threading.Event) -> None:
    """Mark pods whose primary-UDN port appears in NB (``nb_monitor``)."""
    for line in monitor_lines(nb_socket, "Logical_Switch_Port", "external_ids", stop):
        owner, network = OWNER.search(line), NETWORK.search(line)
        # the pod's port on its primary UDN (owner scope pod:<ns>/<name>)
        if owner and network and network.group(1) != "default" and ",insert," in line:
            seen.mark(seen.ported, owner.group(1))


def echo(client: KubeClient, seen: Seen, stop: threading.Event) -> None:
    """The floor: patch each new pod of the echo namespace at once, from a watch."""
    def on_event(kind: str, obj: JSON) -> None:
        meta = obj.get("metadata") or {}
        if kind == "ADDED" and ECHO_ANNOTATION not in (meta.get("annotations") or {}):
            client.patch(PODS, meta["name"], {"metadata": {"annotations": {
                ECHO_ANNOTATION: "1"}}}, ECHO_NS)
    follow_pods(client, stop, ECHO_NS, on_event)


def pod(name: str, host_network: bool = False) -> JSON:
    spec: JSON = {"containers": [{"name": "c", "image": "agnhost"}]}
    if host_network:
        spec["hostNetwork"] = True
    return {"metadata": {"name": name}, "spec": spec}


def create_at_rate(client: KubeClient, seen: Seen, names: list[tuple[str, str]], rate: float,
                   host_network: bool = False) -> float:
    """Create the pods at a steady ``rate``; returns the offered duration."""
    start = time.monotonic()
    for index, (namespace, name) in enumerate(names):
        due = start + index / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        client.create(PODS, pod(name, host_network), namespace)
        seen.mark(seen.created, f"{namespace}/{name}")
    return time.monotonic() - start


def delete_round(client: KubeClient, names: list[tuple[str, str]], timeout: float) -> None:
    """Delete a measured round's pods and wait until they are gone: their addresses go back
    to the nodes' subnets (a /24 per node holds ~250 pods), so rounds can follow each
    other on a kept cluster."""
    for namespace, name in names:
        client.delete_if_exists(PODS, name, namespace)
    wanted = {f"{namespace}/{name}" for namespace, name in names}

    def gone() -> bool:
        left = {f"{p['metadata']['namespace']}/{p['metadata']['name']}"
                for p in client.list(PODS)["items"]}
        return not wanted & left

    wait_until(gone, timeout=timeout, interval=1.0, what="the round's pods deleted")


def latencies(seen: Seen, table: dict[str, float], keys: list[str]) -> list[float]:
    return [(table[k] - seen.created[k]) * 1000 for k in keys if k in table and k in seen.created]


def zone_latencies(seen: Seen, keys: list[str]) -> list[float]:
    """Annotation seen → port seen, per pod: the zone controller's part (with the cluster
    manager's left out); never below 0 (the two observers' clocks are one)."""
    return [max(0.0, (seen.ported[k] - seen.annotated[k]) * 1000) for k in keys
            if k in seen.ported and k in seen.annotated]


def switch_count(nb_socket: Path) -> int:
    query = json.dumps(["OVN_Northbound", {"op": "select", "table": "Logical_Switch",
                                            "where": [], "columns": ["_uuid"]}])
    out = subprocess.run(command("ovsdb-client", "query", f"unix:{nb_socket}", query),
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return len(json.loads(out)[0]["rows"])


def wait_for_rendering(nb_socket: Path, minimum: int, timeout: float) -> None:
    """Until the zone has rendered every network on every node: at least ``minimum``
    logical switches, and their number unchanged for 3 s (the measurement is of pods
    starting, not of the networks' initial rendering)."""
    deadline = time.monotonic() + timeout
    last, stable_since = -1, time.monotonic()
    while time.monotonic() < deadline:
        count = switch_count(nb_socket)
        if count != last:
            last, stable_since = count, time.monotonic()
        elif count >= minimum and time.monotonic() - stable_since >= 3:
            return
        time.sleep(0.5)
    raise AssertionError(f"networks not rendered within {timeout:.0f}s ({last} switches, "
                         f"expected at least {minimum})")


# measured for CPU per pod; the Python ones are also sampled with --profile
PYTHON_COMPONENTS = ("cluster-manager", "controller", "apiserver", "scheduler", "kubelet")
OVN_COMPONENTS = ("nb-ovsdb", "northd", "sb-ovsdb")


def wait_for_quiet(pids: dict[str, int], timeout: float, window: float = 2.0,
                   busy: float = 0.1) -> bool:
    """Until each of ``pids`` used less than ``busy`` of a CPU over ``window`` seconds:
    ovn-northd and the Southbound server digest a large setup for a while after NB is
    complete, and CPUs they take are not ovnk's to measure.  False: still busy after
    ``timeout`` (the round is measured anyway and says so: at 1000 networks x 20 nodes
    ovn-northd 23.03 recomputes everything on each change and grows by gigabytes while
    it does, so waiting long is no option on a small machine)."""
    deadline = time.monotonic() + timeout
    while True:
        before = cpu_times(pids)
        started = time.monotonic()
        time.sleep(window)
        used = cpu_used(pids, before, time.monotonic() - started)
        if all(share < busy for share in used.values()):
            return True
        if time.monotonic() >= deadline:
            print(f"OVN still busy after {timeout:.0f}s: " + ", ".join(
                f"{name} {share:.0%}" for name, share in used.items() if share >= busy),
                file=sys.stderr)
            return False


def start_profiles(pids: dict[str, int], out: Path, tag: str) -> list[subprocess.Popen[bytes]]:
    """Sample each component with ``py-spy record`` (collapsed stacks, every thread, idle
    samples left out) until stopped: where a component's CPU goes while pods start."""
    out.mkdir(parents=True, exist_ok=True)
    return [subprocess.Popen(
        ["py-spy", "record", "--pid", str(pid), "--format", "raw", "--rate", "200", "--nonblocking",
         "--output", str(out / f"{tag}-{name}.txt")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for name, pid in pids.items()]


def stop_profiles(recorders: list[subprocess.Popen[bytes]]) -> None:
    for recorder in recorders:
        recorder.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
    for recorder in recorders:
        recorder.wait(timeout=60)


def set_up(cluster: LocalCluster, udns: int, nodes: int) -> list[str]:
    """A fresh cluster with U primary UDNs over N nodes, rendered everywhere; the UDN
    namespaces."""
    cluster.up(nodes=nodes, timeout=120, dataplane=False)
    admin = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
    admin.create(NAMESPACES, {"metadata": {"name": ECHO_NS}})
    namespaces = create_primary_udns(admin, udns)
    wait_until(lambda: all(
        len(json.loads((n["metadata"].get("annotations") or {}).get(NODE_SUBNETS, "{}"))) > udns
        for n in admin.list(NODES)["items"]),
               timeout=60 + udns, interval=0.5, what="every node has a subnet in every network")
    wait_for_rendering(cluster.nb_socket, minimum=(udns + 1) * nodes,
                       timeout=120 + udns * nodes / 20)
    return namespaces


def run_size(udns: int, nodes: int, pods: int, rates: list[float], workdir: Path,
             profile: Path | None = None) -> list[JSON]:
    cluster = LocalCluster(workdir / ".ovnk")
    try:
        namespaces = set_up(cluster, udns, nodes)
        return measure(cluster, namespaces, nodes, pods, rates, profile)
    finally:
        cluster.down()


def measure(cluster: LocalCluster, namespaces: list[str], nodes: int, pods: int,
            rates: list[float], profile: Path | None = None, prefix: str = "") -> list[JSON]:
    """One round of P pods per offered rate on a cluster ``set_up`` made (pod names start
    with ``prefix``: a kept cluster is measured again under new names)."""
    udns = len(namespaces)
    admin = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
    state = cluster.state()
    pids = {name: state.processes[name].pid
            for name in PYTHON_COMPONENTS + OVN_COMPONENTS if name in state.processes}
    rows: list[JSON] = []
    for round_, rate in enumerate(rates):
        quiet = wait_for_quiet({name: pid for name, pid in pids.items()
                                if name in OVN_COMPONENTS}, timeout=120)
        seen, stop = Seen(), threading.Event()
        watchers = [
            threading.Thread(target=watch_annotations, args=(
                KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig))), seen,
                POD_NETWORKS, stop), daemon=True),
            threading.Thread(target=watch_annotations, args=(
                KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig))), seen,
                ECHO_ANNOTATION, stop, ECHO_NS), daemon=True),
            threading.Thread(target=watch_ports, args=(cluster.nb_socket, seen, stop),
                             daemon=True),
            threading.Thread(target=echo, args=(
                KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig))), seen,
                stop), daemon=True)]
        for thread in watchers:
            thread.start()
        time.sleep(0.5)  # watches established
        tag = f"{prefix}r{int(rate)}-{round_}"  # a rate may be given twice (a warm round)
        echo_names = [(ECHO_NS, f"{tag}-e{i}") for i in range(pods)]
        create_at_rate(admin, seen, echo_names, rate, host_network=True)
        echo_keys = [f"{ns}/{name}" for ns, name in echo_names]
        wait_until(lambda keys=echo_keys, seen=seen: all(  # type: ignore[misc]
            k in seen.annotated for k in keys), timeout=60, what="echo annotations")
        recorders = start_profiles({name: pid for name, pid in pids.items()
                                    if name in PYTHON_COMPONENTS},
                                   profile, f"u{udns}-n{nodes}-{tag}") \
            if profile else []
        before = cpu_times(pids)
        names = [(namespaces[i % udns], f"{tag}-p{i}") for i in range(pods)]
        offered = create_at_rate(admin, seen, names, rate)
        keys = [f"{ns}/{name}" for ns, name in names]
        wait_until(lambda keys=keys, seen=seen: all(  # type: ignore[misc]
            k in seen.annotated and k in seen.ported for k in keys),
            timeout=120 + pods, interval=0.2, what="pods annotated and ported")
        cpu = cpu_used(pids, before, pods)
        stop_profiles(recorders)
        stop.set()
        for thread in watchers:
            thread.join(timeout=10)
        delete_round(admin, names + echo_names, timeout=120 + pods)
        annotated = latencies(seen, seen.annotated, keys)
        ported = latencies(seen, seen.ported, keys)
        floor = latencies(seen, seen.annotated, echo_keys)
        first = min(seen.created[k] for k in keys)
        last = max(seen.annotated[k] for k in keys)
        rows.append({
            "udns": udns, "nodes": nodes, "pods": pods, "rate": rate,
            "offered_seconds": offered,
            "annotation_ms": percentiles(annotated), "nb_port_ms": percentiles(ported),
            "annotation_to_port_ms": percentiles(zone_latencies(seen, keys)),
            "echo_ms": percentiles(floor),
            "throughput_pods_per_s": pods / max(last - first, 1e-9),
            "cpu_seconds_per_pod": cpu, "ovn_quiet_before": quiet})
    return rows


def table(rows: list[JSON]) -> str:
    lines = ["| UDNs | nodes | rate | annotation p50/p99 ms | NB port p99 ms "
             "| annotation→port p50/p99 ms | echo p50/p99 ms "
             "| p99 / echo p99 | pods/s | CPU ms/pod (cm, zone, api) "
             "| stand-ins ms/pod (sched, kubelet) | OVN ms/pod (nb, northd, sb) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in rows:
        a, p, e, c = row["annotation_ms"], row["nb_port_ms"], row["echo_ms"], \
            row["cpu_seconds_per_pod"]
        z = row["annotation_to_port_ms"]
        ratio = a["p99"] / e["p99"] if e["p99"] else float("nan")
        lines.append(
            f"| {row['udns']} | {row['nodes']} | {row['rate']:g} | {a['p50']:.0f} / "
            f"{a['p99']:.0f} | {p['p99']:.0f} | {z['p50']:.0f} / {z['p99']:.0f} | "
            f"{e['p50']:.0f} / {e['p99']:.0f} | "
            f"{ratio:.2f}x | {row['throughput_pods_per_s']:.1f} | "
            f"{c['cluster-manager'] * 1000:.1f}, {c['controller'] * 1000:.1f}, "
            f"{c['apiserver'] * 1000:.1f} | {c.get('scheduler', 0) * 1000:.1f}, "
            f"{c.get('kubelet', 0) * 1000:.1f} | {c.get('nb-ovsdb', 0) * 1000:.1f}, "
            f"{c.get('northd', 0) * 1000:.1f}, {c.get('sb-ovsdb', 0) * 1000:.1f} |")
    return "\n".join(lines)


def measure_kept(directory: Path, udns: int, nodes: int, pods: int, rates: list[float],
                 profile: Path | None) -> list[JSON]:
    """``--cluster-dir``: measure the cluster kept in ``directory`` (set it up first when
    none is running there); it stays up, unless the run is stopped."""
    cluster = LocalCluster(directory / ".ovnk")
    try:
        if cluster.state_file.exists() and all(s.ready for s in cluster.status()):
            namespaces = [f"u{i}" for i in range(udns)]  # as create_primary_udns names them
        else:
            namespaces = set_up(cluster, udns, nodes)
        return measure(cluster, namespaces, nodes, pods, rates, profile,
                       prefix=f"t{int(time.time())}-")
    except KeyboardInterrupt:
        cluster.down()
        raise


def main(argv: list[str] | None = None) -> int:
    use_development_default()  # OVN 26.03 unless OVNK_OVN names another
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--udns", default="10,100", help="comma-separated U values")
    parser.add_argument("--nodes", default="3", help="comma-separated N values")
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--rate", default="10,50", help="comma-separated offered pods/s")
    parser.add_argument("--results", default=str(Path(__file__).parent / "results"))
    parser.add_argument("--profile", metavar="DIR",
                        help="sample the components with py-spy while pods start (collapsed "
                             "stacks per component and size in DIR; py-spy must be on PATH)")
    parser.add_argument("--cluster-dir", metavar="DIR",
                        help="one U and N only: set the cluster up in DIR and leave it up, or "
                             "measure the one already up there again (new pod names): sizes "
                             "that take minutes to set up are measured again in seconds; "
                             "'ovnk local down --dir DIR/.ovnk' ends it")
    parser.add_argument("--min-free-memory", type=float, default=2.0, metavar="GIB",
                        help="stop the run (and take the cluster down) when less memory than "
                             "this is available")
    args = parser.parse_args(argv)
    if args.profile and shutil.which("py-spy") is None:
        parser.error("--profile needs py-spy on PATH (pip install py-spy)")
    rates = [float(r) for r in args.rate.split(",")]
    profile = Path(args.profile) if args.profile else None
    if args.cluster_dir and ("," in args.udns or "," in args.nodes):
        parser.error("--cluster-dir takes one --udns and one --nodes")
    rows: list[JSON] = []
    guard = MemoryGuard(int(args.min_free_memory * 2**30))
    try:
        with guard:
            if args.cluster_dir:
                rows = measure_kept(Path(args.cluster_dir), int(args.udns), int(args.nodes),
                                    args.pods, rates, profile)
            else:
                for nodes in (int(n) for n in args.nodes.split(",")):
                    for udns in (int(u) for u in args.udns.split(",")):
                        with tempfile.TemporaryDirectory(prefix="ovnk-podlat-") as workdir:
                            rows += run_size(udns, nodes, args.pods, rates, Path(workdir),
                                             profile)
    except KeyboardInterrupt:
        if not guard.tripped:
            raise
    if guard.tripped:  # also when the interrupt came while something swallowed it
        print(guard.tripped, file=sys.stderr)
        return 3
    print(table(rows))
    out = write_results(Path(args.results), "pod_latency", {
        "machine": machine_facts(),
        "rows": rows})
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
