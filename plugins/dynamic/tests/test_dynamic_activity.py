"""Dynamic allocation's NetworkActivity over real informers of a local API server: a UDN's
network is active only on nodes whose pods use it, for a grace period after, and a
standalone NAD's network everywhere."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from ovnk_dynamic.activity import DynamicActivity
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import with_crds

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import CUDNS, NADS, NAMESPACES, PODS
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.unit


class ManualTimers:
    """Grace periods that end when the test says so."""

    def __init__(self) -> None:
        self.pending: list[ManualTimer] = []

    def __call__(self, delay: float, function: Callable[[], None]) -> ManualTimer:
        timer = ManualTimer(delay, function)
        self.pending.append(timer)
        return timer

    def fire_all(self) -> None:
        timers, self.pending = self.pending, []
        for timer in timers:
            if not timer.cancelled:
                timer.function()


class ManualTimer:
    def __init__(self, delay: float, function: Callable[[], None]) -> None:
        self.delay, self.function, self.cancelled = delay, function, False

    def cancel(self) -> None:
        self.cancelled = True


OWNER: dict[str, str] = {}  # the CUDN standing in as every owned NAD's owner (its uid)


def nad(namespace: str, name: str, network: str, role: str, owned: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if owned:  # (the API server's garbage collector removes NADs whose owner is missing)
        meta["ownerReferences"] = [{"apiVersion": "k8s.ovn.org/v1", "kind":
                                    "ClusterUserDefinedNetwork", "name": "owner",
                                    "uid": OWNER["uid"], "controller": True,
                                    "blockOwnerDeletion": True}]
    return {"metadata": meta, "spec": {"config": json.dumps({
        "cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": network,
        "netAttachDefName": f"{namespace}/{name}", "topology": "layer3", "role": role,
        "subnets": "10.50.0.0/16/24"})}}


def pod(namespace: str, name: str, node: str, selections: str = "") -> dict[str, Any]:
    annotations = {"k8s.v1.cni.cncf.io/networks": selections} if selections else {}
    return {"metadata": {"name": name, "namespace": namespace, "annotations": annotations},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}}


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    api = with_crds(kube_apiserver)
    for namespace in ("blue", "side"):
        api.create(NAMESPACES, {"metadata": {"name": namespace}})
    owner = api.create(CUDNS, {"metadata": {"name": "owner"}, "spec": {
        "namespaceSelector": {"matchLabels": {"selects": "nothing"}},
        "network": {"topology": "Layer2", "layer2": {"role": "Secondary",
                                                     "subnets": ["10.99.0.0/24"]}}}})
    OWNER["uid"] = owner["metadata"]["uid"]
    return api


@pytest.fixture
def timers() -> ManualTimers:
    return ManualTimers()


@pytest.fixture
def activity(client: KubeClient, timers: ManualTimers) -> Iterator[DynamicActivity]:
    informers = InformerFactory(client, resync_period=0)
    running = DynamicActivity(informers, 120.0, timer=timers)
    informers.start()
    informers.wait_for_sync(10)
    running.start()
    yield running
    running.stop()
    informers.stop()


def test_a_udn_is_active_where_its_pods_are_and_leaves_after_the_grace_period(
        client: KubeClient, activity: DynamicActivity, timers: ManualTimers) -> None:
    told: list[tuple[str, str]] = []
    activity.add_listener(lambda network, node: told.append((network, node)))
    client.create(NADS, nad("blue", "net", "blue_net", "primary", owned=True))
    wait_until(lambda: activity.active_nodes("blue_net") == frozenset())
    assert not activity.is_active("blue_net", "ovn-worker")
    client.create(PODS, pod("blue", "a", "ovn-worker"))  # its namespace's primary network
    wait_until(lambda: activity.is_active("blue_net", "ovn-worker"))
    assert not activity.is_active("blue_net", "ovn-worker2")
    assert ("blue_net", "ovn-worker") in told
    # the last pod goes: still active during the grace period
    client.delete(PODS, "a", "blue")
    wait_until(lambda: len(timers.pending) == 1)
    assert activity.is_active("blue_net", "ovn-worker")
    timers.fire_all()
    assert not activity.is_active("blue_net", "ovn-worker")
    assert told[-1] == ("blue_net", "ovn-worker")


def test_a_new_pod_in_the_grace_period_keeps_the_network(
        client: KubeClient, activity: DynamicActivity, timers: ManualTimers) -> None:
    client.create(NADS, nad("blue", "net", "blue_net", "primary", owned=True))
    client.create(PODS, pod("blue", "a", "ovn-worker"))
    wait_until(lambda: activity.is_active("blue_net", "ovn-worker"))
    client.delete(PODS, "a", "blue")
    wait_until(lambda: len(timers.pending) == 1)
    client.create(PODS, pod("blue", "b", "ovn-worker"))
    wait_until(lambda: timers.pending[0].cancelled)
    timers.fire_all()
    assert activity.is_active("blue_net", "ovn-worker")


def test_secondary_selections_count_and_standalone_nads_are_everywhere(
        client: KubeClient, activity: DynamicActivity) -> None:
    client.create(NADS, nad("side", "udn", "side_udn", "secondary", owned=True))
    client.create(NADS, nad("side", "plain", "side_plain", "secondary", owned=False))
    wait_until(lambda: activity.active_nodes("side_udn") == frozenset())
    assert activity.active_nodes("side_plain") is None  # not filtered: every node
    assert activity.is_active("side_plain", "any-node")
    assert activity.active_nodes("default") is None
    client.create(PODS, pod("side", "p", "ovn-worker2", selections="udn"))
    wait_until(lambda: activity.active_nodes("side_udn") == frozenset({"ovn-worker2"}))


def test_what_a_component_found_rendered_is_kept_for_a_grace_period_only(
        client: KubeClient, activity: DynamicActivity, timers: ManualTimers) -> None:
    client.create(NADS, nad("blue", "net", "blue_net", "primary", owned=True))
    wait_until(lambda: activity.active_nodes("blue_net") == frozenset())
    activity.assume_active("blue_net", "ovn-worker2")
    assert activity.is_active("blue_net", "ovn-worker2")
    timers.fire_all()
    assert not activity.is_active("blue_net", "ovn-worker2")


def test_grace_zero_deactivates_at_once(client: KubeClient) -> None:
    informers = InformerFactory(client, resync_period=0)
    activity = DynamicActivity(informers, 0.0)
    informers.start()
    try:
        informers.wait_for_sync(10)
        activity.start()
        client.create(NADS, nad("blue", "net", "blue_net", "primary", owned=True))
        client.create(PODS, pod("blue", "a", "ovn-worker"))
        wait_until(lambda: activity.is_active("blue_net", "ovn-worker"))
        client.delete(PODS, "a", "blue")
        wait_until(lambda: not activity.is_active("blue_net", "ovn-worker"))
    finally:
        activity.stop()
        informers.stop()
