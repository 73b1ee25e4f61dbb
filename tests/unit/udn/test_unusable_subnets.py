"""Networks whose subnets no pod can ever use are refused on the network, not pod by pod
(issue 30, item 2): the cluster manager on the local API server.

Upstream's CRDs accept any CIDR and its cluster manager checks only overlaps with the
cluster's own subnets, so these UDNs were ``NetworkCreated=True`` and their pods failed one
by one (``FailedCreatePodSandBox ... Network is unreachable``, ``subnet ... is full``).  The
admission stays upstream's (they are still accepted at apply time); the network is refused
where upstream refuses a network it cannot render: ``NetworkCreated=False`` with upstream's
reason (``SyncError``, ``NetworkAttachmentDefinitionSyncError``) and a message saying why,
no NAD; a NAD written by hand gets a Warning and no network ID.  Other networks go on.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.resources import CUDNS, EVENTS, NADS, NAMESPACES, UDNS
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

LOOPBACK = {"topology": "Layer3", "layer3": {"role": "Primary",
                                             "subnets": [{"cidr": "127.0.0.0/8"}]}}
TINY_LAYER2 = {"topology": "Layer2", "layer2": {"role": "Primary",
                                                "subnets": ["10.7.0.0/30"]}}
FINE = {"topology": "Layer3", "layer3": {"role": "Primary",
                                         "subnets": [{"cidr": "10.100.0.0/16"}]}}


def namespace(client: KubeClient, name: str, **labels: str) -> None:
    client.create(NAMESPACES, {"metadata": {"name": name, "labels": {
        PRIMARY_NAMESPACE_LABEL: "", **labels}}})


def condition(client: KubeClient, resource: Any, name: str, namespace: str | None = None
              ) -> dict[str, Any] | None:
    obj = client.get(resource, name, namespace)
    found = [c for c in (obj.get("status") or {}).get("conditions") or []
             if c["type"] == "NetworkCreated"]
    return dict(found[0]) if found else None


def warnings(client: KubeClient, namespace: str, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in client.list(EVENTS, namespace)["items"]
            if e.get("type") == "Warning" and e["involvedObject"].get("name") == name]


@pytest.fixture
def manager(start_manager: Callable[[], ClusterManager]) -> ClusterManager:
    return start_manager()


def test_a_udn_in_the_loopback_range_is_not_created(client: KubeClient,
                                                    manager: ClusterManager) -> None:
    namespace(client, "lo")
    namespace(client, "fine")
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "lo"}, "spec": LOOPBACK})
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "fine"}, "spec": FINE})
    message = ("pod or join subnet overlaps an address range pods cannot use: user defined "
               "subnet 127.0.0.0/8 overlaps the loopback range 127.0.0.0/8 (packets to and "
               "from it never leave a host)")
    found = wait_until(lambda: condition(client, UDNS, "net", "lo"))
    assert (found["status"], found["reason"], found["message"]) == ("False", "SyncError",
                                                                     message)
    assert ("SyncError", message) in warnings(client, "lo", "net")
    with pytest.raises(NotFound):
        client.get(NADS, "net", "lo")
    assert wait_until(lambda: (condition(client, UDNS, "net", "fine") or {}).get("status")
                      == "True")


def test_a_cudn_whose_layer2_subnet_holds_no_pod_is_not_created(
        client: KubeClient, manager: ClusterManager) -> None:
    namespace(client, "tenant", team="t")
    client.create(CUDNS, {"metadata": {"name": "tiny"}, "spec": {
        "namespaceSelector": {"matchLabels": {"team": "t"}}, "network": TINY_LAYER2}})
    found = wait_until(lambda: condition(client, CUDNS, "tiny"))
    assert (found["status"], found["reason"], found["message"]) == (
        "False", "NetworkAttachmentDefinitionSyncError",
        "subnet 10.7.0.0/30 of network cluster_udn_tiny leaves no address for pods: all 4 of "
        "its addresses are kept (its network address, its broadcast address, gateway "
        "10.7.0.1, management port 10.7.0.2)")
    with pytest.raises(NotFound):
        client.get(NADS, "tiny", "tenant")


@pytest.mark.parametrize(("subnets", "role", "problem"), [
    ("224.1.0.0/24", "secondary",
     "pod or join subnet overlaps an address range pods cannot use: user defined subnet "
     "224.1.0.0/24 overlaps the multicast range 224.0.0.0/4 (a multicast address is never a "
     "host's address)"),
    ("169.254.200.0/24", "primary",
     "pod or join subnet overlaps an address range pods cannot use: user defined subnet "
     "169.254.200.0/24 overlaps the link-local range 169.254.0.0/16 (routers must not "
     "forward it (RFC 3927, RFC 4291), and this network's pods are routed)"),
    ("10.7.0.0/32", "secondary",
     "subnet 10.7.0.0/32 of network side_net leaves no address for pods: its only address "
     "is kept (its network address)"),
], ids=["multicast", "link-local-primary", "slash-32"])
def test_a_hand_written_nad_of_such_a_network_is_warned_about_and_gets_no_id(
        client: KubeClient, manager: ClusterManager, subnets: str, role: str,
        problem: str) -> None:
    namespace(client, "side")
    config = {"cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": "side_net",
              "netAttachDefName": "side/net", "topology": "layer2", "role": role,
              "subnets": subnets}
    client.create(NADS, {"metadata": {"name": "net", "namespace": "side"},
                         "spec": {"config": json.dumps(config)}})
    assert wait_until(lambda: warnings(client, "side", "net")) == [
        ("UnusableSubnet", f"NAD side/net is invalid: {problem}")]
    annotations = client.get(NADS, "net", "side")["metadata"].get("annotations") or {}
    assert "k8s.ovn.org/network-id" not in annotations


def test_a_flat_secondary_network_keeps_link_local_and_small_subnets(
        client: KubeClient, manager: ClusterManager) -> None:
    """One segment, no router: link-local works as on any link, and a /30 has room."""
    namespace(client, "flat")
    for name, subnet in (("ll", "169.254.200.0/24"), ("small", "10.8.0.0/30")):
        client.create(UDNS, {"metadata": {"name": name, "namespace": "flat"}, "spec": {
            "topology": "Layer2", "layer2": {"role": "Secondary", "subnets": [subnet]}}})
    for name in ("ll", "small"):
        assert wait_until(lambda n=name: (condition(client, UDNS, n, "flat") or {}).get(  # type: ignore[misc]
            "status") == "True")
        assert wait_until(lambda n=name: "k8s.ovn.org/network-id" in (client.get(  # type: ignore[misc]
            NADS, n, "flat")["metadata"].get("annotations") or {}))
