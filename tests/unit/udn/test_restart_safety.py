"""A cluster manager restarted over many networks rewrites nothing and moves nothing.

The incident: killed during churn, a cluster manager's node allocator ran before
its registry knew every network, rewrote nodes' ``k8s.ovn.org/node-subnets`` with
only the networks it knew, then allocated the missing ones again — swapping two
nodes' subnets while their pods kept their old addresses.  These tests restart a
cluster manager (new process objects) over such a state, with the NADs arriving
late, and compare every allocation before and after, and count the API writes.
"""

from __future__ import annotations

import ipaddress
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client as k8s
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import ssl_context_for

from ovnk_core.clustermanager import network_catalog
from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.clustermanager.nad_controller import NadController
from ovnk_core.clustermanager.network_catalog import NetworksNotSynced, wait_for_networks
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.fault_proxy import FaultProxy
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

CONFIG = udn_config()
NETWORKS = 24
NODE_NAMES = ("ovn-worker", "ovn-worker2", "ovn-worker3")
SUBNETS = "k8s.ovn.org/node-subnets"
POD_NETWORKS = "k8s.ovn.org/pod-networks"
NAD_LIST = "GET /apis/k8s.cni.cncf.io/v1/network-attachment-definitions?"


def notes_of(obj: dict[str, Any]) -> dict[str, str]:
    return dict(obj["metadata"].get("annotations") or {})


def node_subnets(api: KubeClient, node: str) -> dict[str, list[str]]:
    raw = notes_of(api.get(NODES, node)).get(SUBNETS)
    result: dict[str, list[str]] = json.loads(raw) if raw else {}
    return result


def pod_ip(api: KubeClient, namespace: str, name: str) -> str | None:
    raw = notes_of(api.get(PODS, name, namespace)).get(POD_NETWORKS)
    entry = json.loads(raw).get(f"{namespace}/{namespace}") if raw else None
    return str(entry["ip_addresses"][0]) if entry else None


def primary_udn(api: KubeClient, namespace: str, index: int) -> None:
    api.create(NAMESPACES, {"metadata": {"name": namespace,
                                         "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    api.create(UDNS, {"metadata": {"name": namespace, "namespace": namespace},
                      "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
                          {"cidr": f"10.{100 + index}.0.0/16", "hostSubnet": 24}]}}})


def pod(api: KubeClient, namespace: str, name: str, node: str) -> None:
    api.create(PODS, {"metadata": {"name": name, "namespace": namespace},
                      "spec": {"nodeName": node,
                               "containers": [{"name": "c", "image": "agnhost"}]}})


def state(api: KubeClient) -> dict[str, Any]:
    """Every allocation the cluster manager wrote, with each object's resourceVersion."""
    def picture(items: list[dict[str, Any]]) -> dict[str, Any]:
        return {f"{i['metadata'].get('namespace', '')}/{i['metadata']['name']}":
                (notes_of(i), i["metadata"]["resourceVersion"]) for i in items}

    return {"nodes": picture(api.list(NODES)["items"]), "pods": picture(api.list(PODS)["items"]),
            "nads": picture(api.list(NADS)["items"])}


def settle(manager: ClusterManager, quiet: float = 0.8) -> None:
    """Wait until every controller of ``manager`` has had nothing to do for ``quiet`` s."""
    since = [time.monotonic()]

    def quiet_long_enough() -> bool:
        if not all(c.queue.idle() for c in manager.controllers()):
            since[0] = time.monotonic()
        return time.monotonic() - since[0] >= quiet

    wait_until(quiet_long_enough, timeout=60)


def writes(proxy: FaultProxy) -> list[tuple[str, str]]:
    """What the cluster manager wrote (its lease and its events aside)."""
    return [(method, path) for method, path in proxy.requests
            if method != "GET" and "/leases" not in path and "/events" not in path]


@pytest.fixture
def populated(client: KubeClient) -> Iterator[KubeClient]:
    """Three nodes, NETWORKS primary Layer3 UDNs, one pod in each, all allocated by a first
    cluster manager, which is then stopped."""
    client.create(NODES, {"metadata": {"name": "ovn-worker3"}})
    first = ClusterManager(CONFIG, client, PluginHost.load(CONFIG), identity="first")
    first.start_controllers()
    try:
        for index in range(NETWORKS):
            primary_udn(client, f"net{index}", index)
        wait_until(lambda: all(len(node_subnets(client, n)) == NETWORKS + 1
                               for n in NODE_NAMES), timeout=90)
        for index in range(NETWORKS):
            pod(client, f"net{index}", "p", NODE_NAMES[index % 3])
        wait_until(lambda: all(pod_ip(client, f"net{i}", "p") for i in range(NETWORKS)),
                   timeout=60)
        settle(first)
    finally:
        first.stop_controllers()
    yield client


@pytest.fixture
def proxy(kube_apiserver: ServerHandle) -> Iterator[FaultProxy]:
    fault_proxy = FaultProxy(kube_apiserver.url, ssl_context_for(kube_apiserver)).start()
    yield fault_proxy
    fault_proxy.stop()


def manager_through(proxy: FaultProxy, identity: str) -> ClusterManager:
    """A fresh cluster manager whose every request goes through ``proxy`` (admin)."""
    configuration = k8s.Configuration()
    configuration.host = proxy.url
    return ClusterManager(CONFIG, KubeClient(k8s.ApiClient(configuration)),
                          PluginHost.load(CONFIG), identity=identity)


def slow_nad_reconciles(nad: NadController, seconds: float) -> None:
    """Make every NAD reconcile take ``seconds`` longer: networks register one by one."""
    inner = nad.controller.reconcile

    def slow(key: str) -> None:
        time.sleep(seconds)
        inner(key)

    nad.controller.reconcile = slow


def test_restart_with_late_nads_rewrites_and_moves_nothing(
        populated: KubeClient, proxy: FaultProxy) -> None:
    before = state(populated)
    manager = manager_through(proxy, "second")
    assert manager.nad is not None
    proxy.delay(2.0, match=NAD_LIST)  # the NAD informer's first list comes late
    slow_nad_reconciles(manager.nad, 0.03)  # and the networks register one by one
    seen_at_start: dict[str, int] = {}
    for name, allocator in (("nodes", manager.nodes), ("pods", manager.pods)):
        def gated_sync(inner: Callable[[], None] = allocator.sync, name: str = name) -> None:
            inner()
            seen_at_start[name] = len(manager.registry_networks.networks())
        allocator.controller.initial_sync = gated_sync
    manager.start_controllers()
    try:
        settle(manager)
        # the allocators started only once every network was registered
        assert seen_at_start == {"nodes": NETWORKS, "pods": NETWORKS}
        assert writes(proxy) == []
        assert state(populated) == before
        # and the manager is live: new pods get addresses no other pod holds
        for index in range(NETWORKS):
            pod(populated, f"net{index}", "q", NODE_NAMES[index % 3])
        wait_until(lambda: all(pod_ip(populated, f"net{i}", "q") for i in range(NETWORKS)),
                   timeout=60)
        for index in range(NETWORKS):
            old, new = (pod_ip(populated, f"net{index}", n) for n in ("p", "q"))
            assert old is not None and new is not None and old != new
            assert ipaddress.ip_interface(new).network == ipaddress.ip_interface(old).network
    finally:
        manager.stop_controllers()


class AlwaysSynced:
    """A catalog that lets the allocators start at once (the gate bypassed), but still
    says which networks exist: what is left is the allocators' own rule never to drop a
    network the registry does not know yet."""

    def __init__(self, nad: NadController) -> None:
        self.nad = nad

    def wait_synced(self, timeout: float | None = None) -> bool:
        return True

    def network_exists(self, network: str) -> bool:
        return self.nad.network_exists(network)

    def networks_left(self) -> int:
        return 0


def test_allocation_racing_arriving_networks_keeps_every_allocation(
        populated: KubeClient, proxy: FaultProxy) -> None:
    before = {node: node_subnets(populated, node) for node in NODE_NAMES}
    pods_before = state(populated)["pods"]
    manager = manager_through(proxy, "racer")
    assert manager.nad is not None
    manager.nodes.catalog = manager.pods.catalog = AlwaysSynced(manager.nad)
    slow_nad_reconciles(manager.nad, 0.1)
    def create_late_networks() -> None:
        for index in range(4):
            primary_udn(populated, f"late{index}", 60 + index)

    arriving = threading.Thread(target=create_late_networks)
    arriving.start()
    manager.start_controllers()
    try:
        # allocation has started while the registry still fills
        assert len(manager.registry_networks.networks()) < NETWORKS
        for index in range(NETWORKS):  # new pods while their networks may not be known yet
            pod(populated, f"net{index}", "q", NODE_NAMES[index % 3])
        arriving.join()
        wait_until(lambda: all(len(node_subnets(populated, n)) == NETWORKS + 5
                               for n in NODE_NAMES), timeout=90)
        wait_until(lambda: all(pod_ip(populated, f"net{i}", "q") for i in range(NETWORKS)),
                   timeout=60)
        settle(manager)
        after = {node: node_subnets(populated, node) for node in NODE_NAMES}
        for node in NODE_NAMES:  # no existing subnet moved or was dropped on the way
            assert {k: v for k, v in after[node].items() if k in before[node]} == before[node]
        for network in after[NODE_NAMES[0]]:  # every network's slices stay distinct
            slices = [after[node][network][0] for node in NODE_NAMES]
            assert len(set(slices)) == len(NODE_NAMES), (network, slices)
        subnet_writes = [w for w in writes(proxy) if "/nodes/" in w[1]]
        # nodes were written for the four new networks only (one write per node each)
        assert len(subnet_writes) <= 4 * len(NODE_NAMES)
        pods_after = state(populated)["pods"]
        for key, (notes, _rv) in pods_before.items():
            assert pods_after[key][0] == notes  # no pod annotation rewritten
        for index in range(NETWORKS):
            old, new = (pod_ip(populated, f"net{index}", n) for n in ("p", "q"))
            assert old != new  # the held-aside address was reserved before allocating
    finally:
        manager.stop_controllers()


def test_a_network_whose_nad_turns_invalid_keeps_its_subnets_until_it_is_deleted(
        client: KubeClient, start_manager: Callable[[], ClusterManager]) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "side"}})
    config = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "side_l3",
              "netAttachDefName": "side/l3", "topology": "layer3", "role": "secondary",
              "subnets": "10.210.0.0/16/24"}
    client.create(NADS, {"metadata": {"name": "l3", "namespace": "side"},
                         "spec": {"config": json.dumps(config)}})
    first = start_manager()
    wait_until(lambda: all("side_l3" in node_subnets(client, n)
                           for n in ("ovn-worker", "ovn-worker2")))
    before = {n: node_subnets(client, n) for n in ("ovn-worker", "ovn-worker2")}
    first.stop_controllers()
    nad = client.get(NADS, "l3", "side")
    nad["spec"]["config"] = json.dumps({**config, "topology": "layer9"})
    client.update(NADS, nad)
    second = start_manager()
    # the NAD it was accepted by now names a topology no plugin provides: the network is
    # not rendered, yet keeps what it was given (its ID, its nodes' subnets)
    wait_until(lambda: any(e["reason"] == "NetworkNotRendered" and e["message"].startswith(
        'network side_l3 is not rendered: no enabled topology plugin provides topology "layer9"')
        for e in client.list(EVENTS, "side")["items"]))
    client.create(NODES, {"metadata": {"name": "ovn-worker3"}})  # churn: every node reconciled
    wait_until(lambda: node_subnets(client, "ovn-worker3").get("default"))
    settle(second)
    assert {n: node_subnets(client, n) for n in ("ovn-worker", "ovn-worker2")} == before
    assert "side_l3" not in node_subnets(client, "ovn-worker3")
    client.delete(NADS, "l3", "side")  # now the network is gone: its slices are freed
    wait_until(lambda: not any("side_l3" in node_subnets(client, n)
                               for n in ("ovn-worker", "ovn-worker2")))


class NeverSynced:
    def wait_synced(self, timeout: float | None = None) -> bool:
        time.sleep(min(timeout or 0.0, 0.01))
        return False

    def network_exists(self, network: str) -> bool:
        return False

    def networks_left(self) -> int:
        return 3


def test_allocators_refuse_to_start_on_a_partial_view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(network_catalog, "NETWORKS_SYNC_TIMEOUT", 0.05)
    with pytest.raises(NetworksNotSynced, match=r"^node allocator: 3 existing network\(s\) "
                       r"still not registered after 0s; not allocating on a partial view"):
        wait_for_networks(NeverSynced(), "node allocator")


def test_a_manager_that_cannot_start_exits_instead_of_hanging(
        kube_apiserver: ServerHandle, client: KubeClient,
        monkeypatch: pytest.MonkeyPatch) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "ovn-kubernetes"}})
    manager = ClusterManager(CONFIG, client, PluginHost.load(CONFIG), identity="stuck")
    manager.nodes.catalog = NeverSynced()
    monkeypatch.setattr(network_catalog, "NETWORKS_SYNC_TIMEOUT", 0.05)
    stop = threading.Event()
    raised: list[BaseException] = []

    def run() -> None:
        try:
            manager.run(stop, None)
        except BaseException as exc:  # what makes the process exit non-zero
            raised.append(exc)

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    runner.join(timeout=30)
    stop.set()
    assert not runner.is_alive()  # run() returned by itself: the process exits
    assert [type(exc) for exc in raised] == [network_catalog.NetworksNotSynced]
    assert "not allocating on a partial view of the networks" in str(raised[0])
    assert not any("k8s.ovn.org/node-id" in notes_of(n)
                   for n in client.list(NODES)["items"])  # and allocated nothing
