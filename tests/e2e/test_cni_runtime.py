"""``ovnk local``'s kubelet as a CNI runtime: it makes the pod's namespace, runs the node's
conflist (ovnk's ``ovn-k8s-cni-overlay``, then Debian's reference ``tuning``) with each
result as the next plugin's ``prevResult``, caches the result, CHECKs it, and at deletion
runs DEL in reverse order and removes the namespace."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.cni_runtime import (
    CONFLIST_NAME,
    TUNING_SYSCTL,
    CniPluginError,
    CniRuntime,
    Sandbox,
    node_cni_conf_dir,
)
from ovnk_local.testing.dataplane import kubectl, pod_netns

from ovnk_cni import spec
from ovnk_core.node import netlink
from ovnk_core.node.netns import NETNS_DIR
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]

POD = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers: [{name: pause, image: registry.k8s.io/pause:3.10}]
"""


@pytest.fixture(scope="module")
def cluster(shared_dataplane: LocalCluster) -> LocalCluster:
    """The shared 2-node cluster: the test's pod runs on whichever node it lands on and is
    deleted by the test (the reset checks that nothing of it is left)."""
    return shared_dataplane


def running_pod(cluster: LocalCluster) -> dict[str, Any]:
    kubectl(cluster, "apply", "-f", "-", stdin=POD)
    kubectl(cluster, "wait", "--for=condition=Ready", "pod/web", "--timeout=90s")
    return dict(json.loads(kubectl(cluster, "get", "pod", "web", "-o", "json").stdout))


def test_the_kubelet_runs_the_nodes_conflist_and_tears_it_down(cluster: LocalCluster) -> None:
    pod = running_pod(cluster)
    node, uid = pod["spec"]["nodeName"], pod["metadata"]["uid"]
    netns = pod_netns(cluster, pod)
    conf_dir = node_cni_conf_dir(cluster.dataplane.dir / node)
    conflist = json.loads((conf_dir / CONFLIST_NAME).read_text())
    assert [p["type"] for p in conflist["plugins"]] == ["ovn-k8s-cni-overlay", "tuning"]

    runtime = CniRuntime(conf_dir, cluster.dir / "run" / "cni" / "results")
    sandbox = Sandbox(uid, netns, "default", "web", uid)
    cached = runtime.cached(sandbox)
    assert cached is not None, "the kubelet cached no result"
    entry = json.loads(pod["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])["default"]
    result = cached["result"]
    assert result["interfaces"][0] == {"name": "eth0", "sandbox": str(NETNS_DIR / netns),
                                       "mac": entry["mac_address"]}
    assert [ip["address"] for ip in result["ips"]] == entry["ip_addresses"]
    # tuning ran after ovnk's plugin, in the pod's namespace
    value = subprocess.run(["ip", "netns", "exec", netns, "sysctl", "-n", TUNING_SYSCTL],
                           capture_output=True, text=True, check=True).stdout.strip()
    assert value == "1"

    runtime.check(sandbox)  # as ADD left it
    address = entry["ip_addresses"][0]
    netlink.delete_address("eth0", address, netns=netns)
    with pytest.raises(CniPluginError) as broken:
        runtime.check(sandbox)
    assert (broken.value.plugin, broken.value.code) == ("ovn-k8s-cni-overlay",
                                                        spec.CHECK_FAILED)
    assert f"interface eth0 lacks address {address}" in broken.value.details
    netlink.ensure_address("eth0", address, netns=netns)

    kubectl(cluster, "delete", "pod", "web", "--wait=true", "--timeout=60s")
    wait_until(lambda: not (NETNS_DIR / netns).exists(), timeout=30,
               what=f"the kubelet removed namespace {netns}")
    wait_until(lambda: runtime.cached(sandbox) is None, timeout=30,
               what="the kubelet dropped the cached result")
    # DEL again, of a pod and namespace that are gone: a success
    runtime.delete(sandbox)
