"""The benchmarks keep working: a tiny size of each, with all of their own checks.

``bench/render_topology.py`` fails by itself when ovnk's NB differs from the
ovn-nbctl floor's, when a restart writes anything, or when rows are left
after deleting everything; this runs it at the smallest size so CI notices
when it breaks.  It asserts nothing about speed.
"""

from __future__ import annotations

import importlib
import json
import math
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

BENCH = Path(__file__).resolve().parents[2] / "bench"


def bench_module(name: str) -> Any:
    """A benchmark script imported as a module (its helpers beside it importable too)."""
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(BENCH))


@pytest.mark.parametrize("topology", ["layer3", "layer2"])
def test_render_benchmark_runs_and_checks_itself(tmp_path: Path, topology: str,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    render_topology = bench_module("render_topology")
    assert render_topology.main(["--topology", topology, "--networks", "2", "--nodes", "2",
                                 "--pods", "1", "--repeat", "1", "--no-warmup", "--results",
                                 str(tmp_path)]) == 0
    [result] = tmp_path.glob(f"render_{topology}-*.json")
    report = json.loads(result.read_text())
    median = report["median"]
    assert median["ovnk_seconds"] > 0 and median["floor_seconds"] > 0
    assert median["raw_seconds"] > 0 and median["owned_rows"] > 0
    assert all(run["restart_writes"] == 0 for run in report["runs"])
    assert "the raw transactions' NB equal the floor's NB" in capsys.readouterr().out


@pytest.mark.unit
def test_mirror_benchmark_runs_and_checks_itself(tmp_path: Path) -> None:
    mirror_lag = bench_module("mirror_lag")
    assert mirror_lag.main(["--endpoints", "1,3", "--changes", "3", "--repeat", "1",
                            "--no-warmup", "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("mirror_lag-*.json")
    rows = json.loads(result.read_text())["rows"]
    assert [row["endpoints"] for row in rows] == [1, 3]
    for row in rows:
        assert row["leaked_mirrors"] == 0
        assert row["writes_per_change"] == 1.0  # one update per pod change, nothing more
        # Lags are measured from the update's response, so on a loaded machine a watch event
        # can come first and a lag be slightly negative: only check they were measured.
        assert math.isfinite(row["lag_p50_ms"]) and math.isfinite(row["echo_p50_ms"])


POD_LATENCY_COMPONENTS = {"cluster-manager", "controller", "apiserver", "scheduler", "kubelet",
                          "nb-ovsdb", "northd", "sb-ovsdb"}


def check_pod_latency_rows(rows: list[dict[str, Any]], count: int) -> None:
    assert len(rows) == count
    for row in rows:
        for measured in ("annotation_ms", "nb_port_ms", "annotation_to_port_ms", "echo_ms"):
            assert math.isfinite(row[measured]["p99"]), measured
        assert row["throughput_pods_per_s"] > 0
        assert set(row["cpu_seconds_per_pod"]) == POD_LATENCY_COMPONENTS
        assert isinstance(row["ovn_quiet_before"], bool)


def test_pod_latency_benchmark_runs(tmp_path: Path) -> None:
    pod_latency = bench_module("pod_latency")
    # two rounds: the first round's pods are deleted before the second starts
    assert pod_latency.main(["--udns", "2", "--nodes", "2", "--pods", "6", "--rate", "10,10",
                             "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("pod_latency-*.json")
    check_pod_latency_rows(json.loads(result.read_text())["rows"], 2)


def test_pod_latency_measures_a_kept_cluster_again(tmp_path: Path) -> None:
    from ovnk_local.cluster import LocalCluster
    pod_latency = bench_module("pod_latency")
    args = ["--udns", "2", "--nodes", "2", "--pods", "4", "--rate", "10", "--cluster-dir",
            str(tmp_path / "kept")]
    cluster = LocalCluster(tmp_path / "kept" / ".ovnk")
    try:
        assert pod_latency.main([*args, "--results", str(tmp_path / "first")]) == 0
        started = cluster.state().processes["apiserver"].pid
        assert all(status.ready for status in cluster.status())  # left up
        assert pod_latency.main([*args, "--results", str(tmp_path / "second")]) == 0
        assert cluster.state().processes["apiserver"].pid == started  # the same cluster
        for run in ("first", "second"):
            [result] = (tmp_path / run).glob("pod_latency-*.json")
            check_pod_latency_rows(json.loads(result.read_text())["rows"], 1)
    finally:
        cluster.down()


def test_pod_latency_stops_itself_when_memory_runs_low(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pod_latency = bench_module("pod_latency")
    more_than_the_machine = str(pod_latency.available_memory() / 2**30 + 64)
    assert pod_latency.main(["--udns", "1", "--nodes", "1", "--pods", "2", "--rate", "10",
                             "--min-free-memory", more_than_the_machine,
                             "--results", str(tmp_path)]) == 3
    assert "of memory left" in capsys.readouterr().err
    assert not list(tmp_path.glob("pod_latency-*.json"))


def test_memory_guard_interrupts_a_run_when_memory_falls_during_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pod_latency = bench_module("pod_latency")
    started = threading.Event()  # the run has started: memory falls from then on
    monkeypatch.setattr(pod_latency, "available_memory",
                        lambda: 2**30 if started.is_set() else 8 * 2**30)
    # someone else's SIGINT handler (a component's graceful stop) must not swallow the
    # guard's interrupt, and is back once the guarded block is left
    def elsewhere(_signum: int, _frame: object) -> None:
        return None

    previous = signal.signal(signal.SIGINT, elsewhere)
    try:
        guard = pod_latency.MemoryGuard(4 * 2**30)
        with pytest.raises(KeyboardInterrupt):
            with guard:
                started.set()
                for _ in range(100):  # the run: the guard interrupts it within a poll or two
                    time.sleep(0.1)
        assert signal.getsignal(signal.SIGINT) is elsewhere
    finally:
        signal.signal(signal.SIGINT, previous)
    assert "1.0 GiB of memory left (minimum 4.0 GiB" in guard.tripped


def test_services_benchmark_runs_and_checks_itself(tmp_path: Path) -> None:
    render_services = bench_module("render_services")
    # it exits non-zero by itself when the rows differ from the floor's, a restart writes,
    # a change is not one write, or rows are left after deleting everything
    assert render_services.main(["--services", "12", "--networks", "2", "--nodes", "2",
                                 "--node-ports", "--changes", "4", "--repeat", "1",
                                 "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("render_services-*.json")
    median = json.loads(result.read_text())["median"]
    assert median["ovnk_seconds"] > 0 and median["floor_seconds"] > 0
    assert median["churn_p50_ms"] > 0


def test_service_lag_benchmark_runs(tmp_path: Path) -> None:
    service_lag = bench_module("service_lag")
    # it fails by itself when a change does not reach its load balancer
    assert service_lag.main(["--endpoints", "2", "--changes", "3", "--background", "2",
                             "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("service_lag-*.json")
    [row] = json.loads(result.read_text())["summaries"]
    for path in ("echo", "echo2", "default", "udn"):
        assert math.isfinite(row[f"{path}_p50_ms"]) and row[f"{path}_p50_ms"] > 0, path


def test_dynamic_allocation_benchmarks_run_and_check_themselves(tmp_path: Path) -> None:
    render_topology = bench_module("render_topology")
    assert render_topology.main(["--networks", "4", "--nodes", "5", "--pods", "1",
                                 "--active-fraction", "0.2", "--repeat", "1", "--no-warmup",
                                 "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("render_layer3-*.json")
    median = json.loads(result.read_text())["median"]
    assert 0 < median["rows_vs_full_render"] <= 0.3
    activation_latency = bench_module("activation_latency")
    # it fails by itself when the activated pod is not reached or rows outlive the grace
    assert activation_latency.main(["--udns", "2", "--nodes", "2", "--samples", "2",
                                    "--grace", "1s", "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("activation_latency-*.json")
    summary = json.loads(result.read_text())["summary"]
    assert summary["activation_p99_ms"] > 0 and summary["floor_p99_ms"] > 0
