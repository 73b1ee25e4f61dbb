"""Real packets across OVN zones: ``ovnk local up --zones per-node``.

Each node is its own zone (its own NB, SB, ovn-northd and zone controller, as upstream's
interconnect runs it).  Pods on the two nodes reach each other with real pings over the
transit switch and the geneve tunnel between the zones — on the default network and on a
primary Layer3 UDN — and each zone's NB holds only its own node's switch and pods.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.testing.dataplane import (
    echo_requests_received,
    kubectl,
    ping,
    pod_netns,
    require_dataplane,
    wait_pods_ready,
)
from ovnk_local.zones import PER_NODE, nb_socket

from ovnk_core.ovn.install import command
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]

IMAGE = "registry.k8s.io/e2e-test-images/agnhost:2.45"
NODES = ("ovn-worker", "ovn-worker2")


def manifests() -> str:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "plain"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": "blue", "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}},
        {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
         "metadata": {"name": "blue", "namespace": "blue"},
         "spec": {"topology": "Layer3", "layer3": {
             "role": "Primary", "subnets": [{"cidr": "103.103.0.0/16", "hostSubnet": 24}]}}}]
    for ns in ("plain", "blue"):
        for name, node in zip(("a", "b"), NODES, strict=True):
            docs.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": name, "namespace": ns},
                         "spec": {"nodeName": node,
                                  "containers": [{"name": "agnhost", "image": IMAGE}]}})
    # YAML documents (JSON is YAML): a leading comment keeps kubectl from reading one JSON
    return "# per-node zones\n" + "\n---\n".join(json.dumps(doc) for doc in docs)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("zones") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=True, zone_mode=PER_NODE)
    try:
        kubectl(local, "apply", "-f", "-", stdin=manifests())
        for ns in ("plain", "blue"):
            wait_pods_ready(local, ns)
        yield local
    finally:
        local.down()
    assert local.dataplane.namespaces() == [], "ovnk local down left namespaces behind"


def pod(cluster: LocalCluster, ns: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(kubectl(cluster, "get", "pod", "-n", ns, name,
                                               "-o", "json").stdout)
    return found


def address(pod_obj: dict[str, Any], nad: str) -> str:
    entries = json.loads(pod_obj["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])
    return str(entries[nad]["ip_addresses"][0]).split("/")[0]


def reaches(cluster: LocalCluster, source: dict[str, Any], target: dict[str, Any],
            ip: str) -> bool:
    """The source's pings are answered and the target's own kernel got them."""
    before = echo_requests_received(pod_netns(cluster, target))
    return ping(pod_netns(cluster, source), ip) and \
        echo_requests_received(pod_netns(cluster, target)) > before


@pytest.mark.parametrize(("ns", "nad"), [("plain", "default"), ("blue", "blue/blue")])
def test_pods_on_two_zones_ping_each_other(cluster: LocalCluster, ns: str, nad: str) -> None:
    a, b = pod(cluster, ns, "a"), pod(cluster, ns, "b")
    # the first packets may go while the zones' MAC bindings are learnt: retried
    wait_until(lambda: reaches(cluster, a, b, address(b, nad)), timeout=30,
               what=f"{ns}/a reaching {ns}/b across zones")
    wait_until(lambda: reaches(cluster, b, a, address(a, nad)), timeout=30,
               what=f"{ns}/b reaching {ns}/a across zones")


def test_each_zone_holds_only_its_own_node(cluster: LocalCluster) -> None:
    for node in NODES:
        other = next(n for n in NODES if n != node)
        out = subprocess.run(command("ovn-nbctl", f"--db=unix:{nb_socket(cluster.ovn_dir, node)}",
                                     "--columns=name", "--bare", "list", "Logical_Switch"),
                             capture_output=True, text=True, check=True).stdout.split()
        assert {node, "transit_switch", "blue_blue_transit_switch"} <= set(out)
        assert other not in out and f"blue_blue_{other}" not in out
    records = cluster.state().processes
    assert {f"{n}/{d}" for n in NODES for d in ("nb-ovsdb", "sb-ovsdb", "northd", "controller")
            } <= set(records)
    assert "controller" not in records and "northd" not in records
