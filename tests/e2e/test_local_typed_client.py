"""The official typed client on an ``ovnk local --no-dataplane`` cluster: what issue 29 met
(``CoreV1Api().list_pod_for_all_namespaces()`` failing on the kubelet stand-in's pods), every
served kind listed and watched over what the running components wrote, and what the node
side publishes for upstream's chassis handling (``k8s.ovn.org/node-encap-ips``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from ovnk_local.cluster import LocalCluster
from ovnk_local.testing.typed_client import list_and_watch, served_kinds

from ovnk_core.kube.client import api_client_from_kubeconfig
from ovnk_core.testing.waiting import wait_until


@pytest.fixture(scope="module")
def cluster(shared_control_plane: LocalCluster) -> LocalCluster:
    """The shared 2-node cluster without a dataplane (``tests/e2e/conftest.py``); what this
    module makes is deleted after it."""
    return shared_control_plane


@pytest.fixture(scope="module")
def api(cluster: LocalCluster) -> Iterator[client.ApiClient]:
    api_client = api_client_from_kubeconfig(str(cluster.kubeconfig))
    yield api_client
    api_client.close()


def _running(core: client.CoreV1Api) -> list[Any]:
    pods = core.list_pod_for_all_namespaces(label_selector="app=web").items
    return pods if len(pods) == 2 and all(p.status.phase == "Running" for p in pods) else []


def test_typed_client_reads_the_kubelet_stand_ins_pods(api: client.ApiClient) -> None:
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": "demo"}})
    for name in ("web-0", "web-1"):
        core.create_namespaced_pod("demo", {"metadata": {"name": name, "labels": {"app": "web"}},
                                            "spec": {"containers": [{"name": "web",
                                                                     "image": "agnhost"}]}})
    core.create_namespaced_service("demo", {"metadata": {"name": "web"}, "spec": {
        "selector": {"app": "web"}, "ports": [{"port": 80}]}})
    pods = wait_until(lambda: _running(core), timeout=60)
    status = pods[0].status.container_statuses[0]
    assert (status.name, status.image, status.image_id, status.ready) == (
        "web", "agnhost", "", True)


def test_every_served_kind_lists_and_watches(api: client.ApiClient) -> None:
    wait_until(lambda: _running(client.CoreV1Api(api)) or None, timeout=60)
    wait_until(lambda: client.DiscoveryV1Api(api).list_namespaced_endpoint_slice("demo").items,
               timeout=60)
    kinds = served_kinds(api)
    assert any(k.plural == "networkpolicies" for k in kinds)
    for kind in kinds:
        if kind.group == "events.k8s.io":
            continue  # the components record core Events: eventTime null, as on a real cluster
        listed, watched = list_and_watch(api, kind)
        assert watched == listed, kind
    for kind in ("pods", "nodes", "leases", "endpointslices", "serviceaccounts"):
        assert any(k.plural == kind and list_and_watch(api, k)[0] for k in kinds), kind


def test_nodes_publish_their_encap_ips(api: client.ApiClient) -> None:
    nodes = {n.metadata.name: n for n in client.CoreV1Api(api).list_node().items}
    for name, ip in (("ovn-worker", "172.18.0.2"), ("ovn-worker2", "172.18.0.3")):
        annotations = nodes[name].metadata.annotations
        assert json.loads(annotations["k8s.ovn.org/node-encap-ips"]) == [ip]
        assert annotations["k8s.ovn.org/node-chassis-id"] == name
