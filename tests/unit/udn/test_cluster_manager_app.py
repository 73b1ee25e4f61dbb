"""The cluster-manager process wiring: leader election gates the controllers, metrics."""

from __future__ import annotations

import threading
import urllib.request

from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.clustermanager.app import LEASE_NAMESPACE, ClusterManager
from ovnk_core.config import load_config
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import CRDS, NADS, NAMESPACES, UDNS
from ovnk_core.manifests.crds import build_crds
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL
from ovnk_core.udn.sections import sections_for


def test_leader_runs_controllers_and_serves_metrics(kube_apiserver: ServerHandle,
                                                    tmp_path) -> None:  # type: ignore[no-untyped-def]
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = load_config({"enable_multi_network": "true", "enable_network_segmentation": "true",
                          "v4_masquerade_subnet": "169.254.0.0/17",
                          "metrics_bind_address": f"127.0.0.1:{port}"}, env={})
    client = KubeClient(client_for(kube_apiserver))
    for crd in build_crds():
        client.create(CRDS, crd)
    client.create(NAMESPACES, {"metadata": {"name": LEASE_NAMESPACE}})
    client.create(NAMESPACES, {"metadata": {"name": "blue",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    manager = ClusterManager(config, client, PluginHost.load(config), identity="cm-1")
    stop = threading.Event()
    ready = tmp_path / "ready"
    runner = threading.Thread(target=manager.run, args=(stop, ready), daemon=True)
    runner.start()
    try:
        wait_until(ready.exists)
        client.create(UDNS, {"metadata": {"name": "blue", "namespace": "blue"},
                             "spec": {"topology": "Layer3", "layer3": {
                                 "role": "Primary", "subnets": [{"cidr": "10.1.0.0/16"}]}}})
        wait_until(lambda: client.get(NADS, "blue", "blue"))

        def scrape() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as rsp:
                return str(rsp.read().decode())

        text = wait_until(lambda: (lambda t: t if 'topology="Layer3"} 1.0' in t else "")(
            scrape()))
        assert ('ovnkube_clustermanager_user_defined_networks{role="Primary",'
                'topology="Layer3"} 1.0') in text
        assert 'ovnkube_controller_reconcile_total{controller="user-defined-network-' \
               'controller",result="success"}' in text
    finally:
        stop.set()
        runner.join(timeout=20)
    assert not runner.is_alive() and not ready.exists()


def test_the_network_counts_read_roles_with_the_loaded_sections() -> None:
    """A topology this cluster manager has no plugin for still counts, with no role (its
    section is not read, and nothing is loaded for it per scrape)."""
    sections = sections_for(load_config({"topologies": "layer3"}, env={}))

    def udn(name: str, topology: str, deleting: bool = False) -> dict[str, object]:
        meta: dict[str, object] = {"name": name, "namespace": "a"}
        if deleting:
            meta["deletionTimestamp"] = "2026-11-23T00:00:00Z"
        return {"metadata": meta, "spec": {"topology": topology,
                                           topology.lower(): {"role": "Primary"}}}

    objects = [udn("a", "Layer3"), udn("b", "Layer3"), udn("c", "Layer2"),
               udn("d", "Layer3", deleting=True)]
    assert ClusterManager._count(objects, sections) == [
        (("", "Layer2"), 1.0), (("Primary", "Layer3"), 2.0)]
