"""Benchmark: endpoint change → OVN load balancer update, end to end, against an echo floor.

On a fresh ``ovnk local`` cluster without a dataplane (API server, cluster manager with the
EndpointSlice mirror, zone controller with the services controller, NB and northd, each its
own process), for each service size E (endpoints):

* setup: a selector-less Service on the default network with a slice the benchmark writes;
  a selector-less Service in a primary Layer3 UDN namespace with a default slice the
  benchmark writes (as the default EndpointSlice controller would), naming E of E + 1 pods
  of that namespace by ``targetRef``, so the mirror gives them their UDN addresses;
  optionally B background services with E endpoints each on the default network;
* **changes**, one at a time, C each, interleaved: *default*: one endpoint of the default
  slice replaced by a new address; *udn*: the endpoint of the oldest pod replaced by the pod
  not in the slice (source slice → mirror → mirrored slice → services controller → NB);
  *echo*: the floor, below;
* **lag**: from the slice update request to the new address showing in the service's
  cluster load balancer, as seen by ``ovsdb-client monitor`` in its own process;
* **floor** (same run, same servers): an *echo* in this process watches slices of a
  namespace with no Service and, on each event, at once writes the endpoints into one load
  balancer row over a JSON-RPC connection it holds: one watch delivery, one NB transaction,
  one monitor delivery; no queue, no cache, no diff; and a *two-hop echo* for the UDN path:
  the watch first PUTs a copy of the slice (the EndpointSlice mirror's floor) and the copy's
  event is written into NB as above. The ratios are default / echo and UDN / two-hop echo,
  at p50 and p99.

    python bench/service_lag.py --endpoints 3,100 --changes 50 [--background 0,1000]

prints a table and writes ``bench/results/service_lag-<time>.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from latency_stats import percentile
from nb_monitor import monitor_lines
from ovnk_local.cluster import LocalCluster
from results_file import machine_facts, write_results

from ovnk_core.annotations.endpointslices import (
    DEFAULT_CONTROLLER,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
)
from ovnk_core.kube.client import JSON, KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import ENDPOINTSLICES, NADS, NAMESPACES, PODS, SERVICES, UDNS
from ovnk_core.ovn.jsonrpc import OvsdbConnection
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

RESULTS = Path(__file__).resolve().parent / "results"
DEFAULT_NS, UDN_NS, ECHO_NS = "lag-default", "lag-udn", "lag-echo"
UDN_NAD = f"{UDN_NS}/net"
UDN_CIDR = "10.132.0.0/14"
ECHO_LB = "bench-echo"
ECHO_VIP = "10.96.255.254:80"
POD_NETWORKS = "k8s.ovn.org/pod-networks"


@dataclass
class Arrivals:
    """When each awaited address first showed in its load balancer (monitor lines)."""

    wanted: dict[str, str] = field(default_factory=dict)  # address -> load balancer name
    seen: dict[str, float] = field(default_factory=dict)
    cond: threading.Condition = field(default_factory=threading.Condition)

    def expect(self, address: str, balancer: str) -> None:
        with self.cond:
            self.seen.pop(address, None)
            self.wanted[address] = balancer

    def line(self, text: str) -> None:
        now = time.perf_counter()
        with self.cond:
            for address, balancer in list(self.wanted.items()):
                if balancer in text and f'{address}:' in text:
                    self.seen[address] = now
                    del self.wanted[address]
                    self.cond.notify_all()

    def wait(self, address: str, timeout: float = 60.0) -> float:
        with self.cond:
            if not self.cond.wait_for(lambda: address in self.seen, timeout):
                raise RuntimeError(f"{address} did not reach its load balancer in {timeout}s")
            return self.seen[address]


def monitor(nb_socket: Path, arrivals: Arrivals, stop: threading.Event) -> None:
    """Feed ``arrivals`` from a monitor of the load balancers."""
    for text in monitor_lines(nb_socket, "Load_Balancer", "name,vips", stop):
        arrivals.line(text)


class Echo:
    """The floors, from a watch of the echo namespace's slices, in this process:

    * a slice managed by ``bench-echo``: its endpoints written at once into the load balancer
      ``bench-echo-<slice>`` over an NB connection held open (one watch delivery, one NB
      transaction);
    * a slice managed by ``bench-echo-source``: its endpoints PUT at once into the slice
      ``<slice>-copy`` (managed by ``bench-echo``, so on into NB as above): the two hops of a
      UDN service's path, each at its floor.
    """

    def __init__(self, client: KubeClient, nb_socket: Path) -> None:
        self.client = client
        self.connection = OvsdbConnection(f"unix:{nb_socket}")
        self.lock = threading.Lock()  # one request at a time on the connection
        self.copies: dict[str, JSON] = {}
        self.informers = InformerFactory(client)
        informer = self.informers.get(ENDPOINTSLICES, ECHO_NS)
        informer.add_handler(self._on_event)
        self.informers.start()
        informer.wait_for_sync(30)

    def add(self, name: str, endpoints: list[JSON], two_hops: bool) -> JSON:
        """A slice for the echo (``two_hops``: through an API copy first) and its load
        balancer; the slice to update."""
        balancer = f"{ECHO_LB}-{name}-copy" if two_hops else f"{ECHO_LB}-{name}"
        self._transact([{"op": "insert", "table": "Load_Balancer",
                         "row": {"name": balancer, "protocol": "tcp"}}])
        if two_hops:
            self.copies[f"{name}-copy"] = self.client.create(ENDPOINTSLICES, endpoint_slice(
                ECHO_NS, endpoints, "echo", f"{name}-copy", managed_by=ECHO_LB))
        return self.client.create(ENDPOINTSLICES, endpoint_slice(
            ECHO_NS, endpoints, "echo", name,
            managed_by=f"{ECHO_LB}-source" if two_hops else ECHO_LB))

    def _transact(self, ops: list[dict[str, Any]]) -> None:
        with self.lock:
            results = self.connection.transact("OVN_Northbound", ops)
        errors = [r for r in results if isinstance(r, dict) and "error" in r]
        if errors:
            raise RuntimeError(f"echo transaction failed: {errors}")

    def _on_event(self, _event: str, _old: JSON | None, new: JSON | None) -> None:
        if new is None:
            return
        meta = new["metadata"]
        managed_by = (meta.get("labels") or {}).get(MANAGED_BY_LABEL)
        if managed_by == f"{ECHO_LB}-source":
            name = f"{meta['name']}-copy"
            copy = dict(self.copies[name], endpoints=new.get("endpoints") or [])
            self.copies[name] = self.client.update(ENDPOINTSLICES, copy)
        elif managed_by == ECHO_LB:
            targets = ",".join(f"{a}:8080" for e in new.get("endpoints") or []
                               for a in e.get("addresses") or [])
            self._transact([{"op": "update", "table": "Load_Balancer",
                             "where": [["name", "==", f"{ECHO_LB}-{meta['name']}"]],
                             "row": {"vips": ["map", [[ECHO_VIP, targets]]]}}])

    def stop(self) -> None:
        """(Its load balancers go with the cluster.)"""
        self.informers.stop()
        self.connection.close()


def service(namespace: str, name: str = "web") -> JSON:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"ports": [{"name": "http", "protocol": "TCP", "port": 80,
                                "targetPort": 8080}]}}


def endpoint_slice(namespace: str, endpoints: list[JSON], service_name: str = "web",
                   name: str = "web-1", managed_by: str = DEFAULT_CONTROLLER) -> JSON:
    return {"metadata": {"name": name, "namespace": namespace, "labels": {
                SERVICE_NAME_LABEL: service_name, MANAGED_BY_LABEL: managed_by}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "protocol": "TCP", "port": 8080}],
            "endpoints": endpoints}


def address_endpoint(address: str) -> JSON:
    return {"addresses": [address], "conditions": {"ready": True}, "nodeName": "ovn-worker"}


def address(base: int, index: int) -> str:
    """Distinct pod-subnet addresses: 10.244.<base + index // 250>.<index % 250 + 2>."""
    return f"10.244.{base + index // 250}.{index % 250 + 2}"


def pod_addresses(client: KubeClient, name: str) -> tuple[str, str, str] | None:
    """(default-network IP, UDN IP, node) of a pod of the UDN namespace, once annotated and
    scheduled."""
    pod = client.get(PODS, name, UDN_NS)
    raw = (pod["metadata"].get("annotations") or {}).get(POD_NETWORKS)
    node = (pod.get("spec") or {}).get("nodeName")
    if not raw or not node:
        return None
    networks = json.loads(raw)
    if "default" not in networks or UDN_NAD not in networks:
        return None
    return (networks["default"]["ip_addresses"][0].split("/")[0],
            networks[UDN_NAD]["ip_addresses"][0].split("/")[0], node)


def timed(update: Callable[[], None], arrivals: Arrivals, awaited: str, balancer: str
          ) -> float:
    arrivals.expect(awaited, balancer)
    start = time.perf_counter()  # the NB write can be seen before the API answers
    update()
    return arrivals.wait(awaited) - start


def run_size(endpoints: int, changes: int, background: int, workdir: Path) -> JSON:
    cluster = LocalCluster(workdir / ".ovnk")
    cluster.up(nodes=3, timeout=120, dataplane=False)
    stop = threading.Event()
    echo: Echo | None = None
    try:
        admin = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
        for namespace, labels in ((DEFAULT_NS, {}), (ECHO_NS, {}),
                                  (UDN_NS, {PRIMARY_NAMESPACE_LABEL: ""})):
            admin.create(NAMESPACES, {"metadata": {"name": namespace, "labels": labels}})
        admin.create(UDNS, {"metadata": {"name": "net", "namespace": UDN_NS},
                            "spec": {"topology": "Layer3", "layer3": {
                                "role": "Primary",
                                "subnets": [{"cidr": UDN_CIDR, "hostSubnet": 24}]}}})
        wait_until(lambda: any("k8s.ovn.org/network-id" in (n["metadata"].get("annotations")
                                                            or {})
                               for n in admin.list(NADS, UDN_NS)["items"]),
                   timeout=60, what="the UDN accepted")
        # the UDN's pods: E in the slice, one out
        pool = [f"p{i}" for i in range(endpoints + 1)]
        for name in pool:
            admin.create(PODS, {"metadata": {"name": name, "namespace": UDN_NS},
                                "spec": {"containers": [{"name": "c", "image": "agnhost"}]}})
        pods: dict[str, tuple[str, str, str]] = {}
        for name in pool:
            pods[name] = wait_until(lambda n=name: pod_addresses(admin, n),  # type: ignore[misc]
                                    timeout=120, what=f"pod {name} annotated")

        def pod_endpoint(name: str) -> JSON:
            default_ip, _udn_ip, node = pods[name]
            return {"addresses": [default_ip], "conditions": {"ready": True}, "nodeName": node,
                    "targetRef": {"kind": "Pod", "namespace": UDN_NS, "name": name}}

        for index in range(background):
            admin.create(SERVICES, service(DEFAULT_NS, f"bg{index}"))
            admin.create(ENDPOINTSLICES, endpoint_slice(
                DEFAULT_NS, [address_endpoint(address(100, index * endpoints + e))
                             for e in range(endpoints)], f"bg{index}", f"bg{index}-1"))
        admin.create(SERVICES, service(DEFAULT_NS))
        admin.create(SERVICES, service(UDN_NS))
        default_eps = [address_endpoint(address(200, i)) for i in range(endpoints)]
        default_slice = admin.create(ENDPOINTSLICES, endpoint_slice(DEFAULT_NS, default_eps))
        in_slice = pool[:endpoints]
        udn_slice = admin.create(ENDPOINTSLICES, endpoint_slice(
            UDN_NS, [pod_endpoint(n) for n in in_slice]))
        # everything rendered: the last of each service's first endpoints is in NB (in
        # the monitor's first dump, or in an update after it)
        arrivals = Arrivals()
        default_lb = f"Service_{DEFAULT_NS}/web_TCP_cluster"
        udn_lb = f"Service_{UDN_NS}/web_TCP_cluster"
        setup_start = time.perf_counter()
        for awaited, balancer in ((address(200, endpoints - 1), default_lb),
                                  (pods[in_slice[-1]][1], udn_lb)):
            arrivals.expect(awaited, balancer)
        threading.Thread(target=monitor, args=(cluster.nb_socket, arrivals, stop),
                         daemon=True).start()
        for awaited in (address(200, endpoints - 1), pods[in_slice[-1]][1]):
            arrivals.wait(awaited, timeout=120 + background / 10)
        initial = time.perf_counter() - setup_start
        echo = Echo(KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig))),
                    cluster.nb_socket)
        echo_slices = {
            two_hops: echo.add("two" if two_hops else "one",
                               [address_endpoint(address(220, i)) for i in range(endpoints)],
                               two_hops) for two_hops in (False, True)}

        lags: dict[str, list[float]] = {"default": [], "udn": [], "echo": [], "echo2": []}
        for change in range(changes):
            # the floors: one endpoint replaced by a new address
            for two_hops, path in ((False, "echo"), (True, "echo2")):
                new = address(230 + 2 * two_hops, change)
                echo_slice = echo_slices[two_hops]
                echo_slice["endpoints"] = [*echo_slice["endpoints"][1:], address_endpoint(new)]

                def update_echo(new_slice: JSON = echo_slice) -> None:
                    new_slice.update(admin.update(ENDPOINTSLICES, new_slice))
                balancer = f"{ECHO_LB}-two-copy" if two_hops else f"{ECHO_LB}-one"
                lags[path].append(timed(update_echo, arrivals, new, balancer))
            # default: the same on the default network's service
            new = address(210, change)
            default_slice["endpoints"] = [*default_slice["endpoints"][1:],
                                          address_endpoint(new)]

            def update_default(new_slice: JSON = default_slice) -> None:
                default_slice.update(admin.update(ENDPOINTSLICES, new_slice))
            lags["default"].append(timed(update_default, arrivals, new, default_lb))
            # udn: the oldest pod out, the one outside in
            outside = next(n for n in pool if n not in in_slice)
            in_slice = [*in_slice[1:], outside]
            udn_slice["endpoints"] = [pod_endpoint(n) for n in in_slice]

            def update_udn(new_slice: JSON = udn_slice) -> None:
                udn_slice.update(admin.update(ENDPOINTSLICES, new_slice))
            lags["udn"].append(timed(update_udn, arrivals, pods[outside][1], udn_lb))
        row: JSON = {"endpoints": endpoints, "changes": changes, "background": background,
                     "initial_s": initial}
        for path, values in lags.items():
            row[f"{path}_ms"] = [v * 1e3 for v in values]
        return row
    finally:
        stop.set()
        if echo is not None:
            echo.stop()
        cluster.down()


def summary(row: JSON) -> JSON:
    def at(path: str, q: float) -> float:
        return percentile(row[f"{path}_ms"], q)
    out = {key: row[key] for key in ("endpoints", "changes", "background", "initial_s")}
    for path in ("echo", "echo2", "default", "udn"):
        out[f"{path}_p50_ms"], out[f"{path}_p99_ms"] = at(path, 0.5), at(path, 0.99)
    for path, floor in (("default", "echo"), ("udn", "echo2")):
        out[f"{path}_ratio_p50"] = at(path, 0.5) / at(floor, 0.5)
        out[f"{path}_ratio_p99"] = at(path, 0.99) / at(floor, 0.99)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoints", default="3,100", help="comma-separated service sizes")
    parser.add_argument("--changes", type=int, default=50, help="changes per path and size")
    parser.add_argument("--background", default="0",
                        help="comma-separated numbers of other services (E endpoints each)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--results", type=Path, default=RESULTS,
                        help="directory for the JSON results")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        for background in (int(v) for v in args.background.split(",") if v):
            for size in (int(v) for v in args.endpoints.split(",") if v):
                run_dir = workdir / f"e{size}-b{background}"
                run_dir.mkdir(parents=True)
                rows.append(run_size(size, args.changes, background, run_dir))
    summaries = [summary(row) for row in rows]
    print("| endpoints | other services | echo p50 / p99 ms | default p50 / p99 ms | ratio p50 "
          "/ p99 | two-hop echo p50 / p99 ms | UDN (via mirror) p50 / p99 ms | ratio p50 / p99 "
          "|")
    print("|" + " --- |" * 8)
    for s in summaries:
        print(f"| {s['endpoints']} | {s['background']} | {s['echo_p50_ms']:.1f} / "
              f"{s['echo_p99_ms']:.1f} | {s['default_p50_ms']:.1f} / {s['default_p99_ms']:.1f} "
              f"| {s['default_ratio_p50']:.2f}x / {s['default_ratio_p99']:.2f}x | "
              f"{s['echo2_p50_ms']:.1f} / {s['echo2_p99_ms']:.1f} | "
              f"{s['udn_p50_ms']:.1f} / {s['udn_p99_ms']:.1f} | {s['udn_ratio_p50']:.2f}x / "
              f"{s['udn_ratio_p99']:.2f}x |")
    out = write_results(args.results, "service_lag", {
        "machine": machine_facts(),
        "summaries": summaries, "rows": rows})
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
