"""The reset between the modules that share one cluster (``ovnk_local.testing.shared_cluster``)
names what a module left (API objects, NB rows, pod network namespaces) and deletes it."""

from __future__ import annotations

import json

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.testing.dataplane import kubectl, wait_pods_ready
from ovnk_local.testing.shared_cluster import leftovers, reset, snapshot

pytestmark = [pytest.mark.e2e, pytest.mark.netns]


def pod(namespace: str, name: str, node: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                            "labels": {"app": name}},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}


def test_the_reset_names_what_a_module_left_and_deletes_it(shared_cluster: LocalCluster) -> None:
    before = snapshot(shared_cluster)
    assert leftovers(shared_cluster, before) == []
    kubectl(shared_cluster, "create", "namespace", "left")
    for obj in (pod("left", "p", "ovn-worker"), pod("kube-system", "added", "ovn-worker2"),
                {"apiVersion": "v1", "kind": "Service",
                 "metadata": {"name": "added", "namespace": "kube-system"},
                 "spec": {"selector": {"app": "added"}, "ports": [{"port": 80}]}}):
        kubectl(shared_cluster, "apply", "-f", "-", stdin=json.dumps(obj))
    wait_pods_ready(shared_cluster, "left")
    wait_pods_ready(shared_cluster, "kube-system")
    left = leftovers(shared_cluster, before)
    assert {"namespace left", "pods left/p", "pods kube-system/added",
            "services kube-system/added", "NB row owned by pod:left/p"} <= set(left), left
    reset(shared_cluster, before)
    assert leftovers(shared_cluster, before) == []
