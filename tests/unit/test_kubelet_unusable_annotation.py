"""The kubelet stand-in against the local API server: an unusable pod-networks annotation is
a Warning event on the pod and no retry loop; other pods still start."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.kubelet import Kubelet
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NAMESPACES, PODS
from ovnk_core.testing.waiting import wait_until

POD_NETWORKS = "k8s.ovn.org/pod-networks"


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    api = KubeClient(client_for(kube_apiserver))
    api.create(NAMESPACES, {"metadata": {"name": "blue"}})
    return api


@pytest.fixture
def kubelet(client: KubeClient) -> Iterator[Kubelet]:
    running = Kubelet(client, resync_period=0)
    running.start()
    yield running
    running.stop()


def pod(client: KubeClient, name: str, networks: object) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": "blue", "annotations": {
        POD_NETWORKS: json.dumps(networks)}}, "spec": {
        "nodeName": "ovn-worker", "containers": [{"name": "c", "image": "agnhost"}]}})


def test_ip_addresses_5_is_a_sandbox_failure_not_a_retry_loop(client: KubeClient,
                                                              kubelet: Kubelet) -> None:
    pod(client, "broken", {"default": {"ip_addresses": 5, "mac_address": "0a:58:0a:f4:01:05"}})
    pod(client, "fine", {"default": {"ip_addresses": ["10.244.1.6/24"],
                                     "mac_address": "0a:58:0a:f4:01:06"}})
    wait_until(lambda: (client.get(PODS, "fine", "blue").get("status") or {}).get("podIP")
               == "10.244.1.6")
    message = ("Failed to create pod sandbox: failed to set up the pod network: "
               "k8s.ovn.org/pod-networks of pod blue/broken is unusable: invalid pod network "
               "entry {'ip_addresses': 5, 'mac_address': '0a:58:0a:f4:01:05'}: ip_addresses "
               "must be a list, got int")

    def reported() -> list[dict[str, object]]:
        return [e for e in client.list(EVENTS, "blue")["items"]
                if e["involvedObject"]["name"] == "broken" and e["type"] == "Warning"]
    events = wait_until(reported)
    assert [(e["reason"], e["message"]) for e in events] == [("FailedCreatePodSandBox", message)]
    assert (client.get(PODS, "broken", "blue").get("status") or {}).get("phase") != "Running"
    # not retried: the key is not waiting in the queue and counted no failure
    wait_until(lambda: kubelet.controller.queue.idle())
    assert kubelet.controller.failures("blue/broken") == 0
    # fixing the annotation wires the pod
    client.patch(PODS, "broken", {"metadata": {"annotations": {POD_NETWORKS: json.dumps(
        {"default": {"ip_addresses": ["10.244.1.5/24"],
                     "mac_address": "0a:58:0a:f4:01:05"}})}}}, "blue")
    wait_until(lambda: (client.get(PODS, "broken", "blue").get("status") or {}).get("podIP")
               == "10.244.1.5")
