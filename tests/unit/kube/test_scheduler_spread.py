"""The local scheduler spreads pods even when its pod cache lags behind its own bindings."""

from __future__ import annotations

from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.cluster import build_node, node_names
from ovnk_local.scheduler import Scheduler
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NODES, PODS
from ovnk_core.testing.waiting import wait_until


def test_back_to_back_pods_are_spread_before_the_cache_sees_the_bindings(
        kube_apiserver: ServerHandle) -> None:
    kube = KubeClient(client_for(kube_apiserver))
    for index, name in enumerate(node_names(2)):
        kube.create(NODES, build_node(name, index))
    for name in ("a", "b", "c", "d"):
        kube.create(PODS, {"metadata": {"name": name},
                           "spec": {"containers": [{"name": "c", "image": "x"}]}},
                    namespace="default")
    scheduler = Scheduler(kube)
    scheduler.pods.start()
    scheduler.nodes.start()
    wait_until(lambda: len(scheduler.pods.items()) == 4 and len(scheduler.nodes.items()) == 2)
    scheduler.pods.stop()  # from now on the cache never shows a binding
    for name in ("a", "b", "c", "d"):
        scheduler.reconcile(f"default/{name}")
    scheduler.nodes.stop()
    bound = [kube.get(PODS, name, namespace="default")["spec"]["nodeName"]
             for name in ("a", "b", "c", "d")]
    assert sorted(bound) == ["ovn-worker", "ovn-worker", "ovn-worker2", "ovn-worker2"]
