"""Fields a disabled feature would use are not dropped without a word (issue 30, item 5):
the cluster manager on the local API server.

Without ``--enable-preconfigured-udn-addresses`` upstream renders a Layer2 network's NAD
without its ``reservedSubnets``, ``infrastructureSubnets`` and ``defaultGatewayIPs`` and
reports ``NetworkCreated=True``, silently: its pods may then get the addresses the user
reserved.  ovnk creates the network the same way, and says so on the UDN/CUDN with a
Warning ``FieldsIgnored``, once.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import CUDNS, EVENTS, NADS, NAMESPACES, UDNS
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

PRECONFIGURED = {"topology": "Layer2", "layer2": {
    "role": "Primary", "subnets": ["10.8.0.0/24"], "reservedSubnets": ["10.8.0.128/25"],
    "infrastructureSubnets": ["10.8.0.0/30"], "defaultGatewayIPs": ["10.8.0.1"]}}
MESSAGE = ("reservedSubnets, infrastructureSubnets, defaultGatewayIPs are ignored: "
           "preconfigured UDN addresses are disabled (--enable-preconfigured-udn-addresses); "
           "pods may get any address of the subnets, and the gateway and management "
           "addresses are the subnets' first two")


def warnings(client: KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENTS, namespace)["items"]
            if e.get("type") == "Warning" and e["involvedObject"].get("name") == name]


def created(client: KubeClient, resource: Any, name: str, namespace: str | None = None
            ) -> bool:
    status = client.get(resource, name, namespace).get("status") or {}
    return any(c["type"] == "NetworkCreated" and c["status"] == "True"
               for c in status.get("conditions") or [])


@pytest.fixture
def manager(client: KubeClient, start_manager: Callable[[], ClusterManager]) -> ClusterManager:
    client.create(NAMESPACES, {"metadata": {"name": "vm", "labels": {
        PRIMARY_NAMESPACE_LABEL: "", "team": "vm"}}})
    return start_manager()


def test_preconfigured_addresses_without_the_flag_are_a_warning_not_silence(
        client: KubeClient, manager: ClusterManager) -> None:
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "vm"},
                         "spec": PRECONFIGURED})
    assert wait_until(lambda: created(client, UDNS, "net", "vm"))  # as upstream
    config = json.loads(client.get(NADS, "net", "vm")["spec"]["config"])
    assert not {"reservedSubnets", "infrastructureSubnets", "defaultGatewayIPs"} & set(config)
    events = wait_until(lambda: warnings(client, "vm", "net"))
    assert [(e["reason"], e["message"], e["involvedObject"]["kind"]) for e in events] == [
        ("FieldsIgnored", MESSAGE, "UserDefinedNetwork")]
    # reconciled again (a label changes): the same warning is not written again
    client.patch(UDNS, "net", {"metadata": {"labels": {"touched": "yes"}}}, "vm")
    wait_until(lambda: client.get(NADS, "net", "vm")["metadata"]["labels"].get("touched"))
    assert [e.get("count") for e in warnings(client, "vm", "net")] == [1]


def test_a_cudn_says_it_too(client: KubeClient, manager: ClusterManager) -> None:
    client.create(CUDNS, {"metadata": {"name": "vms"}, "spec": {
        "namespaceSelector": {"matchLabels": {"team": "vm"}},
        "network": {"topology": "Layer2", "layer2": {
            "role": "Primary", "subnets": ["10.8.0.0/24"],
            "reservedSubnets": ["10.8.0.128/25"]}}}})
    assert wait_until(lambda: created(client, CUDNS, "vms"))
    events = wait_until(lambda: warnings(client, "default", "vms"))
    assert [(e["reason"], e["message"]) for e in events] == [
        ("FieldsIgnored", "reservedSubnets is ignored: preconfigured UDN addresses are "
                          "disabled (--enable-preconfigured-udn-addresses); pods may get any "
                          "address of the subnets, and the gateway and management addresses "
                          "are the subnets' first two")]
