"""The UDN and CUDN controllers against the local API server (real HTTP, real objects)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for
from ovnk_localnet.topology import LocalnetTopology

from ovnk_core.config import load_config
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import Invalid, NotFound
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import CRDS, CUDNS, EVENTS, NADS, NAMESPACES, PODS, UDNS
from ovnk_core.manifests.crds import build_crds
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn import admission
from ovnk_core.udn.controller import UdnControllers
from ovnk_core.udn.nad import FINALIZER
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

CONFIG = load_config({"enable_multi_network": "true", "enable_network_segmentation": "true",
                      "v4_masquerade_subnet": "169.254.0.0/17"}, env={})
L3 = {"topology": "Layer3", "layer3": {"role": "Primary",
                                      "subnets": [{"cidr": "10.100.0.0/16", "hostSubnet": 24}]}}


class Harness:
    def __init__(self, client: KubeClient) -> None:
        self.client = client
        self.informers = InformerFactory(client, resync_period=0)
        self.controllers = UdnControllers(client, self.informers, CONFIG,
                                          PluginHost.load(CONFIG),
                                          EventRecorder(client, "ovnkube-cluster-manager"))

    def start(self) -> None:
        self.informers.start()
        self.controllers.start()

    def stop(self) -> None:
        self.controllers.stop()
        self.informers.stop()

    def namespace(self, name: str, primary: bool = True, **labels: str) -> None:
        if primary:
            labels[PRIMARY_NAMESPACE_LABEL] = ""
        self.client.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})

    def udn(self, namespace: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
        return self.client.create(UDNS, {"metadata": {"name": name, "namespace": namespace},
                                         "spec": spec})

    def condition(self, resource: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        obj = self.client.get(resource, name, namespace)
        for condition in (obj.get("status") or {}).get("conditions") or []:
            if condition["type"] == "NetworkCreated":
                return dict(condition)
        return {}

    def wait_condition(self, resource: Any, name: str, namespace: str | None, status: str,
                       contains: str = "") -> dict[str, Any]:
        def check() -> dict[str, Any] | None:
            condition = self.condition(resource, name, namespace)
            if condition.get("status") == status and contains in condition.get("message", ""):
                return condition
            return None
        result = wait_until(check)
        assert result is not None
        return result


@pytest.fixture
def harness(kube_apiserver: ServerHandle) -> Iterator[Harness]:
    admission.register(kube_apiserver.admission)
    client = KubeClient(client_for(kube_apiserver))
    for crd in build_crds():
        client.create(CRDS, crd)
    wait_until(lambda: client.list(UDNS) is not None and client.list(NADS) is not None)
    running = Harness(client)
    running.start()
    yield running
    running.stop()


def test_primary_layer3_udn_renders_its_nad(harness: Harness) -> None:
    harness.namespace("blue")
    harness.udn("blue", "blue", L3)
    condition = harness.wait_condition(UDNS, "blue", "blue", "True")
    assert (condition["reason"], condition["message"]) == (
        "NetworkAttachmentDefinitionCreated", "NetworkAttachmentDefinition has been created")
    nad = harness.client.get(NADS, "blue", "blue")
    assert json.loads(nad["spec"]["config"]) == {
        "cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "blue_blue",
        "netAttachDefName": "blue/blue", "topology": "layer3", "role": "primary",
        "joinSubnet": "100.65.0.0/16,fd99::/64", "subnets": "10.100.0.0/16/24"}
    assert nad["metadata"]["finalizers"] == [FINALIZER]
    assert nad["metadata"]["labels"] == {"k8s.ovn.org/user-defined-network": ""}
    assert nad["metadata"]["ownerReferences"][0]["kind"] == "UserDefinedNetwork"
    assert FINALIZER in harness.client.get(UDNS, "blue", "blue")["metadata"]["finalizers"]


def test_primary_network_needs_the_namespace_label(harness: Harness) -> None:
    harness.namespace("plain", primary=False)
    harness.udn("plain", "net", L3)
    condition = harness.wait_condition(UDNS, "net", "plain", "False")
    assert condition["reason"] == "SyncError"
    assert condition["message"] == (
        'invalid primary network state for namespace "plain": a valid primary user defined '
        "network or network attachment definition custom resource, and required namespace "
        'label "k8s.ovn.org/primary-user-defined-network" must both be present')
    with pytest.raises(NotFound):
        harness.client.get(NADS, "net", "plain")
    events = harness.client.list(EVENTS, "plain")["items"]
    assert any(e["reason"] == "SyncError" and "invalid primary network" in e["message"]
               for e in events)
    secondary = {"topology": "Layer2", "layer2": {"role": "Secondary",
                                                  "subnets": ["10.50.0.0/24"]}}
    harness.udn("plain", "side", secondary)
    harness.wait_condition(UDNS, "side", "plain", "True")


def test_one_primary_network_per_namespace(harness: Harness) -> None:
    harness.namespace("blue")
    harness.udn("blue", "first", L3)
    harness.wait_condition(UDNS, "first", "blue", "True")
    harness.udn("blue", "second", {"topology": "Layer2", "layer2": {
        "role": "Primary", "subnets": ["10.60.0.0/24"]}})
    harness.wait_condition(UDNS, "second", "blue", "False",
                           'primary network already exist in namespace "blue": "first"')


def test_foreign_nad_with_the_same_name_is_an_error(harness: Harness) -> None:
    harness.namespace("blue")
    harness.client.create(NADS, {"metadata": {"name": "blue", "namespace": "blue"},
                                 "spec": {"config": "{}"}})
    harness.udn("blue", "blue", L3)
    harness.wait_condition(UDNS, "blue", "blue", "False",
                           "foreign NetworkAttachmentDefinition with the desired name already "
                           "exist [blue/blue]")


def test_mutated_or_deleted_nad_is_reconciled_back(harness: Harness) -> None:
    harness.namespace("blue")
    harness.udn("blue", "blue", L3)
    harness.wait_condition(UDNS, "blue", "blue", "True")
    original = harness.client.get(NADS, "blue", "blue")["spec"]["config"]
    harness.client.patch(NADS, "blue", {"spec": {"config": original.replace("10.100",
                                                                             "10.101")}}, "blue")
    wait_until(lambda: harness.client.get(NADS, "blue", "blue")["spec"]["config"] == original)
    nad = harness.client.get(NADS, "blue", "blue")
    harness.client.patch(NADS, "blue", {"metadata": {
        "finalizers": [], "resourceVersion": nad["metadata"]["resourceVersion"]}}, "blue")
    harness.client.delete(NADS, "blue", "blue")
    wait_until(lambda: harness.client.get(NADS, "blue", "blue")["spec"]["config"] == original)


def test_subnet_overlapping_cluster_subnets_is_reported(harness: Harness) -> None:
    harness.namespace("blue")
    harness.udn("blue", "blue", {"topology": "Layer3", "layer3": {
        "role": "Primary", "subnets": [{"cidr": "10.244.0.0/16"}]}})
    harness.wait_condition(UDNS, "blue", "blue", "False",
                           "pod or join subnet overlaps with already configured internal "
                           "subnets")


def test_invalid_udn_is_rejected_at_create(harness: Harness) -> None:
    harness.namespace("blue")
    with pytest.raises(Invalid, match="spec.layer3 is required when topology is Layer3"):
        harness.udn("blue", "bad", {"topology": "Layer3", "layer2": {
            "role": "Primary", "subnets": ["10.1.0.0/24"]}})


def test_deletion_waits_for_pods_using_the_network(harness: Harness) -> None:
    harness.namespace("blue")
    harness.udn("blue", "blue", L3)
    harness.wait_condition(UDNS, "blue", "blue", "True")
    harness.client.create(PODS, {"metadata": {"name": "user", "namespace": "blue", "annotations": {
        "k8s.ovn.org/pod-networks": json.dumps({"blue/blue": {"ip_addresses": [
            "10.100.1.5/24"], "role": "primary"}})}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}})
    wait_until(lambda: harness.controllers.pods.get("blue/user"))  # the controller knows it
    harness.client.delete(UDNS, "blue", "blue")
    condition = harness.wait_condition(UDNS, "blue", "blue", "False", "network in use")
    assert (condition["reason"], condition["message"]) == (  # upstream's words
        "SyncError", "failed to delete NetworkAttachmentDefinition [blue/blue]: network in use "
                     "by the following pods: [blue/user]")
    assert harness.client.get(NADS, "blue", "blue")
    harness.client.delete(PODS, "user", "blue")
    wait_until(lambda: _gone(harness.client, UDNS, "blue", "blue"), timeout=30)
    assert _gone(harness.client, NADS, "blue", "blue")


def _pod_on(harness: Harness, namespace: str, name: str, nad_key: str) -> None:
    harness.client.create(PODS, {"metadata": {"name": name, "namespace": namespace, "annotations": {
        "k8s.ovn.org/pod-networks": json.dumps({nad_key: {"ip_addresses": ["10.70.0.5/16"],
                                                          "role": "primary"}})}},
        "spec": {"containers": [{"name": "c", "image": "i"}]}})
    wait_until(lambda: harness.controllers.pods.get(f"{namespace}/{name}"))


def test_cudn_deletion_names_every_nad_in_use(harness: Harness) -> None:
    harness.namespace("red", team="red")
    harness.namespace("green", team="red")
    harness.client.create(CUDNS, {"metadata": {"name": "shared"}, "spec": {
        "namespaceSelector": {"matchLabels": {"team": "red"}},
        "network": {"topology": "Layer2", "layer2": {"role": "Primary",
                                                     "subnets": ["10.70.0.0/16"]}}}})
    harness.wait_condition(CUDNS, "shared", None, "True")
    _pod_on(harness, "red", "b", "red/shared")
    _pod_on(harness, "red", "a", "red/shared")
    _pod_on(harness, "green", "g", "green/shared")
    harness.client.delete(CUDNS, "shared")
    condition = harness.wait_condition(CUDNS, "shared", None, "False", "network in use")
    assert (condition["reason"], condition["message"]) == (
        "NetworkAttachmentDefinitionSyncError",
        "failed to delete NetworkAttachmentDefinition [green/shared]: network in use by the "
        "following pods: [green/g]\n"
        "failed to delete NetworkAttachmentDefinition [red/shared]: network in use by the "
        "following pods: [red/a red/b]")
    for pod, namespace in (("g", "green"), ("a", "red")):
        harness.client.delete(PODS, pod, namespace)
    wait_until(lambda: _gone(harness.client, NADS, "shared", "green"), timeout=30)
    condition = harness.wait_condition(CUDNS, "shared", None, "False", "[red/b]")
    assert condition["message"] == ("failed to delete NetworkAttachmentDefinition [red/shared]: "
                                     "network in use by the following pods: [red/b]")
    assert harness.client.get(NADS, "shared", "red")
    harness.client.delete(PODS, "b", "red")
    wait_until(lambda: _gone(harness.client, CUDNS, "shared", None), timeout=30)
    assert _gone(harness.client, NADS, "shared", "red")


def test_nad_being_deleted_is_reported(harness: Harness) -> None:
    """A NAD with a deletionTimestamp (held by our finalizer): upstream's "being deleted"."""
    harness.namespace("blue", team="red")
    harness.namespace("red", team="red")
    harness.udn("blue", "blue", L3)
    harness.wait_condition(UDNS, "blue", "blue", "True")
    harness.client.delete(NADS, "blue", "blue")
    condition = harness.wait_condition(UDNS, "blue", "blue", "False")
    assert (condition["reason"], condition["message"]) == (
        "NetworkAttachmentDefinitionDeleted", "NetworkAttachmentDefinition is being deleted")
    harness.client.create(CUDNS, {"metadata": {"name": "side"}, "spec": {
        "namespaceSelector": {"matchLabels": {"team": "red"}},
        "network": {"topology": "Layer2", "layer2": {"role": "Secondary",
                                                     "subnets": ["10.80.0.0/16"]}}}})
    harness.wait_condition(CUDNS, "side", None, "True", "[blue, red]")
    harness.client.delete(NADS, "side", "red")
    condition = harness.wait_condition(CUDNS, "side", None, "False")
    assert (condition["reason"], condition["message"]) == (
        "NetworkAttachmentDefinitionDeleted",
        "NetworkAttachmentDefinition are being deleted: [red/side]")


NOT_RENDERED = ('no enabled plugin renders topology "localnet" into OVN: the localnet plugin '
                "only parses and allocates its networks (plugins that render into OVN: layer2, "
                "layer3); its pods get no network")


def _warnings(client: KubeClient, namespace: str, kind: str, name: str) -> list[str]:
    return sorted(e["message"] for e in client.list(EVENTS, namespace)["items"]
                  if e["type"] == "Warning" and e["reason"] == "NetworkNotRendered"
                  and e["involvedObject"]["kind"] == kind
                  and e["involvedObject"]["name"] == name)


def test_networks_of_rendering_topologies_get_no_not_rendered_warning(harness: Harness
                                                                     ) -> None:
    """Layer2 and Layer3 UDNs are rendered: NetworkCreated, and no NetworkNotRendered
    Warning on the UDN or its NAD (a topology that only parses gets one: next test)."""
    harness.namespace("blue")
    harness.udn("blue", "blue", {"topology": "Layer2", "layer2": {
        "role": "Primary", "subnets": ["10.60.0.0/24"]}})
    harness.namespace("green")
    harness.udn("green", "green", L3)
    for namespace in ("blue", "green"):
        harness.wait_condition(UDNS, namespace, namespace, "True")
    for namespace in ("blue", "green"):
        assert _warnings(harness.client, namespace, "UserDefinedNetwork", namespace) == []
        assert _warnings(harness.client, namespace, "NetworkAttachmentDefinition",
                         namespace) == []


def test_a_cudn_no_plugin_renders_warns_on_every_nad(harness: Harness,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # the localnet plugin, rendering switched off, stands in for a plugin that only parses
    monkeypatch.setattr(LocalnetTopology, "renders", False)
    harness.namespace("red", team="red")
    harness.namespace("pink", team="red")
    harness.client.create(CUDNS, {"metadata": {"name": "flat"}, "spec": {
        "namespaceSelector": {"matchLabels": {"team": "red"}},
        "network": {"topology": "Localnet", "localnet": {
            "role": "Secondary", "physicalNetworkName": "physnet",
            "subnets": ["192.168.7.0/24"]}}}})
    harness.wait_condition(CUDNS, "flat", None, "True", "[pink, red]")
    message = "network cluster_udn_flat is not rendered: " + NOT_RENDERED

    def on_cudn() -> list[tuple[str, int]]:  # a cluster-scoped object's events go to default
        return [(e["message"], e["count"]) for e in harness.client.list(EVENTS, "default")[
            "items"] if e["involvedObject"]["kind"] == "ClusterUserDefinedNetwork"
            and e["reason"] == "NetworkNotRendered"]
    wait_until(lambda: on_cudn() == [(message, 2)])  # once per NAD
    for namespace in ("pink", "red"):
        assert _warnings(harness.client, namespace, "NetworkAttachmentDefinition",
                         "flat") == [message]


def _gone(client: KubeClient, resource: Any, name: str, namespace: str | None) -> bool:
    try:
        client.get(resource, name, namespace)
    except NotFound:
        return True
    return False


def test_cudn_follows_its_namespace_selector(harness: Harness) -> None:
    harness.namespace("red", team="red")
    harness.namespace("green", team="red")
    harness.namespace("other", team="blue")
    harness.client.create(CUDNS, {"metadata": {"name": "shared"}, "spec": {
        "namespaceSelector": {"matchLabels": {"team": "red"}},
        "network": {"topology": "Layer2", "layer2": {"role": "Primary",
                                                     "subnets": ["10.70.0.0/16"]}}}})
    harness.wait_condition(CUDNS, "shared", None, "True",
                           "NetworkAttachmentDefinition has been created in following "
                           "namespaces: [green, red]")
    config = json.loads(harness.client.get(NADS, "shared", "red")["spec"]["config"])
    assert (config["name"], config["topology"], config["transitSubnet"]) == (
        "cluster_udn_shared", "layer2", "100.88.0.0/16")
    with pytest.raises(NotFound):
        harness.client.get(NADS, "shared", "other")
    harness.namespace("late", team="red")
    harness.wait_condition(CUDNS, "shared", None, "True", "[green, late, red]")
    harness.client.patch(NAMESPACES, "green", {"metadata": {"labels": {"team": "blue"}}})
    harness.wait_condition(CUDNS, "shared", None, "True", "[late, red]")
    wait_until(lambda: _gone(harness.client, NADS, "shared", "green"))


def test_stale_nads_are_removed_at_startup(kube_apiserver: ServerHandle) -> None:
    client = KubeClient(client_for(kube_apiserver))
    for crd in build_crds():
        client.create(CRDS, crd)
    client.create(NAMESPACES, {"metadata": {"name": "blue"}})
    wait_until(lambda: client.list(NADS) is not None)
    client.create(NADS, {"metadata": {
        "name": "ghost", "namespace": "blue", "finalizers": [FINALIZER],
        "labels": {"k8s.ovn.org/user-defined-network": ""},
        "ownerReferences": [{"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
                             "name": "ghost", "uid": "gone-uid", "controller": True}]},
        "spec": {"config": "{}"}})
    client.create(NADS, {"metadata": {"name": "mine", "namespace": "blue"},
                         "spec": {"config": "{}"}})
    harness = Harness(client)
    harness.start()
    try:
        wait_until(lambda: _gone(client, NADS, "ghost", "blue"))
        assert client.get(NADS, "mine", "blue")  # not ours: untouched
    finally:
        harness.stop()
