"""Benchmark: EndpointSlice mirror lag and API writes per pod change.

For each service size E (endpoints), on a fresh local API server (its own process):

* setup: one primary-UDN namespace, E annotated pods, a Service, and its default slices
  (at most 100 endpoints each, as the default controller writes them); the mirror
  controller starts and creates the mirrors (the *initial* time);
* **pod changes**: C times, one endpoint is replaced by a new pod (the new pod is created
  with its addresses, then the source slice is updated), one change at a time;
* **lag**: from the source update's response to the mirror showing that source version,
  as seen by a separate watch in this process;
* **baseline** (the floor of any mirror): before the controller starts, the same C changes
  are made with an *echo* in its place: a watch handler that, on each source event,
  immediately PUTs a verbatim copy of the slice (same size, no queue, no cache reads, no
  address lookups); its lag is measured the same way.  The ratios are mirror p50 / echo
  p50 and mirror p99 / echo p99;
* **writes per change**: create/update/delete requests the mirror controller sent during
  the changes, divided by C (one update each is the ideal);
* **leak check**: the Service's slices are deleted; every mirror must disappear.

    python bench/mirror_lag.py --endpoints 1,100,1000 --changes 50 --repeat 5

prints a table and writes ``bench/results/mirror_lag-<time>.json``.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from latency_stats import percentile
from ovnk_mirror.controller import EndpointSliceMirror
from ovnk_mirror.mirror import MIRROR_CONTROLLER, SOURCE_ANNOTATION, SOURCE_VERSION_ANNOTATION
from ovnk_mirror.testing import CONFIG, MirrorEnv, endpoint
from results_file import machine_facts, write_results

from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.kube.client import JSON, KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import ENDPOINTSLICES, PODS, Resource
from ovnk_core.networks.registry import NetworkRegistry
from ovnk_core.testing.waiting import wait_until

NS = "bench"
NAD = f"{NS}/l3-network"
SLICE_SIZE = 100
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
ECHO = "bench-echo"
RESULTS = Path(__file__).resolve().parent / "results"


class CountingClient(KubeClient):
    """The mirror controller's client: counts the writes it sends."""

    writes = 0

    def create(self, resource: Resource, obj: JSON, namespace: str | None = None) -> JSON:
        self.writes += 1
        return super().create(resource, obj, namespace)

    def update(self, resource: Resource, obj: JSON) -> JSON:
        self.writes += 1
        return super().update(resource, obj)

    def delete(self, resource: Resource, name: str, namespace: str | None = None,
               **kwargs: Any) -> JSON:
        self.writes += 1
        return super().delete(resource, name, namespace, **kwargs)


@dataclass
class Watcher:
    """Arrival times of the copies (mirror or echo) of each (source name, source version)."""

    client: KubeClient
    seen: dict[tuple[str, str], float] = field(default_factory=dict)
    cond: threading.Condition = field(default_factory=threading.Condition)
    informers: InformerFactory | None = None

    def start(self) -> None:
        self.informers = InformerFactory(self.client)
        informer = self.informers.get(ENDPOINTSLICES, NS)
        informer.add_handler(self._on_event)
        self.informers.start()
        informer.wait_for_sync(30)

    def stop(self) -> None:
        if self.informers is not None:
            self.informers.stop()

    def _on_event(self, _event: str, _old: JSON | None, new: JSON | None) -> None:
        if new is None:
            return
        now = time.perf_counter()
        meta = new["metadata"]
        if (meta.get("labels") or {}).get(MANAGED_BY) not in (MIRROR_CONTROLLER, ECHO):
            return
        annotations = meta.get("annotations") or {}
        key = (annotations.get(SOURCE_ANNOTATION, ""),
               annotations.get(SOURCE_VERSION_ANNOTATION, ""))
        with self.cond:
            self.seen.setdefault(key, now)
            self.cond.notify_all()

    def forget(self) -> None:
        with self.cond:
            self.seen.clear()

    def wait(self, key: tuple[str, str], timeout: float = 60.0) -> float:
        with self.cond:
            if not self.cond.wait_for(lambda: key in self.seen, timeout):
                raise RuntimeError(f"copy of {key} not seen within {timeout}s")
            return self.seen[key]


class Echo:
    """The floor: on each source event, PUT a verbatim copy of the slice right away."""

    def __init__(self, client: KubeClient, sources: list[JSON]) -> None:
        self.client = client
        self.copies: dict[str, JSON] = {}
        for source in sources:
            name = source["metadata"]["name"]
            self.copies[name] = client.create(ENDPOINTSLICES, {
                "metadata": {"name": f"echo-{name}", "namespace": NS,
                             "labels": {MANAGED_BY: ECHO}},
                "addressType": "IPv4", "endpoints": []}, NS)
        self.informers = InformerFactory(client)
        informer = self.informers.get(ENDPOINTSLICES, NS)
        informer.add_handler(self._on_event)
        self.informers.start()
        informer.wait_for_sync(30)

    def _on_event(self, _event: str, _old: JSON | None, new: JSON | None) -> None:
        if new is None or (new["metadata"].get("labels") or {}).get(MANAGED_BY) == ECHO:
            return
        name = new["metadata"]["name"]
        if name not in self.copies:
            return
        copy = self.copies[name]
        copy["metadata"]["annotations"] = {
            SOURCE_ANNOTATION: name,
            SOURCE_VERSION_ANNOTATION: new["metadata"]["resourceVersion"]}
        copy["endpoints"] = new.get("endpoints") or []
        copy["ports"] = new.get("ports") or []
        self.copies[name] = self.client.update(ENDPOINTSLICES, copy)

    def stop(self) -> None:
        self.informers.stop()
        for copy in self.copies.values():
            self.client.delete(ENDPOINTSLICES, copy["metadata"]["name"], NS)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_apiserver(workdir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    kubeconfig = workdir / "kubeconfig"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ovnk_local.apiserver", "--port", str(port),
         "--cert-dir", str(workdir / "pki"),
         "--kubeconfig", str(kubeconfig), "--log-level", "warning",
         "--bookmark-interval", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(kubeconfig.exists, timeout=30, what="the API server")
    return process, kubeconfig


def ip(index: int) -> tuple[str, str]:
    """(default-network IP, UDN IP) of pod number ``index``."""
    return (f"10.244.{index // 250}.{index % 250 + 2}",
            f"10.132.{index // 250}.{index % 250 + 2}")


def run_once(endpoints: int, changes: int, workdir: Path) -> dict[str, Any]:
    process, kubeconfig = start_apiserver(workdir)
    try:
        plain = KubeClient(api_client_from_kubeconfig(str(kubeconfig)))
        counting = CountingClient(api_client_from_kubeconfig(str(kubeconfig)))
        informers = InformerFactory(counting)
        context = ClusterManagerContext(CONFIG, counting, informers,
                                        EventRecorder(counting, "bench", "bench"),
                                        NetworkRegistry())
        env = MirrorEnv(plain, context)
        env.namespace(NS)
        env.primary_network(NS)
        for index in range(endpoints):
            default, udn = ip(index)
            env.pod(NS, f"pod-{index}", {"default": [f"{default}/16"], NAD: [f"{udn}/16"]})
        service = env.service(NS, "svc")
        sources = []
        for first in range(0, endpoints, SLICE_SIZE):
            pods = [(f"pod-{i}", ip(i)[0]) for i in range(first, min(first + SLICE_SIZE,
                                                                     endpoints))]
            sources.append(env.source_slice(NS, service, pods, name=f"svc-{first // 100}"))
        watcher = Watcher(plain)
        watcher.start()
        next_pod = endpoints

        def change(number: int) -> float:
            """Replace one endpoint by a new pod; the copy's lag after the update's response."""
            nonlocal next_pod
            default, udn = ip(next_pod)
            env.pod(NS, f"pod-{next_pod}", {"default": [f"{default}/16"], NAD: [f"{udn}/16"]})
            position = number % endpoints
            slot = position // SLICE_SIZE
            sources[slot]["endpoints"][position % SLICE_SIZE] = endpoint(
                NS, f"pod-{next_pod}", default)
            next_pod += 1
            updated = plain.update(ENDPOINTSLICES, sources[slot])
            answered = time.perf_counter()
            sources[slot] = updated
            return watcher.wait((updated["metadata"]["name"],
                                 updated["metadata"]["resourceVersion"])) - answered

        echo = Echo(plain, sources)
        floor = [change(number) for number in range(changes)]
        echo.stop()
        watcher.forget()

        started = time.perf_counter()
        mirror = EndpointSliceMirror(context)
        env.mirror = mirror
        informers.start()
        mirror.controller.start()
        for source in sources:
            watcher.wait((source["metadata"]["name"], source["metadata"]["resourceVersion"]))
        initial = time.perf_counter() - started

        writes_before = counting.writes
        lags = [change(number) for number in range(changes)]
        env.settle()
        writes = counting.writes - writes_before

        for source in sources:
            plain.delete(ENDPOINTSLICES, source["metadata"]["name"], NS)
        wait_until(lambda: not env.mirrors(NS), timeout=60, what="every mirror deleted")
        leaked = len(env.mirrors(NS))
        mirror.controller.stop()
        informers.stop()
        watcher.stop()
        assert plain.get(PODS, "pod-0", NS)
        return {"endpoints": endpoints, "changes": changes, "initial_s": initial,
                "lag_s": lags, "baseline_s": floor,
                "writes_per_change": writes / changes, "leaked_mirrors": leaked}
    finally:
        process.terminate()
        process.wait(timeout=10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", default="1,100,1000",
                        help="comma-separated service sizes (endpoints)")
    parser.add_argument("--changes", type=int, default=50, help="pod changes per run")
    parser.add_argument("--repeat", type=int, default=5, help="measured runs per size")
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="directory for the JSON results")
    args = parser.parse_args(argv)

    sizes = [int(v) for v in args.endpoints.split(",") if v]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        if not args.no_warmup:
            (workdir / "warmup").mkdir(parents=True)
            run_once(1, 3, workdir / "warmup")
        for size in sizes:
            runs = []
            for repeat in range(args.repeat):
                run_dir = workdir / f"e{size}-{repeat}"
                run_dir.mkdir(parents=True)
                runs.append(run_once(size, args.changes, run_dir))
            lags = [v for r in runs for v in r["lag_s"]]
            baselines = [v for r in runs for v in r["baseline_s"]]
            row = {
                "endpoints": size, "runs": args.repeat, "changes": args.changes,
                "initial_s": statistics.median(r["initial_s"] for r in runs),
                "lag_p50_ms": percentile(lags, 0.5) * 1e3,
                "lag_p99_ms": percentile(lags, 0.99) * 1e3,
                "echo_p50_ms": percentile(baselines, 0.5) * 1e3,
                "echo_p99_ms": percentile(baselines, 0.99) * 1e3,
                "ratio_p50": percentile(lags, 0.5) / percentile(baselines, 0.5),
                "ratio_p99": percentile(lags, 0.99) / percentile(baselines, 0.99),
                "writes_per_change": statistics.median(r["writes_per_change"] for r in runs),
                "leaked_mirrors": max(r["leaked_mirrors"] for r in runs),
            }
            rows.append(row)
            if row["leaked_mirrors"]:
                print(f"LEAK: {row['leaked_mirrors']} mirrors left at {size} endpoints")
    header = ("| endpoints | echo p50 / p99 ms | mirror p50 / p99 ms | ratio p50 | ratio p99 "
              "| API writes per change | initial mirror s |")
    print(header)
    print("|" + " --- |" * 7)
    for row in rows:
        print(f"| {row['endpoints']} | {row['echo_p50_ms']:.1f} / {row['echo_p99_ms']:.1f} | "
              f"{row['lag_p50_ms']:.1f} / {row['lag_p99_ms']:.1f} | "
              f"{row['ratio_p50']:.2f}x | {row['ratio_p99']:.2f}x | "
              f"{row['writes_per_change']:.2f} | {row['initial_s']:.2f} |")
    out = write_results(args.results, "mirror_lag", {
        "machine": machine_facts(),
        "rows": rows})
    print(f"results: {out}")
    return 1 if any(row["leaked_mirrors"] for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
