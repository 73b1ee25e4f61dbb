"""Benchmark: a UDN's first pod on a node (dynamic allocation), against a pod where it is on.

On a fresh ``ovnk local`` cluster without a dataplane (every component its own process)
started with ``--enable-dynamic-udn-allocation``, U primary Layer3 UDNs over N nodes, each
with one pod on the first node (so it is rendered there only):

* **activation**: one at a time, a pod of UDN u is created on a node where u is not active:
  the cluster manager gives the node a subnet of u, the zone renders u's rows for the node,
  the pod gets its addresses and its port; measured from the create request to its port in
  NB (an ``ovsdb-client monitor`` in its own process);
* **floor** (same run, same cluster): the same for a pod of u on the first node, where u is
  already active: what a pod costs without activating anything;
* after the last activation, an ovn-trace from the UDN's first pod to the new one must be
  delivered (the rendered node is usable, not just present);
* **deactivation**: every activation pod is deleted; after the grace period no UDN may
  have a row of any node but the first (checked, the run fails otherwise).

    python bench/activation_latency.py --udns 20 --nodes 5 --samples 40 --grace 5s

prints a table and writes ``bench/results/activation_latency-<time>.json``.  Target
(issue 19): activation p99 < 1 s.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_stats import percentile
from nb_monitor import monitor_lines
from ovnk_local.cluster import LocalCluster
from ovnk_local.settings import ComponentSettings
from results_file import machine_facts, write_results
from udn_workload import create_primary_udns

from ovnk_core.config.values import parse_duration
from ovnk_core.kube.client import JSON, KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.resources import PODS
from ovnk_core.ovn.install import command, use_development_default
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb

RESULTS = Path(__file__).resolve().parent / "results"
OWNER = re.compile(r'""k8s\.ovn\.org/owner"",""pod:([^"]+)""')
POD_NETWORKS = "k8s.ovn.org/pod-networks"


class Ports:
    """When each pod's port first showed in NB."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self.cond = threading.Condition()

    def follow(self, nb_socket: Path, stop: threading.Event) -> None:
        for line in monitor_lines(nb_socket, "Logical_Switch_Port", "external_ids", stop):
            owner = OWNER.search(line)
            if owner and ",insert," in line:
                with self.cond:
                    self.seen.setdefault(owner.group(1), time.perf_counter())
                    self.cond.notify_all()

    def wait(self, key: str, timeout: float = 60.0) -> float:
        with self.cond:
            if not self.cond.wait_for(lambda: key in self.seen, timeout):
                raise RuntimeError(f"no port for pod {key} within {timeout}s")
            return self.seen[key]


def pod(namespace: str, name: str, node: str) -> JSON:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}}


def timed_pod(admin: KubeClient, ports: Ports, namespace: str, name: str, node: str) -> float:
    start = time.perf_counter()
    admin.create(PODS, pod(namespace, name, node))
    return ports.wait(f"{namespace}/{name}") - start


def entry(admin: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    raw = admin.get(PODS, name, namespace)["metadata"]["annotations"][POD_NETWORKS]
    found: dict[str, Any] = json.loads(raw)[f"{namespace}/net"]
    return found


def node_switches(nb_socket: Path) -> list[str]:
    out = subprocess.run(command("ovn-nbctl", f"--db=unix:{nb_socket}", "--bare", "--columns=name",
                          "list", "Logical_Switch"), capture_output=True, text=True,
                         check=True).stdout
    return [name for name in out.split() if name.startswith("u") and "_net_" in name]


def run(udns: int, nodes: int, samples: int, grace: str, workdir: Path) -> JSON:
    cluster = LocalCluster(workdir / ".ovnk")
    settings = ComponentSettings(given={"enable_dynamic_udn_allocation": "true",
                                        "udn_deletion_grace_period": grace})
    cluster.up(nodes=nodes, timeout=120, dataplane=False, settings=settings)
    stop = threading.Event()
    try:
        admin = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
        names = cluster.state().nodes
        first = names[0]
        namespaces = create_primary_udns(admin, udns)
        ports = Ports()
        threading.Thread(target=ports.follow, args=(cluster.nb_socket, stop),
                         daemon=True).start()
        time.sleep(0.5)
        for namespace in namespaces:  # each UDN rendered on the first node only
            admin.create(PODS, pod(namespace, "anchor", first))
        for namespace in namespaces:
            ports.wait(f"{namespace}/anchor", timeout=120)
        activation: list[float] = []
        floor: list[float] = []
        last: tuple[str, str] | None = None
        for sample in range(samples):
            namespace = namespaces[sample % udns]
            node = names[1 + (sample // udns) % (nodes - 1)]
            floor.append(timed_pod(admin, ports, namespace, f"f{sample}", first))
            activation.append(timed_pod(admin, ports, namespace, f"a{sample}", node))
            last = (namespace, f"a{sample}")
        # the last activated node is usable: a packet from the anchor reaches the new pod
        assert last is not None
        wait_for_sb(f"unix:{cluster.nb_socket}")
        src, dst = entry(admin, last[0], "anchor"), entry(admin, *last)
        src_ip = src["ip_addresses"][0].split("/")[0]
        dst_ip = dst["ip_addresses"][0].split("/")[0]
        gateway = src["gateway_ips"][0]
        router_mac = "0a:58:" + ":".join(f"{int(b):02x}" for b in gateway.split("."))
        flow = packet_flow(f"{last[0]}.net_{last[0]}_anchor", src["mac_address"], router_mac,
                           src_ip, dst_ip)
        delivered = trace(f"unix:{cluster.sb_socket}", f"{last[0]}_net_{first}",
                          flow).outputs
        if f"{last[0]}.net_{last[0]}_{last[1]}" not in delivered:
            raise SystemExit(f"ovn-trace: the activated pod is not reached: {delivered}")
        # deactivation: the activation pods go; after the grace period only the first
        # node's rows remain
        for sample in range(samples):
            admin.delete(PODS, f"a{sample}", namespaces[sample % udns])
        seconds = parse_duration(grace)
        deadline = time.monotonic() + seconds + 60
        left: list[str] = []
        while time.monotonic() < deadline:
            left = [s for s in node_switches(cluster.nb_socket)
                    if any(s.endswith(f"_{node}") for node in names[1:])]
            if not left:
                break
            time.sleep(0.5)
        if left:
            raise SystemExit(f"deactivation left {len(left)} node switch(es): {left[:5]}")
        return {"udns": udns, "nodes": nodes, "samples": samples, "grace": grace,
                "activation_ms": [v * 1e3 for v in activation],
                "floor_ms": [v * 1e3 for v in floor], "rows_left_after_grace": 0}
    finally:
        stop.set()
        cluster.down()


def main(argv: list[str] | None = None) -> int:
    use_development_default()  # OVN 26.03 unless OVNK_OVN names another
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--udns", type=int, default=20)
    parser.add_argument("--nodes", type=int, default=5)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--grace", default="5s", help="--udn-deletion-grace-period")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.nodes < 2:
        parser.error("--nodes must be at least 2")
    with tempfile.TemporaryDirectory() as tmp:
        row = run(args.udns, args.nodes, args.samples, args.grace, args.workdir or Path(tmp))
    act, flo = row["activation_ms"], row["floor_ms"]
    summary = {"activation_p50_ms": percentile(act, 0.5),
               "activation_p99_ms": percentile(act, 0.99),
               "floor_p50_ms": percentile(flo, 0.5), "floor_p99_ms": percentile(flo, 0.99)}
    print("| UDNs | nodes | samples | activation p50 / p99 ms | active-node pod p50 / p99 ms "
          "| ratio p50 / p99 | rows left after grace |")
    print("|" + " --- |" * 7)
    print(f"| {row['udns']} | {row['nodes']} | {row['samples']} | "
          f"{summary['activation_p50_ms']:.0f} / {summary['activation_p99_ms']:.0f} | "
          f"{summary['floor_p50_ms']:.0f} / {summary['floor_p99_ms']:.0f} | "
          f"{summary['activation_p50_ms'] / summary['floor_p50_ms']:.2f}x / "
          f"{summary['activation_p99_ms'] / summary['floor_p99_ms']:.2f}x | 0 |")
    out = write_results(args.results, "activation_latency", {
        "machine": machine_facts(),
        "summary": summary, "row": row})
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
