"""The EndpointSlice mirror controller against the local API server (real HTTP and versions).

Named after upstream's scenarios where they exist: namespace ``testns`` with primary
network ``l3-network``, pod default IP 10.244.2.3 with primary IP 10.132.2.4, source slice
``default-endpointslice`` of service ``svc2``.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from ovnk_mirror.controller import FAILED_REASON, MAX_RETRIES
from ovnk_mirror.mirror import (
    MANAGED_BY_LABEL,
    MIRROR_CONTROLLER,
    NETWORK_ANNOTATION,
    SOURCE_ANNOTATION,
    SOURCE_VERSION_ANNOTATION,
    UDN_SERVICE_NAME_LABEL,
)
from ovnk_mirror.testing import DEFAULT_MANAGER, MirrorEnv, endpoint, mirror_addresses

from ovnk_core.kube.backoff import Backoff
from ovnk_core.kube.resources import ENDPOINTSLICES, EVENTS, PODS
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.unit
NS = "testns"
NAD = f"{NS}/l3-network"
Start = Callable[..., object]


def udn_namespace(env: MirrorEnv) -> None:
    env.namespace(NS)
    env.primary_network(NS)
    env.pod(NS, "test-pod", {"default": ["10.244.2.3/24"], NAD: ["10.132.2.4/24"]})


def test_startup_repair_deletes_stale_mirrors_and_creates_missing_ones(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    svc = mirror_env.service(NS)
    mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")])
    stale = mirror_env.client.create(ENDPOINTSLICES, {
        "metadata": {"name": "l3-network-svc2-stale", "namespace": NS,
                     "labels": {MANAGED_BY_LABEL: MIRROR_CONTROLLER,
                                UDN_SERVICE_NAME_LABEL: "svc2"},
                     "annotations": {SOURCE_ANNOTATION: "non-existing-source"}},
        "addressType": "IPv4", "endpoints": [endpoint(NS, "test-pod", "10.132.2.9")]}, NS)
    start_mirror()
    mirror = mirror_env.the_mirror(NS, addresses=["10.132.2.4"])
    wait_until(lambda: not mirror_env.mirrors(NS, "non-existing-source"),
               what="the stale mirror to be deleted")
    assert stale["metadata"]["name"] not in {m["metadata"]["name"]
                                             for m in mirror_env.mirrors(NS)}
    meta = mirror["metadata"]
    assert meta["labels"] == {MANAGED_BY_LABEL: MIRROR_CONTROLLER,
                              UDN_SERVICE_NAME_LABEL: "svc2"}
    assert "kubernetes.io/service-name" not in meta["labels"]
    source = mirror_env.client.get(ENDPOINTSLICES, "default-endpointslice", NS)
    assert meta["annotations"] == {
        SOURCE_ANNOTATION: "default-endpointslice",
        SOURCE_VERSION_ANNOTATION: source["metadata"]["resourceVersion"],
        NETWORK_ANNOTATION: "l3-network"}
    assert meta["generateName"] == "l3-network-default-endpointslice"
    assert meta["name"].startswith("l3-network-default-endpointslice")
    assert meta["ownerReferences"] == source["metadata"]["ownerReferences"]
    assert mirror["ports"] == source["ports"] and mirror["addressType"] == "IPv4"
    [mirrored] = mirror["endpoints"]
    [original] = source["endpoints"]
    assert mirrored == {**original, "addresses": ["10.132.2.4"]}


def test_no_mirrors_in_namespaces_without_a_primary_user_defined_network(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    mirror_env.namespace(NS)
    mirror_env.pod(NS, "test-pod", {"default": ["10.244.2.3/24"]})
    start_mirror()
    svc = mirror_env.service(NS)
    mirror_env.settle(lambda: mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")]))
    assert mirror_env.mirrors(NS) == []


def test_mirrors_follow_source_updates_and_deletion(mirror_env: MirrorEnv,
                                                    start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    mirror_env.pod(NS, "test-pod-2", {"default": ["10.244.2.4/24"], NAD: ["10.132.2.5/24"]})
    svc = mirror_env.service(NS)
    start_mirror()
    source = mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")])
    first = mirror_env.the_mirror(NS, addresses=["10.132.2.4"])
    source["endpoints"].append(endpoint(NS, "test-pod-2", "10.244.2.4"))
    updated = mirror_env.client.update(ENDPOINTSLICES, source)
    second = mirror_env.the_mirror(NS, addresses=["10.132.2.4", "10.132.2.5"])
    assert second["metadata"]["name"] == first["metadata"]["name"]  # updated, not replaced
    assert second["metadata"]["annotations"][SOURCE_VERSION_ANNOTATION] == \
        updated["metadata"]["resourceVersion"]
    mirror_env.client.delete(ENDPOINTSLICES, "default-endpointslice", NS)
    wait_until(lambda: mirror_env.mirrors(NS) == [], what="the mirror to be deleted")


def test_an_unchanged_source_version_writes_nothing(mirror_env: MirrorEnv,
                                                    start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    svc = mirror_env.service(NS)
    mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")])
    mirror = start_mirror()
    before = mirror_env.the_mirror(NS, addresses=["10.132.2.4"])
    mirror_env.settle(mirror.enqueue_all)  # what a resync or a network change does
    after = mirror_env.the_mirror(NS)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_long_slice_and_network_names_fall_back_to_the_source_name(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    long_network = "network" + "x" * 240
    mirror_env.namespace(NS)
    network = mirror_env.primary_network(NS, network=long_network)
    assert network == long_network
    mirror_env.pod(NS, "test-pod", {"default": ["10.244.2.3/24"], NAD: ["10.132.2.4/24"]})
    svc = mirror_env.service(NS)
    long_name = "a" * 253
    mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")], name=long_name)
    start_mirror()
    mirror = mirror_env.the_mirror(NS, source=long_name, addresses=["10.132.2.4"])
    assert mirror["metadata"]["generateName"] == long_name
    assert mirror["metadata"]["annotations"][NETWORK_ANNOTATION] == long_network
    assert len(mirror["metadata"]["name"]) <= 253


def test_namespaced_udn_network_names_are_not_valid_prefixes(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    mirror_env.namespace(NS)
    mirror_env.primary_network(NS, network=f"{NS}_l3-network")  # what a UDN renders
    mirror_env.pod(NS, "test-pod", {"default": ["10.244.2.3/24"], NAD: ["10.132.2.4/24"]})
    svc = mirror_env.service(NS)
    start_mirror()
    mirror_env.client.create(ENDPOINTSLICES, {
        "metadata": {"generateName": "svc2-", "namespace": NS,
                     "labels": {MANAGED_BY_LABEL: DEFAULT_MANAGER,
                                "kubernetes.io/service-name": "svc2"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                          "name": "svc2", "uid": svc["metadata"]["uid"]}]},
        "addressType": "IPv4", "endpoints": [endpoint(NS, "test-pod", "10.244.2.3")]}, NS)
    mirror = wait_until(lambda: (lambda m: m[0] if len(m) == 1 else None)(
        mirror_env.mirrors(NS)))
    assert mirror["metadata"]["generateName"] == "svc2-"
    assert mirror["metadata"]["annotations"][NETWORK_ANNOTATION] == f"{NS}_l3-network"


def test_dual_stack_sources_get_one_mirror_per_family(mirror_env: MirrorEnv,
                                                      start_mirror: Start) -> None:
    mirror_env.namespace(NS)
    mirror_env.primary_network(NS)
    mirror_env.pod(NS, "test-pod", {
        "default": ["10.244.2.3/24", "fd00:10:244:2::3/64"],
        NAD: ["10.132.2.4/24", "fd00:10:132:2::4/64"]})
    svc = mirror_env.service(NS)
    mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")], name="svc2-v4")
    mirror_env.source_slice(NS, svc, [("test-pod", "fd00:10:244:2::3")], name="svc2-v6",
                            address_type="IPv6")
    start_mirror()
    v4 = mirror_env.the_mirror(NS, "svc2-v4", addresses=["10.132.2.4"])
    v6 = mirror_env.the_mirror(NS, "svc2-v6", addresses=["fd00:10:132:2::4"])
    assert (v4["addressType"], v6["addressType"]) == ("IPv4", "IPv6")


def test_host_network_pods_keep_their_address(mirror_env: MirrorEnv,
                                              start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    mirror_env.pod(NS, "host-pod", host_ips=["172.18.0.3", "fc00:f853:ccd:e793::3"])
    svc = mirror_env.service(NS)
    mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3"), ("host-pod", "172.18.0.3")])
    start_mirror()
    mirror_env.the_mirror(NS, addresses=["10.132.2.4", "172.18.0.3"])


def test_other_managers_are_ignored_and_fqdn_sources_lose_their_mirrors(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    svc = mirror_env.service(NS)
    mirror = start_mirror()
    mirror_env.settle(lambda: mirror_env.source_slice(
        NS, svc, [("test-pod", "10.244.2.3")], name="custom", managed_by="someone-else"))
    assert mirror_env.mirrors(NS) == []
    fqdn = mirror_env.client.create(ENDPOINTSLICES, {
        "metadata": {"name": "fqdn-slice", "namespace": NS,
                     "labels": {MANAGED_BY_LABEL: DEFAULT_MANAGER,
                                "kubernetes.io/service-name": "svc2"}},
        "addressType": "FQDN", "endpoints": [{"addresses": ["example.com"]}]}, NS)
    assert fqdn["addressType"] == "FQDN"
    # a mirror left over for it (say, written by an older controller) goes away
    mirror_env.settle(lambda: mirror_env.client.create(ENDPOINTSLICES, {
        "metadata": {"generateName": "l3-network-fqdn-", "namespace": NS,
                     "labels": {MANAGED_BY_LABEL: MIRROR_CONTROLLER},
                     "annotations": {SOURCE_ANNOTATION: "fqdn-slice"}},
        "addressType": "IPv4", "endpoints": [endpoint(NS, "test-pod", "10.132.2.4")]}, NS))
    wait_until(lambda: mirror_env.mirrors(NS) == [], what="the FQDN mirror to be deleted")
    assert mirror.controller.stats.failures == 0


def test_empty_mirrors_are_not_created_but_existing_ones_are_emptied(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    svc = mirror_env.service(NS)
    start_mirror()
    source = mirror_env.source_slice(NS, svc, [])
    mirror_env.settle(lambda: None)
    assert mirror_env.mirrors(NS) == []
    source["endpoints"] = [endpoint(NS, "test-pod", "10.244.2.3")]
    source = mirror_env.client.update(ENDPOINTSLICES, source)
    mirror_env.the_mirror(NS, addresses=["10.132.2.4"])
    source["endpoints"] = []
    mirror_env.client.update(ENDPOINTSLICES, source)
    emptied = mirror_env.the_mirror(NS, addresses=[])
    assert emptied["endpoints"] in (None, [])


def test_duplicate_mirrors_collapse_to_one(mirror_env: MirrorEnv, start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    svc = mirror_env.service(NS)
    mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")])
    for _ in range(2):
        mirror_env.client.create(ENDPOINTSLICES, {
            "metadata": {"generateName": "dup-", "namespace": NS,
                         "labels": {MANAGED_BY_LABEL: MIRROR_CONTROLLER},
                         "annotations": {SOURCE_ANNOTATION: "default-endpointslice"}},
            "addressType": "IPv4", "endpoints": [endpoint(NS, "test-pod", "10.1.1.1")]}, NS)
    start_mirror()
    survivor = mirror_env.the_mirror(NS, addresses=["10.132.2.4"])
    assert not survivor["metadata"]["name"].startswith("dup-")


def test_a_missing_pod_annotation_is_retried_never_guessed(mirror_env: MirrorEnv,
                                                           start_mirror: Start) -> None:
    mirror_env.namespace(NS)
    mirror_env.primary_network(NS)
    mirror_env.pod(NS, "late-pod", {"default": ["10.244.2.7/24"]})  # no UDN address yet
    svc = mirror_env.service(NS)
    mirror_env.source_slice(NS, svc, [("late-pod", "10.244.2.7")])
    mirror = start_mirror()
    wait_until(lambda: mirror.controller.failures("testns/default-endpointslice") >= 1)
    assert mirror_env.mirrors(NS) == []  # never the default-network address
    mirror_env.annotate_pod(NS, "late-pod", {"default": ["10.244.2.7/24"],
                                             NAD: ["10.132.2.7/24"]})
    mirror_env.the_mirror(NS, addresses=["10.132.2.7"])


def test_a_pod_that_never_gets_its_address_is_reported_in_an_event(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    mirror_env.namespace(NS)
    mirror_env.primary_network(NS)
    svc = mirror_env.service(NS)
    mirror_env.source_slice(NS, svc, [("ghost-pod", "10.244.2.8")])  # the pod does not exist
    mirror = start_mirror(backoff=Backoff(base=0.001, cap=0.01))
    key = "testns/default-endpointslice"
    wait_until(lambda: key in mirror.controller.stats.slow_lane)
    assert mirror.controller.failures(key) > MAX_RETRIES

    def warning() -> dict[str, object] | None:
        for event in mirror_env.client.list(EVENTS, NS)["items"]:
            if event["reason"] == FAILED_REASON:
                return event
        return None

    event = wait_until(warning)
    assert event["type"] == "Warning"
    assert event["involvedObject"]["kind"] == "EndpointSlice"
    assert event["involvedObject"]["name"] == "default-endpointslice"
    assert "failed to determine the Pod IP of: testns/ghost-pod: pod testns/ghost-pod " \
           "not found" in str(event["message"])
    assert mirror_env.mirrors(NS) == []


def test_a_namespace_that_gains_its_primary_network_later_gets_its_mirrors(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    mirror_env.namespace(NS)
    mirror_env.pod(NS, "test-pod", {"default": ["10.244.2.3/24"], NAD: ["10.132.2.4/24"]})
    svc = mirror_env.service(NS)
    mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")])
    start_mirror()
    mirror_env.settle(lambda: None)
    assert mirror_env.mirrors(NS) == []
    mirror_env.primary_network(NS)
    mirror_env.the_mirror(NS, addresses=["10.132.2.4"])


def test_a_new_endpoint_waits_for_its_pod_address_and_the_mirror_stays_right(
        mirror_env: MirrorEnv, start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    mirror_env.pod(NS, "new-pod", {"default": ["10.244.2.6/24"]})  # UDN address not yet known
    svc = mirror_env.service(NS)
    source = mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")])
    mirror = start_mirror()
    mirror_env.the_mirror(NS, addresses=["10.132.2.4"])
    source["endpoints"].append(endpoint(NS, "new-pod", "10.244.2.6"))
    mirror_env.client.update(ENDPOINTSLICES, source)
    wait_until(lambda: mirror.controller.failures("testns/default-endpointslice") >= 1)
    # the mirror keeps its last correct content: no default-network address leaks into it
    assert mirror_addresses(mirror_env.the_mirror(NS)) == ["10.132.2.4"]
    # the pod's address arriving is enough (the source slice does not change again)
    mirror_env.annotate_pod(NS, "new-pod", {"default": ["10.244.2.6/24"],
                                            NAD: ["10.132.2.6/24"]})
    mirror_env.the_mirror(NS, addresses=["10.132.2.4", "10.132.2.6"])
    assert mirror_env.client.get(PODS, "new-pod", NS)


def test_rapid_source_changes_never_create_a_second_mirror(mirror_env: MirrorEnv,
                                                           start_mirror: Start) -> None:
    udn_namespace(mirror_env)
    for index in range(5, 15):
        mirror_env.pod(NS, f"pod-{index}", {"default": [f"10.244.2.{index}/24"],
                                            NAD: [f"10.132.2.{index}/24"]})
    svc = mirror_env.service(NS)
    mirror = start_mirror()
    source = mirror_env.source_slice(NS, svc, [("test-pod", "10.244.2.3")])
    for index in range(5, 15):
        source["endpoints"].append(endpoint(NS, f"pod-{index}", f"10.244.2.{index}"))
        source = mirror_env.client.update(ENDPOINTSLICES, source)
    final = mirror_env.the_mirror(NS, addresses=["10.132.2.4"] + [
        f"10.132.2.{index}" for index in range(5, 15)])
    assert final["metadata"]["annotations"][SOURCE_VERSION_ANNOTATION] == \
        source["metadata"]["resourceVersion"]
    mirror_env.settle(lambda: None)
    assert len(mirror_env.mirrors(NS)) == 1
    assert mirror.controller.stats.failures == 0
    assert mirror_addresses(final)[0] == "10.132.2.4"
