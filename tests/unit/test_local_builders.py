"""Pure builders of the local cluster's stand-ins and of status conditions."""

from __future__ import annotations

import json

import pytest
from ovnk_local.cluster import build_node, node_names
from ovnk_local.endpointslices import (
    CONTROLLER_NAME,
    MANAGED_BY_LABEL,
    MAX_ENDPOINTS_PER_SLICE,
    SERVICE_NAME_LABEL,
    build_slices,
)
from ovnk_local.pod_status import (
    UnusablePodNetworks,
    build_running_status,
    pod_ips_from_annotation,
)
from ovnk_local.scheduler import choose_node

from ovnk_core.kube.conditions import Condition, merge_condition


def pod(name: str, ips: list[str], labels: dict[str, str] | None = None, ready: bool = True,
        node: str = "ovn-worker", terminating: bool = False,
        ports: list[dict[str, object]] | None = None) -> dict[str, object]:
    meta: dict[str, object] = {"name": name, "namespace": "blue", "uid": f"uid-{name}",
                               "labels": labels if labels is not None else {"app": "web"}}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta,
            "spec": {"nodeName": node, "containers": [{"name": "c", "ports": ports or []}]},
            "status": {"phase": "Running", "podIPs": [{"ip": ip} for ip in ips],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def service(ports: list[dict[str, object]] | None = None,
            families: list[str] | None = None) -> dict[str, object]:
    spec: dict[str, object] = {"selector": {"app": "web"},
                               "ports": ports or [{"name": "http", "port": 80,
                                                   "targetPort": 8080, "protocol": "TCP"}]}
    if families:
        spec["ipFamilies"] = families
    return {"metadata": {"name": "web", "namespace": "blue", "uid": "svc-uid"}, "spec": spec}


def test_slices_have_upstream_labels_ports_and_conditions() -> None:
    pods = [pod("b", ["10.244.1.4"]), pod("a", ["10.244.0.3"], ready=False),
            pod("t", ["10.244.0.9"], terminating=True), pod("other", ["10.244.0.5"], labels={})]
    [slice_] = build_slices(service(), pods)
    assert slice_["addressType"] == "IPv4"
    assert slice_["metadata"]["labels"] == {SERVICE_NAME_LABEL: "web",
                                            MANAGED_BY_LABEL: CONTROLLER_NAME}
    assert slice_["ports"] == [{"name": "http", "protocol": "TCP", "port": 8080}]
    addresses = [e["addresses"][0] for e in slice_["endpoints"]]
    assert addresses == ["10.244.0.3", "10.244.0.9", "10.244.1.4"]
    conditions = {e["addresses"][0]: e["conditions"] for e in slice_["endpoints"]}
    assert conditions["10.244.0.3"] == {"ready": False, "serving": False, "terminating": False}
    assert conditions["10.244.0.9"] == {"ready": False, "serving": True, "terminating": True}
    assert conditions["10.244.1.4"] == {"ready": True, "serving": True, "terminating": False}
    assert slice_["endpoints"][2]["targetRef"] == {"kind": "Pod", "namespace": "blue",
                                                   "name": "b", "uid": "uid-b"}
    assert slice_["endpoints"][2]["nodeName"] == "ovn-worker"


def test_dual_stack_service_gets_one_slice_per_family() -> None:
    pods = [pod("a", ["10.244.0.3", "fd00:10:244::3"])]
    slices = build_slices(service(families=["IPv4", "IPv6"]), pods)
    assert [(s["addressType"], s["endpoints"][0]["addresses"]) for s in slices] == [
        ("IPv4", ["10.244.0.3"]), ("IPv6", ["fd00:10:244::3"])]
    assert [s["addressType"] for s in build_slices(service(), pods)] == ["IPv4"]


def test_at_most_100_endpoints_per_slice() -> None:
    pods = [pod(f"p{i}", [f"10.244.{i // 250}.{i % 250 + 1}"]) for i in range(250)]
    slices = build_slices(service(), pods)
    assert [len(s["endpoints"]) for s in slices] == [MAX_ENDPOINTS_PER_SLICE] * 2 + [50]


def test_named_target_ports_resolve_per_pod() -> None:
    svc = service(ports=[{"name": "http", "port": 80, "targetPort": "web", "protocol": "TCP"}])
    pods = [pod("a", ["10.244.0.3"], ports=[{"name": "web", "containerPort": 8080}]),
            pod("b", ["10.244.0.4"], ports=[{"name": "web", "containerPort": 9090}]),
            pod("c", ["10.244.0.5"])]  # no such port: not an endpoint
    slices = build_slices(svc, pods)
    assert sorted((s["ports"][0]["port"], s["endpoints"][0]["addresses"][0]) for s in slices) \
        == [(8080, "10.244.0.3"), (9090, "10.244.0.4")]


def test_service_without_selector_has_no_slices() -> None:
    svc = service()
    svc["spec"]["selector"] = {}  # type: ignore[index]
    assert build_slices(svc, [pod("a", ["10.244.0.3"])]) == []


def test_scheduler_picks_least_loaded_ready_matching_node() -> None:
    nodes = [build_node(name, i) for i, name in enumerate(node_names(3))]
    nodes[2]["status"]["conditions"][0]["status"] = "False"  # type: ignore[index]
    nodes[1]["metadata"]["labels"]["zone"] = "b"  # type: ignore[index]
    plain: dict[str, object] = {"spec": {}}
    assert choose_node(plain, nodes, {"ovn-worker": 3, "ovn-worker2": 1}) == "ovn-worker2"
    assert choose_node(plain, nodes, {"ovn-worker": 0, "ovn-worker2": 1}) == "ovn-worker"
    assert choose_node({"spec": {"nodeSelector": {"zone": "b"}}}, nodes, {}) == "ovn-worker2"
    assert choose_node({"spec": {"nodeSelector": {"zone": "c"}}}, nodes, {}) is None
    assert node_names(3) == ["ovn-worker", "ovn-worker2", "ovn-worker3"]


def test_kubelet_reads_default_network_ips_from_annotation() -> None:
    annotation = {"default": {"ip_addresses": ["10.244.1.3/24", "fd00:10:244:2::3/64"],
                              "mac_address": "0a:58:0a:f4:01:03",
                              "role": "infrastructure-locked"},
                  "blue/blue": {"ip_addresses": ["10.100.1.3/24"],
                                "mac_address": "0a:58:0a:64:01:03", "role": "primary"}}
    obj = {"metadata": {"name": "p", "annotations": {
        "k8s.ovn.org/pod-networks": json.dumps(annotation)}}}
    assert pod_ips_from_annotation(obj) == ["10.244.1.3", "fd00:10:244:2::3"]
    assert pod_ips_from_annotation({"metadata": {"name": "p"}}) is None
    not_wired = {"metadata": {"name": "p", "namespace": "x", "annotations": {
        "k8s.ovn.org/pod-networks": json.dumps({"x/side": annotation["blue/blue"]})}}}
    assert pod_ips_from_annotation(not_wired) is None  # no default entry yet: wait


@pytest.mark.parametrize(("raw", "problem"), [
    ("{not json", "k8s.ovn.org/pod-networks is not valid JSON: Expecting property name "
                  "enclosed in double quotes: line 1 column 2 (char 1)"),
    ("[1]", "k8s.ovn.org/pod-networks must be a JSON object"),
    ('{"default": 5}', "k8s.ovn.org/pod-networks entry 'default' must be a JSON object, got int"),
    ('{"default": {"ip_addresses": 5}}',
     "invalid pod network entry {'ip_addresses': 5}: ip_addresses must be a list, got int"),
    ('{"default": {"ip_addresses": [5]}}',
     "invalid pod network entry {'ip_addresses': [5]}: ip_addresses must be a list of strings"),
    ('{"default": {"ip_address": 5}}',
     "invalid pod network entry {'ip_address': 5}: ip_address must be a string, got int"),
    ('{"default": {"ip_addresses": ["10.244.1.300/24"]}}',
     "invalid pod network entry {'ip_addresses': ['10.244.1.300/24']}: '10.244.1.300/24' does "
     "not appear to be an IPv4 or IPv6 interface"),
    ('{"default": {"ip_addresses": ["10.244.1.3/24"], "mac_address": "0a:58:0a:f4:01:03"}, '
     '"x/side": {"mac_address": "x"}}',
     "invalid pod network entry {'mac_address': 'x'}: failed to parse pod MAC 'x'"),
], ids=["not-json", "not-object", "entry-not-object", "number", "list-of-numbers",
        "legacy-number", "bad-cidr", "other-entry-forged"])
def test_kubelet_refuses_unusable_annotations(raw: str, problem: str) -> None:
    obj = {"metadata": {"name": "p", "namespace": "x",
                        "annotations": {"k8s.ovn.org/pod-networks": raw}}}
    with pytest.raises(UnusablePodNetworks) as info:
        pod_ips_from_annotation(obj)
    assert str(info.value) == f"k8s.ovn.org/pod-networks of pod x/p is unusable: {problem}"


def test_running_status_keeps_transition_times() -> None:
    obj = pod("a", [])
    first = build_running_status(obj, ["10.244.0.3"], ["172.18.0.2"], "T1")
    assert first["podIP"] == "10.244.0.3" and first["hostIP"] == "172.18.0.2"
    assert {c["type"] for c in first["conditions"]} == {"PodScheduled", "Initialized",
                                                        "ContainersReady", "Ready"}
    obj["status"] = first
    again = build_running_status(obj, ["10.244.0.3"], ["172.18.0.2"], "T2")
    assert all(c["lastTransitionTime"] == "T1" for c in again["conditions"])


def test_condition_merge_by_type_and_transition_time() -> None:
    conditions, changed = merge_condition([], Condition("NetworkCreated", "False", "SyncError",
                                                        "boom"), "T1")
    assert changed and conditions[0]["lastTransitionTime"] == "T1"
    same, changed = merge_condition(conditions, Condition("NetworkCreated", "False",
                                                          "SyncError", "boom"), "T2")
    assert not changed and same == conditions
    message, changed = merge_condition(conditions, Condition("NetworkCreated", "False",
                                                             "SyncError", "other"), "T3")
    assert changed and message[0]["lastTransitionTime"] == "T1"
    flipped, changed = merge_condition(message, Condition(
        "NetworkCreated", "True", "NetworkAttachmentDefinitionCreated",
        "NetworkAttachmentDefinition has been created"), "T4")
    assert changed and flipped[0]["lastTransitionTime"] == "T4"
    both, _ = merge_condition(flipped, Condition("NetworkAllocationSucceeded", "True",
                                                 "NetworkAllocationSucceeded", "ok"), "T5")
    assert [c["type"] for c in both] == ["NetworkCreated", "NetworkAllocationSucceeded"]
