"""One bad object never stops the others (issue 13; upstream's bug class ovn-kubernetes #4846,
#6541): the real cluster manager and zone controller, as their own service accounts, on the
local API server and a real Northbound.

* a NAD whose ``spec.config`` nests JSON 1,100 levels deep is reported on the NAD, and a
  normal network created next to it is allocated and rendered promptly — also by a cluster
  manager started while the deep NAD exists; deleting it leaves everything working;
* a NAD in another namespace claiming an existing network's name with other subnets is
  refused with its Warning, and changes no Northbound row of that network (NB snapshots),
  neither while it exists, nor across a zone controller restart, nor when it is removed;
* a node annotation OVSDB cannot hold (a NUL in the chassis ID) fails that node's owner
  alone, with a Warning on the node; the network, the other nodes and the NB connection are
  fine.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import pytest
from ovnk_local.cluster import build_node
from ovnk_local.testing.control_plane import ControlPlane, Zone, settled

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.ovn.snapshot import committed_names, difference
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import OvnStack
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

pytestmark = pytest.mark.e2e

CONFIG = udn_config()
POD_NETWORKS = "k8s.ovn.org/pod-networks"
PROMPTLY = 30.0  # seconds: the time a normal network takes on this machine, with margin
DEEP_CONFIG = "[" * 1100 + "]" * 1100


@pytest.fixture
def start_manager(plane: ControlPlane) -> Callable[[], ClusterManager]:
    return plane.start_manager


@pytest.fixture
def start_zone(plane: ControlPlane) -> Callable[[str], Zone]:
    return plane.start_zone


def namespace(client: KubeClient, name: str, primary: bool = True) -> None:
    labels = {PRIMARY_NAMESPACE_LABEL: ""} if primary else {}
    client.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})


def network_with_pod(client: KubeClient, ns: str, cidr: str, node: str = "ovn-worker") -> None:
    client.create(UDNS, {"metadata": {"name": f"{ns}-network", "namespace": ns},
                         "spec": {"topology": "Layer3", "layer3": {
                             "role": "Primary", "subnets": [{"cidr": cidr,
                                                             "hostSubnet": 24}]}}})
    client.create(PODS, {"metadata": {"name": "a", "namespace": ns},
                         "spec": {"nodeName": node,
                                  "containers": [{"name": "c", "image": "agnhost"}]}})


def port_of(ns: str) -> str:
    return f"{ns}.{ns}.network_{ns}_a"  # the pod's port on its primary UDN


def rendered_within(zone: Zone, ns: str, seconds: float = PROMPTLY) -> None:
    wait_until(lambda: port_of(ns) in committed_names(zone.nb, "Logical_Switch_Port"),
               timeout=seconds, what=f"{ns}'s pod port in NB")


def warnings(client: KubeClient, ns: str, name: str, reason: str) -> list[str]:
    return [e["message"] for e in client.list(EVENTS, ns)["items"]
            if e["involvedObject"]["name"] == name and e["reason"] == reason
            and e["type"] == "Warning"]


def nad_informer_errors(informers: InformerFactory) -> int:
    return informers.get(NADS).stats.errors


# -- a NAD nested 1,100 levels deep ----------------------------------------------------------
def test_a_deep_nad_stops_no_network_and_its_deletion_leaves_everything_working(
        client: KubeClient, start_manager: Callable[[], ClusterManager],
        start_zone: Callable[[str], Zone], ovn_stack: OvnStack) -> None:
    namespace(client, "deep", primary=False)
    client.create(NADS, {"metadata": {"name": "bad", "namespace": "deep"},
                         "spec": {"config": DEEP_CONFIG}})
    # both components start while it exists (the cluster manager never synced, before)
    manager = start_manager()
    zone = start_zone(ovn_stack.nb.remote)
    namespace(client, "green")
    network_with_pod(client, "green", "103.10.0.0/16")
    rendered_within(zone, "green")
    message = ("NAD deep/bad is invalid: netconf cannot be parsed: it is nested deeper than "
               "200 levels")
    wait_until(lambda: warnings(client, "deep", "bad", "InvalidNetworkConfig") == [message])
    assert "k8s.ovn.org/network-id" not in (
        client.get(NADS, "bad", "deep")["metadata"].get("annotations") or {})
    client.delete(NADS, "bad", "deep")
    wait_until(lambda: not client.list(NADS, "deep")["items"])
    namespace(client, "teal")
    network_with_pod(client, "teal", "103.20.0.0/16", node="ovn-worker2")
    rendered_within(zone, "teal")
    assert port_of("green") in committed_names(zone.nb, "Logical_Switch_Port")
    # no informer of either component ever went into an error loop over it
    assert nad_informer_errors(manager.informers) == 0
    assert nad_informer_errors(zone.informers) == 0


# -- a NAD claiming another namespace's network -----------------------------------------------
def claim(victim: JSON, forged: bool) -> JSON:
    """A NAD in namespace ``aaa`` (sorted before the victim's) naming the victim's network,
    with other subnets; ``forged``: with the victim's network annotations copied."""
    config = json.loads(victim["spec"]["config"])
    config.update(subnets="10.200.0.0/16/24", netAttachDefName="aaa/claim")
    annotations = {k: v for k, v in (victim["metadata"].get("annotations") or {}).items()
                   if k.startswith("k8s.ovn.org/")} if forged else {}
    return {"metadata": {"name": "claim", "namespace": "aaa", "annotations": annotations},
            "spec": {"config": json.dumps(config)}}


@pytest.mark.parametrize("forged", [False, True], ids=["plain", "forged-annotations"])
def test_a_claim_on_a_network_changes_none_of_its_rows(
        client: KubeClient, start_manager: Callable[[], ClusterManager],
        start_zone: Callable[[str], Zone], ovn_stack: OvnStack, forged: bool) -> None:
    start_manager()
    zone = start_zone(ovn_stack.nb.remote)
    namespace(client, "blue")
    network_with_pod(client, "blue", "103.30.0.0/16")
    rendered_within(zone, "blue")
    before = settled(zone)
    victim = client.get(NADS, "blue-network", "blue")
    network = json.loads(victim["spec"]["config"])["name"]
    time.sleep(1.1)  # creationTimestamp has one-second steps: the claim is the newer NAD
    namespace(client, "aaa")
    client.create(NADS, claim(victim, forged))
    wait_until(lambda: warnings(client, "aaa", "claim", "ConflictingNetworkConfig") == [
        f"NAD aaa/claim CNI config does not match that of network {network}"])
    wait_until(lambda: "k8s.ovn.org/network-id" not in (
        client.get(NADS, "claim", "aaa")["metadata"].get("annotations") or {}))
    assert difference(before, settled(zone)) == []
    # a zone controller started while the claim exists renders the same rows
    zone.stop()
    restarted = start_zone(ovn_stack.nb.remote)
    assert difference(before, settled(restarted)) == []
    client.delete(NADS, "claim", "aaa")
    wait_until(lambda: not client.list(NADS, "aaa")["items"])
    assert difference(before, settled(restarted)) == []


# -- a value OVSDB cannot hold ----------------------------------------------------------------
def test_a_node_value_ovsdb_cannot_hold_fails_that_node_alone(
        client: KubeClient, start_manager: Callable[[], ClusterManager],
        start_zone: Callable[[str], Zone], ovn_stack: OvnStack) -> None:
    bad: Any = build_node("ovn-worker3", 2)
    bad["metadata"]["annotations"]["k8s.ovn.org/node-chassis-id"] = "bad\x00chassis"
    client.create(NODES, bad)  # the admin may (break-glass); set-once, so it stays
    start_manager()
    zone = start_zone(ovn_stack.nb.remote)
    resyncs = zone.writer.resyncs

    def routers() -> set[str]:
        return committed_names(zone.nb, "Logical_Router")
    wait_until(lambda: {"ovn_cluster_router", "GR_ovn-worker", "GR_ovn-worker2"} <= routers(),
               timeout=PROMPTLY)
    wait_until(lambda: warnings(client, "default", "ovn-worker3", "InvalidNodeAnnotation"))
    [message] = warnings(client, "default", "ovn-worker3", "InvalidNodeAnnotation")
    assert message.startswith("node ovn-worker3: cannot be written to OVN Northbound: "
                              "Logical_Router row ")
    assert message.endswith("column options: 'bad\\x00chassis' holds a NUL character")
    # that node's owner (its switch, router ports, gateway router) is not written at all
    assert "GR_ovn-worker3" not in routers()
    assert "ovn-worker3" not in committed_names(zone.nb, "Logical_Switch")
    assert {"ovn-worker", "ovn-worker2"} <= committed_names(zone.nb, "Logical_Switch")
    # a user-defined network renders on the good nodes as well, over the same connection
    namespace(client, "green")
    network_with_pod(client, "green", "103.40.0.0/16")
    rendered_within(zone, "green")
    assert zone.writer.resyncs == resyncs
