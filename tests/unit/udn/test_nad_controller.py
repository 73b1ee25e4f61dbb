"""The cluster manager's NAD controller: network IDs on NADs, conflicts, restarts, release."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for
from ovnk_local.testing.control_plane import RunningNadController as Running

from ovnk_core.allocators.ids import IdAllocator
from ovnk_core.allocators.tunnel_keys import TunnelKeyAllocator
from ovnk_core.clustermanager.nad_controller import NadController
from ovnk_core.config import load_config
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import CRDS, EVENTS, NADS, NAMESPACES
from ovnk_core.manifests.crds import build_crds
from ovnk_core.networks.registry import NetworkRegistry
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.waiting import wait_until

CONFIG = load_config({"enable_multi_network": "true", "enable_network_segmentation": "true",
                      "v4_masquerade_subnet": "169.254.0.0/17"}, env={})


def nad(namespace: str, name: str, network: str, subnets: str = "10.100.0.0/16/24",
        topology: str = "layer3", role: str = "primary",
        annotations: dict[str, str] | None = None) -> dict[str, Any]:
    config = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": network,
              "netAttachDefName": f"{namespace}/{name}", "topology": topology, "role": role,
              "subnets": subnets}
    return {"metadata": {"name": name, "namespace": namespace,
                         "annotations": annotations or {}},
            "spec": {"config": json.dumps(config)}}


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    api = KubeClient(client_for(kube_apiserver))
    for crd in build_crds():
        api.create(CRDS, crd)
    for namespace in ("blue", "green", "red"):
        api.create(NAMESPACES, {"metadata": {"name": namespace}})
    wait_until(lambda: api.list(NADS) is not None)
    return api


@pytest.fixture
def running(client: KubeClient) -> Iterator[Running]:
    controller = Running(client, CONFIG)
    yield controller
    controller.stop()


def annotations(client: KubeClient, namespace: str, name: str) -> dict[str, str]:
    result: dict[str, str] = client.get(NADS, name, namespace)["metadata"].get(
        "annotations") or {}
    return result


def annotated(client: KubeClient, namespace: str, name: str) -> dict[str, str] | None:
    found = annotations(client, namespace, name)
    return found if "k8s.ovn.org/network-id" in found else None


def test_networks_get_ids_names_and_tunnel_keys(client: KubeClient, running: Running) -> None:
    client.create(NADS, nad("blue", "blue", "blue_blue"))
    blue = wait_until(lambda: annotated(client, "blue", "blue"))
    assert blue == {"k8s.ovn.org/network-id": "1", "k8s.ovn.org/network-name": "blue_blue",
                    "k8s.ovn.org/tunnel-keys": "[]"}
    client.create(NADS, nad("green", "green", "green_green", subnets="10.200.0.0/24",
                            topology="layer2"))
    green = wait_until(lambda: annotated(client, "green", "green"))
    assert green["k8s.ovn.org/network-id"] == "2"
    # upstream: [16711683 + network ID, the transit router's key]
    assert json.loads(green["k8s.ovn.org/tunnel-keys"]) == [16711685, 16715779]
    entry = running.registry.get("blue_blue")
    assert entry is not None and entry.network_id == 1 and entry.nads == {"blue/blue"}


def test_nads_of_one_network_share_its_id(client: KubeClient, running: Running) -> None:
    for namespace in ("blue", "green"):
        client.create(NADS, nad(namespace, "shared", "cluster_udn_shared"))
    ids = {wait_until(lambda ns=namespace: annotated(client, ns, "shared"))[  # type: ignore[misc]
        "k8s.ovn.org/network-id"] for namespace in ("blue", "green")}
    assert ids == {"1"}


def test_conflicting_and_invalid_nads_are_reported_without_blocking(
        client: KubeClient, running: Running) -> None:
    client.create(NADS, nad("blue", "shared", "cluster_udn_shared"))
    wait_until(lambda: annotated(client, "blue", "shared"))
    client.create(NADS, nad("green", "shared", "cluster_udn_shared", subnets="10.9.0.0/16/24"))
    broken = nad("red", "broken", "red_broken")
    broken["spec"]["config"] = broken["spec"]["config"].replace('"layer3"', '"layer9"')
    client.create(NADS, broken)
    client.create(NADS, nad("red", "fine", "red_fine", subnets="10.30.0.0/16/24"))
    wait_until(lambda: annotated(client, "red", "fine"))

    def messages(namespace: str) -> list[str]:
        return [e["message"] for e in client.list(EVENTS, namespace)["items"]]

    wait_until(lambda: any("NAD green/shared CNI config does not match that of network "
                           "cluster_udn_shared" in m for m in messages("green")))
    wait_until(lambda: any("topology 'layer9' is not supported" in m for m in messages("red")))
    assert annotated(client, "green", "shared") is None
    assert annotated(client, "red", "broken") is None


def test_ids_survive_a_restart_and_are_released_with_the_last_nad(client: KubeClient) -> None:
    client.create(NADS, nad("blue", "blue", "blue_blue", annotations={
        "k8s.ovn.org/network-id": "7", "k8s.ovn.org/network-name": "blue_blue",
        "k8s.ovn.org/tunnel-keys": "[]"}))
    first = Running(client, CONFIG)
    try:
        client.create(NADS, nad("green", "green", "green_green", subnets="10.50.0.0/16/24"))
        green = wait_until(lambda: annotated(client, "green", "green"))
        assert annotations(client, "blue", "blue")["k8s.ovn.org/network-id"] == "7"
    finally:
        first.stop()
    second = Running(client, CONFIG)  # a restarted cluster manager with no memory
    try:
        wait_until(lambda: second.registry.get("green_green") is not None
                   and second.registry.get("green_green").network_id is not None)  # type: ignore[union-attr]
        assert second.ids.get("blue_blue") == 7
        assert str(second.ids.get("green_green")) == green["k8s.ovn.org/network-id"]
        client.delete(NADS, "green", "green")
        wait_until(lambda: second.ids.get("green_green") is None)
        assert second.registry.get("green_green") is None
    finally:
        second.stop()


def test_primary_networks_beyond_the_masquerade_subnet_are_refused(client: KubeClient) -> None:
    small = load_config({"enable_multi_network": "true", "enable_network_segmentation": "true",
                         "v4_masquerade_subnet": "169.254.169.0/28"}, env={})
    assert small.masquerade_network_capacity(4) == 2
    informers = InformerFactory(client, resync_period=0)
    controller = NadController(client, informers, PluginHost.load(small),
                               EventRecorder(client, "ovnkube-cluster-manager"),
                               NetworkRegistry(), IdAllocator("NetworkIDs", 4096, reserved=(0,)),
                               TunnelKeyAllocator())
    informers.start()
    controller.start()
    try:
        for index, namespace in enumerate(("blue", "green", "red")):
            client.create(NADS, nad(namespace, "n", f"{namespace}_n",
                                    subnets=f"10.{100 + index}.0.0/16/24"))
            if index < 2:
                wait_until(lambda ns=namespace: annotated(client, ns, "n"))  # type: ignore[misc]
        wait_until(lambda: any(
            "network red_n: network ID 3 does not fit the masquerade subnet 169.254.169.0/28, "
            "which has room for 2 networks" in e["message"]
            for e in client.list(EVENTS, "red")["items"]))
        assert annotated(client, "red", "n") is None
        client.create(NADS, nad("red", "side", "red_side", role="secondary",
                                subnets="10.200.0.0/16/24"))
        assert wait_until(lambda: annotated(client, "red", "side"))  # secondary: no masquerade
    finally:
        controller.stop()
        informers.stop()


def test_a_network_whose_topology_is_left_out_keeps_its_id_until_its_nad_goes(
        client: KubeClient) -> None:
    """The plugin of a network's topology is left out (``--topologies``) after the network
    got its ID: the ID stays the network's (a new network gets another one), the NAD says
    why it is not rendered, and deleting the NAD releases the ID."""
    first = Running(client, CONFIG)
    try:
        client.create(NADS, nad("green", "green", "green_green", subnets="10.50.0.0/24",
                                topology="layer2", role="secondary"))
        held = int(wait_until(lambda: annotated(client, "green", "green"))[
            "k8s.ovn.org/network-id"])
    finally:
        first.stop()
    without = load_config({**{k: "true" for k in ("enable_multi_network",
                                                 "enable_network_segmentation")},
                           "v4_masquerade_subnet": "169.254.0.0/17", "topologies": "layer3"},
                          env={})
    second = Running(client, without)
    try:
        client.create(NADS, nad("blue", "blue", "blue_blue"))
        fresh = int(wait_until(lambda: annotated(client, "blue", "blue"))[
            "k8s.ovn.org/network-id"])
        assert fresh != held
        assert second.ids.get("green_green") == held
        assert second.registry.get("green_green") is None  # known, not described: no NetInfo
        assert annotations(client, "green", "green")["k8s.ovn.org/network-id"] == str(held)
        message = ('network green_green is not rendered: no enabled topology plugin provides '
                   'topology "layer2" (plugins that render into OVN: layer3); its pods get no '
                   'network')
        wait_until(lambda: [(e["reason"], e["message"]) for e in client.list(EVENTS, "green")[
            "items"] if e["involvedObject"]["name"] == "green"] == [
            ("NetworkNotRendered", message)])
        client.delete(NADS, "green", "green")
        wait_until(lambda: second.ids.get("green_green") is None)
    finally:
        second.stop()


def test_a_new_nad_of_a_topology_nobody_provides_gets_no_id(client: KubeClient,
                                                            running: Running) -> None:
    """Only a network that had its ID keeps it: a NAD that names a topology no loaded
    plugin provides, and carries no ID, is invalid and gets none."""
    client.create(NADS, nad("green", "green", "green_green", topology="flat",
                            role="secondary"))
    wait_until(lambda: [e["reason"] for e in client.list(EVENTS, "green")["items"]] == [
        "TopologyNotSupported"])
    assert annotated(client, "green", "green") is None
    assert running.ids.get("green_green") is None
