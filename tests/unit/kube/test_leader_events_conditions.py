"""Leader election, deduplicated events and status conditions against the local API server."""

from __future__ import annotations

import threading
import time

from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.conditions import Condition, set_conditions
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.leader import LeaderElector
from ovnk_core.kube.resources import CRDS, EVENTS, LEASES, NAMESPACES, UDNS
from ovnk_core.manifests.crds import build_crds
from ovnk_core.testing.waiting import wait_until


def make(kube_apiserver: ServerHandle) -> KubeClient:
    return KubeClient(client_for(kube_apiserver))


def test_only_one_candidate_leads_and_the_other_takes_over(kube_apiserver: ServerHandle) -> None:
    client = make(kube_apiserver)
    client.create(NAMESPACES, {"metadata": {"name": "ovn-kubernetes"}})
    started: list[str] = []
    stopped: list[str] = []

    def elector(identity: str) -> LeaderElector:
        return LeaderElector(client, "test-lease", "ovn-kubernetes", identity,
                             lease_duration=1.5, renew_deadline=1.0, retry_period=0.2,
                             on_started=lambda: started.append(identity),
                             on_stopped=lambda: stopped.append(identity))

    first, second = elector("a").start(), elector("b").start()
    try:
        wait_until(lambda: started)
        time.sleep(1.0)
        assert len(started) == 1  # the other candidate keeps waiting
        leader = first if started[0] == "a" else second
        other = second if leader is first else first
        lease = client.get(LEASES, "test-lease", "ovn-kubernetes")
        assert lease["spec"]["holderIdentity"] == started[0]
        leader.stop()  # releases the lease
        wait_until(lambda: len(started) == 2)
        assert started[1] == other.identity and stopped == [leader.identity]
        lease = client.get(LEASES, "test-lease", "ovn-kubernetes")
        assert lease["spec"]["holderIdentity"] == other.identity
        assert lease["spec"]["leaseTransitions"] >= 1
    finally:
        first.stop()
        second.stop()


def test_expired_lease_of_a_dead_holder_is_taken(kube_apiserver: ServerHandle) -> None:
    client = make(kube_apiserver)
    client.create(NAMESPACES, {"metadata": {"name": "ovn-kubernetes"}})
    client.create(LEASES, {"metadata": {"name": "l", "namespace": "ovn-kubernetes"},
                           "spec": {"holderIdentity": "dead", "leaseDurationSeconds": 1,
                                    "renewTime": "2020-01-01T00:00:00.000000Z"}})
    candidate = LeaderElector(client, "l", "ovn-kubernetes", "alive", lease_duration=3,
                              renew_deadline=2, retry_period=1)
    assert candidate.try_acquire_or_renew()
    fresh = LeaderElector(client, "l", "ovn-kubernetes", "late", lease_duration=3,
                          renew_deadline=2, retry_period=1)
    assert not fresh.try_acquire_or_renew()  # a live holder keeps it


def test_events_are_deduplicated_with_a_count(kube_apiserver: ServerHandle) -> None:
    client = make(kube_apiserver)
    recorder = EventRecorder(client, "ovnkube-cluster-manager", "host-1")
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "default", "uid": "u-1"}}
    for _ in range(3):
        recorder.event(pod, WARNING, "ErrorReconcilingPod", "no primary network yet")
    recorder.event(pod, WARNING, "ErrorReconcilingPod", "something else")
    events = client.list(EVENTS, "default")["items"]
    by_message = {e["message"]: e for e in events}
    assert len(events) == 2
    first = by_message["no primary network yet"]
    assert first["count"] == 3 and first["type"] == "Warning"
    assert first["involvedObject"]["uid"] == "u-1"
    assert first["source"]["component"] == "ovnkube-cluster-manager"


def test_event_failures_never_raise(kube_apiserver: ServerHandle) -> None:
    recorder = EventRecorder(make(kube_apiserver), "c")
    recorder.event({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "p", "namespace": "no-such-ns", "uid": "u"}},
                   WARNING, "R", "m")


def test_conditions_go_through_the_status_subresource(kube_apiserver: ServerHandle) -> None:
    client = make(kube_apiserver)
    for crd in build_crds():
        client.create(CRDS, crd)
    client.create(NAMESPACES, {"metadata": {"name": "blue"}})
    wait_until(lambda: _served(client))
    udn = client.create(UDNS, {"metadata": {"name": "blue", "namespace": "blue"},
                               "spec": {"topology": "Layer3", "layer3": {
                                   "role": "Primary", "subnets": [{"cidr": "10.1.0.0/16"}]}}})
    condition = Condition("NetworkCreated", "False", "SyncError", "boom")
    updated = set_conditions(client, UDNS, udn, [condition], now="2026-01-01T00:00:00Z")
    assert updated is not None
    assert updated["metadata"]["generation"] == udn["metadata"]["generation"]
    assert set_conditions(client, UDNS, updated, [condition]) is None  # nothing changed
    flipped = set_conditions(client, UDNS, updated, [Condition(
        "NetworkCreated", "True", "NetworkAttachmentDefinitionCreated", "ok")],
        now="2026-01-02T00:00:00Z")
    assert flipped is not None
    [stored] = flipped["status"]["conditions"]
    assert (stored["status"], stored["lastTransitionTime"]) == ("True", "2026-01-02T00:00:00Z")
    assert flipped["spec"] == udn["spec"]


def _served(client: KubeClient) -> bool:
    try:
        client.list(UDNS)
        return True
    except Exception:
        return False


def test_threads_do_not_leak(kube_apiserver: ServerHandle) -> None:
    before = threading.active_count()
    client = make(kube_apiserver)
    client.create(NAMESPACES, {"metadata": {"name": "ovn-kubernetes"}})
    elector = LeaderElector(client, "t", "ovn-kubernetes", "x", lease_duration=1.5,
                            renew_deadline=1.0, retry_period=0.2).start()
    wait_until(elector.is_leader.is_set)
    elector.stop()
    wait_until(lambda: threading.active_count() <= before + 1)
