"""Prometheus metrics: the registry of one process and its HTTP endpoint.

Metrics that describe objects (how many UDNs exist per role and topology)
are computed from the informer caches when scraped, never kept as counters
that could drift from the cluster; counters are kept only for events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

log = logging.getLogger(__name__)


class GaugeFromCache(Collector):
    """A gauge whose samples are computed on scrape by ``sample()``."""

    def __init__(self, name: str, documentation: str, labels: list[str],
                 sample: Callable[[], Iterable[tuple[tuple[str, ...], float]]]) -> None:
        self.name = name
        self.documentation = documentation
        self.labels = labels
        self.sample = sample

    def collect(self) -> Iterable[Any]:
        family = GaugeMetricFamily(self.name, self.documentation, labels=self.labels)
        for label_values, value in self.sample():
            family.add_metric(list(label_values), value)
        yield family


def serve_metrics(registry: CollectorRegistry, bind_address: str) -> Any:
    """Serve ``registry`` on ``HOST:PORT``; returns the server (``shutdown()`` to stop)."""
    host, _, port = bind_address.rpartition(":")
    try:
        server, _thread = start_http_server(int(port), addr=host or "127.0.0.1",
                                            registry=registry)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot serve metrics on {bind_address!r}: {exc}") from None
    log.info("metrics on http://%s/metrics", bind_address)
    return server


class ControllerCollector(Collector):
    """Reconcile outcomes, slow-lane keys and queue depth of live controllers.

    Read from each controller's own counters at scrape time, so nothing is
    registered globally and several controllers (or processes in tests) never
    clash.
    """

    def __init__(self, controllers: Callable[[], Iterable[Any]]) -> None:
        self.controllers = controllers

    def collect(self) -> Iterable[Any]:
        reconciles = CounterMetricFamily(
            "ovnkube_controller_reconcile", "Reconciles by controller and result",
            labels=["controller", "result"])
        slow = GaugeMetricFamily(
            "ovnkube_controller_slow_lane_keys",
            "Keys that failed more than the failure budget and are retried every resync",
            labels=["controller"])
        depth = GaugeMetricFamily("ovnkube_controller_workqueue_depth",
                                  "Keys waiting in the controller's queue",
                                  labels=["controller"])
        for controller in self.controllers():
            stats = controller.stats
            success = stats.reconciles - stats.failures - stats.not_ready - stats.permanent
            for result, value in (("success", success), ("error", stats.failures),
                                  ("not-ready", stats.not_ready),
                                  ("permanent-error", stats.permanent)):
                reconciles.add_metric([controller.name, result], value)
            slow.add_metric([controller.name], len(stats.slow_lane))
            depth.add_metric([controller.name], len(controller.queue))
        yield reconciles
        yield slow
        yield depth
