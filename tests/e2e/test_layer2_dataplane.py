"""Layer2 networks on a real dataplane: what users of `ovnk local` get from a Layer2 UDN.

A secondary Layer2 UDN gives the pods that select it (``k8s.v1.cni.cncf.io/networks``) a
second interface, ``net1``, on the network's one switch: pods on different nodes reach
each other there, while their primary network keeps working.  NB holds upstream's names
(``<ns>_<udn>_ovn_layer2_switch``, ``<ns>.<udn>_<ns>_<pod>``), ovn-trace agrees with the
pings, a restarted zone controller writes nothing, and deleting the network leaves none
of its rows.
"""

from __future__ import annotations

import ipaddress
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

from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import OWNER_CONTROLLER_KEY, TOPOLOGY_KEY
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]

POD_NETWORKS = "k8s.ovn.org/pod-networks"
SECONDARY_NS = "l2sec"
SECONDARY_NAD = f"{SECONDARY_NS}/side"
SECONDARY_NETWORK = f"{SECONDARY_NS}_side"
SECONDARY_SWITCH = f"{SECONDARY_NETWORK}_ovn_layer2_switch"
SECONDARY_SUBNET = ipaddress.ip_network("10.129.0.0/24")
NODES = {"left": "ovn-worker", "right": "ovn-worker2"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("layer2") / ".ovnk")
    try:
        local.up(nodes=2, timeout=90, dataplane=True)
        yield local
    finally:
        local.down()


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def get(cluster: LocalCluster, *args: str) -> Any:
    return json.loads(kubectl(cluster, "get", *args, "-o", "json").stdout)


def diagnostics(cluster: LocalCluster) -> str:
    parts = []
    for log in sorted(cluster.log_dir.glob("*.log")):
        if log.name.startswith(("controller", "cluster-manager", "kubelet")) or \
                log.name.endswith("node-agent.log"):
            lines = log.read_text(errors="replace").splitlines()[-15:]
            parts.append(f"--- {log.name}\n" + "\n".join(lines))
    return "\n".join(parts)


def entry(pod: dict[str, Any], nad_key: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(pod["metadata"]["annotations"][POD_NETWORKS])[nad_key]
    return value


def ip_of(pod: dict[str, Any], nad_key: str) -> str:
    return str(entry(pod, nad_key)["ip_addresses"][0]).split("/")[0]


@pytest.fixture(scope="module")
def secondary_pods(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    """Two pods on two nodes with a secondary Layer2 UDN as ``net1``, Ready."""
    apply(cluster,
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SECONDARY_NS}},
          {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
           "metadata": {"name": "side", "namespace": SECONDARY_NS},
           "spec": {"topology": "Layer2", "layer2": {"role": "Secondary",
                                                     "subnets": [str(SECONDARY_SUBNET)]}}},
          *({"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": name, "namespace": SECONDARY_NS,
                          "annotations": {"k8s.v1.cni.cncf.io/networks": "side"}},
             "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}}
            for name, node in NODES.items()))
    wait_pods_ready(cluster, SECONDARY_NS, diagnostics(cluster))
    return {pod["metadata"]["name"]: pod
            for pod in get(cluster, "pods", "-n", SECONDARY_NS)["items"]}


def test_secondary_layer2_pods_get_addresses_and_tunnel_ids(
        secondary_pods: dict[str, dict[str, Any]]) -> None:
    entries = {name: entry(pod, SECONDARY_NAD) for name, pod in secondary_pods.items()}
    for value in entries.values():
        interface = ipaddress.ip_interface(value["ip_addresses"][0])
        assert interface.network == SECONDARY_SUBNET and value["role"] == "secondary"
        assert not value.get("gateway_ips") and not value.get("routes")
        assert value["tunnel_id"] >= 10  # 1-9 are kept for platform ports
    assert len({v["ip_addresses"][0] for v in entries.values()}) == 2
    assert len({v["tunnel_id"] for v in entries.values()}) == 2


def test_secondary_layer2_nb_rows_are_upstreams_and_trace_delivers(
        cluster: LocalCluster, secondary_pods: dict[str, dict[str, Any]]) -> None:
    with NbClient([f"unix:{cluster.nb_socket}"]).start() as nb:
        [switch] = [row for row in nb.row_list("Logical_Switch")
                    if row.name == SECONDARY_SWITCH]
        ids = dict(switch.external_ids)
        assert (ids[OWNER_CONTROLLER_KEY], ids[TOPOLOGY_KEY], ids["k8s.ovn.org/role"]) == (
            f"{SECONDARY_NETWORK}-network-controller", "layer2", "secondary")
        assert switch.other_config["subnet"] == str(SECONDARY_SUBNET)
        ports = {port.name: port for port in switch.ports}
        assert set(ports) == {f"l2sec.side_l2sec_{name}" for name in NODES}
        for name, pod in secondary_pods.items():
            port = ports[f"l2sec.side_l2sec_{name}"]
            value = entry(pod, SECONDARY_NAD)
            assert dict(port.options)["requested-tnl-key"] == str(value["tunnel_id"])
            assert list(port.addresses) == [
                f"{value['mac_address']} {ip_of(pod, SECONDARY_NAD)}"]
        wait_until(lambda: all(port.up == [True] for port in switch.ports), timeout=30)
    wait_for_sb(f"unix:{cluster.nb_socket}")
    left, right = secondary_pods["left"], secondary_pods["right"]
    result = trace(f"unix:{cluster.sb_socket}", SECONDARY_SWITCH, packet_flow(
        "l2sec.side_l2sec_left", entry(left, SECONDARY_NAD)["mac_address"],
        entry(right, SECONDARY_NAD)["mac_address"], ip_of(left, SECONDARY_NAD),
        ip_of(right, SECONDARY_NAD)))
    assert result.outputs == ("l2sec.side_l2sec_right",), result.text


def test_secondary_layer2_pods_ping_over_net1_and_keep_their_primary_network(
        cluster: LocalCluster, secondary_pods: dict[str, dict[str, Any]]) -> None:
    for pod in secondary_pods.values():
        links = json.loads(subprocess.run(
            ["ip", "-n", pod_netns(cluster, pod), "-j", "addr", "show", "net1"],
            capture_output=True, text=True, check=True).stdout)
        [link] = links
        assert link["address"] == entry(pod, SECONDARY_NAD)["mac_address"]
        assert [a["local"] for a in link["addr_info"] if a["family"] == "inet"] == [
            ip_of(pod, SECONDARY_NAD)]
    for source, target in (("left", "right"), ("right", "left")):
        target_netns = pod_netns(cluster, secondary_pods[target])
        before = echo_requests_received(target_netns)
        assert ping(pod_netns(cluster, secondary_pods[source]),
                    ip_of(secondary_pods[target], SECONDARY_NAD), "net1"), (source, target)
        assert echo_requests_received(target_netns) > before
        # the primary (default) network still works beside it
        assert ping(pod_netns(cluster, secondary_pods[source]),
                    ip_of(secondary_pods[target], "default")), (source, target)
