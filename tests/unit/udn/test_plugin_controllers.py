"""Plugins add controllers to the cluster manager (hook ``ovnk_cluster_manager_controllers``)."""

from __future__ import annotations

import ipaddress
import json
import sys
from collections.abc import Callable

import pytest

from ovnk_core import hookimpl
from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.config import load_config
from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.resources import ENDPOINTSLICES, NAMESPACES, NODES, PODS, SERVICES, UDNS
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

pytestmark = pytest.mark.unit


def test_hook_ovnk_cluster_manager_controllers(client: KubeClient) -> None:
    seen: dict[str, object] = {}

    class Contributor:
        @hookimpl
        def ovnk_cluster_manager_controllers(self, context: ClusterManagerContext
                                             ) -> list[Controller]:
            seen["context"] = context
            nodes = context.informers.get(NODES)
            controller = Controller("contributed", lambda key: seen.setdefault("key", key),
                                    initial_sync=lambda: seen.setdefault("synced", True))
            controller.watch(nodes)
            context.on_networks_changed(lambda name: seen.setdefault("network", name))
            return [controller]

    config = udn_config()
    host = PluginHost.load(config)
    host.manager.register(Contributor())
    manager = ClusterManager(config, client, host, identity="t")
    assert isinstance(seen["context"], ClusterManagerContext)
    [contributed] = [c for c in manager.controllers() if c.name == "contributed"]
    assert "synced" not in seen  # nothing runs before this replica leads
    manager.start_controllers()
    try:
        assert seen["synced"] is True
        wait_until(lambda: seen.get("key") in ("ovn-worker", "ovn-worker2"))
        client.create(NAMESPACES, {"metadata": {"name": "blue",
                                                "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
        client.create(UDNS, {"metadata": {"name": "net", "namespace": "blue"},
                             "spec": {"topology": "Layer3", "layer3": {
                                 "role": "Primary", "subnets": [{"cidr": "10.1.0.0/16"}]}}})
        assert wait_until(lambda: seen.get("network")) == "blue_net"
        assert contributed.stats.reconciles >= 1
    finally:
        manager.stop_controllers()


def test_the_mirror_runs_in_the_cluster_manager_with_network_segmentation(
        client: KubeClient, start_manager: Callable[[], ClusterManager]) -> None:
    manager = start_manager()
    assert "endpointslice-mirror-controller" in {c.name for c in manager.controllers()}
    client.create(NAMESPACES, {"metadata": {"name": "blue",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "blue"},
                         "spec": {"topology": "Layer3", "layer3": {
                             "role": "Primary", "subnets": [{"cidr": "10.1.0.0/16"}]}}})
    client.create(PODS, {"metadata": {"name": "web", "namespace": "blue"},
                         "spec": {"nodeName": "ovn-worker",
                                  "containers": [{"name": "c", "image": "agnhost"}]}}, "blue")

    def networks() -> dict[str, dict[str, object]] | None:
        pod = client.get(PODS, "web", "blue")
        raw = (pod["metadata"].get("annotations") or {}).get("k8s.ovn.org/pod-networks")
        return json.loads(raw) if raw else None

    annotation = wait_until(networks)
    default_ip = str(annotation["default"]["ip_addresses"][0]).split("/")[0]  # type: ignore[index]
    udn_ip = str(annotation["blue/net"]["ip_addresses"][0]).split("/")[0]  # type: ignore[index]
    assert ipaddress.ip_address(udn_ip) in ipaddress.ip_network("10.1.0.0/16")
    svc = client.create(SERVICES, {"metadata": {"name": "web", "namespace": "blue"},
                                   "spec": {"selector": {"app": "web"},
                                            "ports": [{"port": 80}]}}, "blue")
    client.create(ENDPOINTSLICES, {
        "metadata": {"generateName": "web-", "namespace": "blue",
                     "labels": {"endpointslice.kubernetes.io/managed-by":
                                "endpointslice-controller.k8s.io",
                                "kubernetes.io/service-name": "web"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                          "uid": svc["metadata"]["uid"]}]},
        "addressType": "IPv4",
        "endpoints": [{"addresses": [default_ip], "conditions": {"ready": True},
                       "targetRef": {"kind": "Pod", "name": "web", "namespace": "blue"}}]},
        "blue")

    def mirrored() -> list[str] | None:
        slices = client.list(ENDPOINTSLICES, "blue", label_selector=(
            "endpointslice.kubernetes.io/managed-by=endpointslice-mirror-controller.k8s.ovn.org"
        ))["items"]
        return [a for s in slices for e in s["endpoints"] for a in e["addresses"]] or None

    assert wait_until(mirrored) == [udn_ip]


def test_without_network_segmentation_the_mirror_is_neither_loaded_nor_run(
        client: KubeClient) -> None:
    config = load_config({"enable_multi_network": "true"}, env={})
    sys.modules.pop("ovnk_mirror.controller", None)
    manager = ClusterManager(config, client, PluginHost.load(config), identity="t")
    assert "endpointslice-mirror-controller" not in {c.name for c in manager.controllers()}
    assert "ovnk_mirror.controller" not in sys.modules
