"""What the zone reads from Nodes, NADs and pods, and how it reports bad values."""

from __future__ import annotations

import json

import pytest
from ovnk_local.cluster import build_node

from ovnk_core.errors import PermanentError
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.zone.controller import pod_attachments, pod_nad_keys
from ovnk_core.zone.networks import GONE, READY, WAITING, lookup_network
from ovnk_core.zone.node_facts import networks_affected, read_node
from ovnk_core.zone.owners import (
    controller_name,
    network_of_controller,
    node_owner,
    pod_owner,
    scope_node,
    scope_pod,
)

CONFIG = udn_config()


def test_node_facts_from_the_local_cluster_node() -> None:
    node = build_node("ovn-worker", 0)
    node["metadata"]["annotations"].update({  # type: ignore[index]
        "k8s.ovn.org/node-id": "4",
        "k8s.ovn.org/node-subnets": json.dumps({"default": ["10.244.0.0/24"],
                                                "blue_blue": "10.100.0.0/24"})})
    facts = read_node(node)
    assert facts.problems == [] and facts.node_id == 4 and facts.chassis_id
    assert facts.gateway is not None and facts.gateway.ips == ("172.18.0.2/16",)
    assert facts.gateway.bridge_id == "breth0" and facts.gateway.next_hops == ("172.18.0.1",)
    assert [str(s) for s in facts.subnets["blue_blue"]] == ["10.100.0.0/24"]


def test_bad_annotations_become_problems_and_the_rest_is_read() -> None:
    node = {"metadata": {"name": "n", "annotations": {
        "k8s.ovn.org/node-id": "four", "k8s.ovn.org/l3-gateway-config": "[]",
        "k8s.ovn.org/node-subnets": json.dumps({"default": ["10.244.0.0/24"],
                                                "blue": ["10.1.2.3/24"]})}}}
    facts = read_node(node)
    assert facts.node_id is None and facts.gateway is None
    assert [str(s) for s in facts.subnets["default"]] == ["10.244.0.0/24"]
    assert len(facts.problems) == 3
    assert "k8s.ovn.org/node-id 'four' is not an integer" in facts.problems


def subnets_node(subnets: dict[str, str], version: str = "1", node_id: str = "4"
                 ) -> dict[str, object]:
    node = build_node("ovn-worker", 0)
    node["metadata"]["resourceVersion"] = version  # type: ignore[index]
    node["metadata"]["annotations"].update({  # type: ignore[index]
        "k8s.ovn.org/node-id": node_id, "k8s.ovn.org/node-subnets": json.dumps(subnets)})
    return node


def test_a_node_change_touches_only_the_networks_whose_subnet_changed() -> None:
    before = read_node(subnets_node({"default": "10.244.0.0/24", "a": "10.1.0.0/24"}))
    grown = read_node(subnets_node({"default": "10.244.0.0/24", "a": "10.1.0.0/24",
                                    "b": "10.2.0.0/24"}))
    moved = read_node(subnets_node({"default": "10.244.0.0/24", "a": "10.1.9.0/24"}))
    assert networks_affected(before, grown) == {"b"}
    assert networks_affected(grown, before) == {"b"}
    assert networks_affected(before, moved) == {"a"}
    assert networks_affected(before, before) == set()
    # the node's own identity changed, it came or it went: every network
    renumbered = read_node(subnets_node({"default": "10.244.0.0/24", "a": "10.1.0.0/24"},
                                        node_id="5"))
    assert networks_affected(before, renumbered) is None
    assert networks_affected(None, before) is None and networks_affected(before, None) is None


def nad(name: str, namespace: str, network: str, network_id: str | None = None,
        subnets: str = "10.100.0.0/16/24") -> dict[str, object]:
    annotations = {"k8s.ovn.org/network-id": network_id} if network_id else {}
    config = {"cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": network,
              "netAttachDefName": f"{namespace}/{name}", "topology": "layer3",
              "role": "primary", "subnets": subnets}
    return {"metadata": {"name": name, "namespace": namespace, "annotations": annotations},
            "spec": {"config": json.dumps(config)}}


def test_network_lookup_states() -> None:
    host = PluginHost.load(CONFIG)
    ready = lookup_network("ns_blue", [nad("blue", "ns", "ns_blue", "3")], CONFIG, host)
    assert ready.status == READY and ready.state is not None
    assert ready.state.network_id == 3 and ready.nads == ("ns/blue",)
    assert [str(s) for s in ready.state.join_subnets] == ["100.65.0.0/16"]  # v4 only
    waiting = lookup_network("ns_blue", [nad("blue", "ns", "ns_blue")], CONFIG, host)
    assert waiting.status == WAITING and "network ID" in waiting.reason
    bad = lookup_network("ns_blue", [nad("blue", "ns", "ns_blue", "3", subnets="nonsense")],
                         CONFIG, host)
    assert bad.status == WAITING and "NAD ns/blue" in bad.reason
    assert lookup_network("ns_blue", [], CONFIG, host).status == GONE
    default = lookup_network("default", [], CONFIG, host)
    assert default.status == READY and default.state is not None
    assert default.state.netinfo.is_default and default.state.network_id == 0
    assert [str(s) for s in default.state.join_subnets] == ["100.64.0.0/16"]


def test_owner_names_round_trip() -> None:
    host = PluginHost.load(CONFIG)
    state = lookup_network("ns_blue", [nad("blue", "ns", "ns_blue", "3")], CONFIG, host).state
    assert state is not None
    assert controller_name("default") == "default-network-controller"
    assert network_of_controller(controller_name("ns_blue")) == "ns_blue"
    assert network_of_controller("some-other-controller") is None
    assert scope_node(node_owner(state.netinfo, "ovn-worker")) == "ovn-worker"
    assert scope_pod(pod_owner(state.netinfo, "ns", "p")) == "ns/p"


def test_pod_attachments_and_index() -> None:
    entry = {"ip_addresses": ["10.244.0.5/24"], "mac_address": "0a:58:0a:f4:00:05",
             "role": "primary"}
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1", "annotations": {
        "k8s.ovn.org/pod-networks": json.dumps({"default": entry})}},
        "spec": {"nodeName": "ovn-worker"}}
    assert pod_nad_keys(pod) == ["default"]
    [attachment] = pod_attachments(pod).values()
    assert attachment.node == "ovn-worker" and attachment.uid == "u1"
    assert [str(ip) for ip in attachment.addresses] == ["10.244.0.5"]
    pod["metadata"]["annotations"] = {"k8s.ovn.org/pod-networks": "{oops"}  # type: ignore[index]
    assert pod_nad_keys(pod) == []
    with pytest.raises(PermanentError, match="not valid JSON"):
        pod_attachments(pod)
