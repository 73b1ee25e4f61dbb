"""A third-party topology renders its own network end to end, with no change in ovnk_core.

The topology ``flat`` (distribution ``ovnk-flat-demo`` in ``dists/``: its own entry point
in ``ovnk.topologies``, not bundled, pip-installed into a directory of its own) is put on
the ``PYTHONPATH`` of every process ``ovnk local up`` starts, so the cluster manager, the
zone controller and both node agents load it as they load the bundled topologies.  A NAD
with ``"topology": "flat"`` and two pods on two nodes selecting it through
``k8s.v1.cni.cncf.io/networks`` then show every step:

* IPAM: the cluster manager accepts the network (network ID on the NAD) and gives each pod
  a pod-networks entry from the network's own subnet (cluster-wide: the topology declares
  no node subnets, so no node gets one);
* NB: the zone renders the network's switch and the pods' ports, owned by the network's
  controller (``flatnet-network-controller``), and ovn-trace delivers a packet from one
  port to the other;
* node: each agent plumbs the secondary interface ``net1`` with the entry's MAC and IP and
  answers CNI ADD only once ovn-controller bound both of the pod's ports;
* dataplane: the pods ping each other over ``net1`` (OVS userspace datapath, geneve
  between the nodes), and the target's kernel sees the echo requests.
"""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.testing.dataplane import echo_requests_received, pod_netns, require_dataplane

from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import OWNER_CONTROLLER_KEY, OWNER_KEY, TOPOLOGY_KEY
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]

NAMESPACE = "flat-demo"
NAD_KEY = f"{NAMESPACE}/flatnet"
SUBNET = ipaddress.ip_network("10.123.0.0/24")
SWITCH = "flatnet_flat_switch"
CONTROLLER = "flatnet-network-controller"
PODS_ON_NODES = {"left": "ovn-worker", "right": "ovn-worker2"}
POD_NETWORKS = "k8s.ovn.org/pod-networks"
NETCONF = {"cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": "flatnet",
           "netAttachDefName": NAD_KEY, "topology": "flat", "role": "secondary",
           "subnets": str(SUBNET)}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            third_party_sites: dict[str, Path]) -> Iterator[LocalCluster]:
    require_dataplane()
    with pytest.MonkeyPatch.context() as patch:
        # Every process of the cluster (the supervisor, and the components and node agents
        # it starts) inherits this environment: the third party's site is importable there.
        patch.setenv("PYTHONPATH", os.pathsep.join(
            [str(third_party_sites["flat"]), *filter(None, [os.environ.get("PYTHONPATH")])]))
        local = LocalCluster(tmp_path_factory.mktemp("flat") / ".ovnk")
        try:
            local.up(nodes=2, timeout=90, dataplane=True)
            yield local
        finally:
            local.down()


def kubectl(cluster: LocalCluster, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), *args],
                            input=stdin, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def logs(cluster: LocalCluster) -> str:
    """The tails of the logs that explain a pod that does not become ready."""
    parts = []
    for log in sorted(cluster.log_dir.glob("*.log")):
        if log.name.startswith(("controller", "cluster-manager", "kubelet")) or \
                log.name.endswith("node-agent.log"):
            lines = log.read_text(errors="replace").splitlines()[-20:]
            parts.append(f"--- {log.name}\n" + "\n".join(lines))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def pods(cluster: LocalCluster) -> dict[str, dict[str, Any]]:
    """The two pods on the flat network, Ready (their ports bound)."""
    kubectl(cluster, "create", "namespace", NAMESPACE)
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps({
        "apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
        "metadata": {"name": "flatnet", "namespace": NAMESPACE},
        "spec": {"config": json.dumps(NETCONF)}}))
    for name, node in PODS_ON_NODES.items():
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE,
                         "annotations": {"k8s.v1.cni.cncf.io/networks": "flatnet"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "agnhost"}]}}))
    result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig), "wait",
                             "--for=condition=Ready", "pod", "--all", "-n", NAMESPACE,
                             "--timeout=90s"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"pods not ready: {result.stderr}\n{logs(cluster)}"
    items = json.loads(kubectl(cluster, "get", "pods", "-n", NAMESPACE, "-o", "json"))["items"]
    return {pod["metadata"]["name"]: pod for pod in items}


def flat_entry(pod: dict[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads(pod["metadata"]["annotations"][POD_NETWORKS])[NAD_KEY]
    return entry


def flat_ip(pod: dict[str, Any]) -> str:
    return str(flat_entry(pod)["ip_addresses"][0]).split("/")[0]


def test_the_cluster_loads_the_third_party_topology(cluster: LocalCluster) -> None:
    for process in ("cluster-manager", "controller", "ovn-worker-node-agent",
                    "ovn-worker2-node-agent"):
        text = (cluster.log_dir / f"{process}.log").read_text()
        loaded = [line for line in text.splitlines() if "plugins loaded: topologies=" in line]
        assert loaded and "flat" in loaded[-1].split("topologies=")[1].split()[0].split(","), \
            f"{process}: {loaded}"


def test_ipam_gives_each_pod_an_address_of_the_network(cluster: LocalCluster,
                                                       pods: dict[str, dict[str, Any]]) -> None:
    nad = json.loads(kubectl(cluster, "get", "net-attach-def", "flatnet", "-n", NAMESPACE,
                             "-o", "json"))
    assert int(nad["metadata"]["annotations"]["k8s.ovn.org/network-id"]) > 0
    entries = {name: flat_entry(pod) for name, pod in pods.items()}
    for entry in entries.values():
        assert entry["role"] == "secondary"
        [address] = entry["ip_addresses"]
        interface = ipaddress.ip_interface(address)
        assert interface.network == SUBNET and interface.ip not in (
            SUBNET.network_address, SUBNET.broadcast_address)
        assert entry["mac_address"] and not entry.get("gateway_ips")
    assert len({flat_ip(pod) for pod in pods.values()}) == 2
    # Cluster-wide IPAM: no node got a slice of the flat network.
    for node in PODS_ON_NODES.values():
        obj = json.loads(kubectl(cluster, "get", "node", node, "-o", "json"))
        subnets = json.loads(obj["metadata"]["annotations"]["k8s.ovn.org/node-subnets"])
        assert "flatnet" not in subnets and "default" in subnets


def test_the_zone_renders_the_network_owned_by_its_controller(
        cluster: LocalCluster, pods: dict[str, dict[str, Any]]) -> None:
    with NbClient([f"unix:{cluster.nb_socket}"]).start() as nb:
        switches = [row for row in nb.row_list("Logical_Switch") if row.name == SWITCH]
        [switch] = switches
        ids = dict(switch.external_ids)
        assert (ids[OWNER_CONTROLLER_KEY], ids[OWNER_KEY], ids[TOPOLOGY_KEY]) == (
            CONTROLLER, "network", "flat")
        ports = {port.name: port for port in switch.ports}
        assert set(ports) == {f"flat.demo.flatnet_{NAMESPACE}_{name}" for name in pods}
        for name, pod in pods.items():
            port = ports[f"flat.demo.flatnet_{NAMESPACE}_{name}"]
            entry = flat_entry(pod)
            address = f"{entry['mac_address']} {flat_ip(pod)}"
            assert (list(port.addresses), list(port.port_security)) == ([address], [address])
            port_ids = dict(port.external_ids)
            assert (port_ids[OWNER_CONTROLLER_KEY], port_ids[OWNER_KEY]) == (
                CONTROLLER, f"pod:{NAMESPACE}/{name}")
            assert dict(port.options)["requested-chassis"] == pod["spec"]["nodeName"]
        # bound by ovn-controller on its node (northd reports it in NB)
        wait_until(lambda: all(port.up == [True] for port in switch.ports), timeout=30)
    # ovn-trace: a packet from one pod's port reaches the other's.
    wait_for_sb(f"unix:{cluster.nb_socket}")
    left, right = pods["left"], pods["right"]
    result = trace(f"unix:{cluster.sb_socket}", SWITCH, packet_flow(
        f"flat.demo.flatnet_{NAMESPACE}_left", flat_entry(left)["mac_address"],
        flat_entry(right)["mac_address"], flat_ip(left), flat_ip(right)))
    assert result.outputs == (f"flat.demo.flatnet_{NAMESPACE}_right",), result.text


def test_the_pods_ping_each_other_over_the_flat_network(
        cluster: LocalCluster, pods: dict[str, dict[str, Any]]) -> None:
    for pod in pods.values():
        netns = pod_netns(cluster, pod)
        links = json.loads(subprocess.run(["ip", "-n", netns, "-j", "addr", "show", "net1"],
                                          capture_output=True, text=True, check=True).stdout)
        [link] = links
        assert link["address"] == flat_entry(pod)["mac_address"]
        assert [a["local"] for a in link["addr_info"] if a["family"] == "inet"] == [
            flat_ip(pod)]
    for source, target in (("left", "right"), ("right", "left")):
        target_netns = pod_netns(cluster, pods[target])
        before = echo_requests_received(target_netns)
        result = subprocess.run(["ip", "netns", "exec", pod_netns(cluster, pods[source]),
                                 "ping", "-c", "3", "-i", "0.2", "-W", "2", "-I", "net1",
                                 flat_ip(pods[target])], capture_output=True, text=True)
        assert result.returncode == 0, f"{source} -> {target}: {result.stdout}{result.stderr}"
        # the target's own kernel got them (the first may be lost while the path warms up)
        assert echo_requests_received(target_netns) > before
