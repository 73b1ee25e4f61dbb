"""JSON nested ~1,100 levels deep, wherever ovnk reads JSON that users write (ovn-kubernetes
#4846, #6541): a NAD's CNI config, the network annotations of pods, nodes and NADs.

Python's decoder raises RecursionError on it, which every ``except ValueError`` let
through: an index function then took the NAD informer down, a reconcile failed for every
node of a network because of one node.  Each reader now treats it as what it is, a value
it cannot read, with the message saying why.
"""

from __future__ import annotations

import json

import pytest
from ovnk_local.cluster import build_node

from ovnk_core.annotations import pod_networks
from ovnk_core.annotations.node_subnets import parse_node_subnets
from ovnk_core.annotations.tunnel_keys import annotated_tunnel_keys
from ovnk_core.clustermanager.nad_checks import ovn_netconf, unnamed_nad_problem
from ovnk_core.errors import NetworkConfigError
from ovnk_core.kube.client import JSON
from ovnk_core.networks.nad_config import config_of, nad_network_name, network_name
from ovnk_core.networks.netconf import parse_common
from ovnk_core.node.networks import primary_networks
from ovnk_core.plugins import PluginHost
from ovnk_core.pods.network_selections import is_ovn_nad, parse_selections
from ovnk_core.testing.configs import udn_config
from ovnk_core.udn.nad import nad_needs_update
from ovnk_core.zone.controller import pod_ip_keys, pod_nad_keys, primary_nad_namespace
from ovnk_core.zone.node_facts import read_node

DEEP = "[" * 1100 + "]" * 1100
DEEP_OBJECT = '{"a":' * 1100 + "1" + "}" * 1100
TOO_DEEP = "nested deeper than 200 levels"


def nad(name: str, config: str, annotations: dict[str, str] | None = None) -> JSON:
    return {"metadata": {"name": name, "namespace": "ns", "annotations": annotations or {}},
            "spec": {"config": config}}


def good_config(name: str = "ns_blue") -> str:
    return json.dumps({"cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": name,
                       "topology": "layer3", "role": "primary",
                       "subnets": "10.10.0.0/16/24", "netAttachDefName": f"ns/{name}"})


@pytest.mark.parametrize("config", [DEEP, DEEP_OBJECT])
def test_a_deep_nad_config_is_a_network_config_error(config: str) -> None:
    with pytest.raises(NetworkConfigError, match=f"netconf cannot be parsed: it is {TOO_DEEP}"):
        parse_common(config)
    deep = nad("deep", config)
    problem = unnamed_nad_problem(deep)  # the cluster manager's Warning event on the NAD
    assert problem == ("InvalidNetworkConfig",
                       f"NAD ns/deep is invalid: netconf cannot be parsed: it is {TOO_DEEP}")


@pytest.mark.parametrize("config", [DEEP, DEEP_OBJECT])
def test_every_quick_look_at_a_deep_nad_config_sees_no_network(config: str) -> None:
    deep = nad("deep", config)
    assert config_of(deep) is None and network_name(deep) is None
    assert nad_network_name(deep) == []  # the NAD informers' "network" index
    assert primary_nad_namespace(deep) == []  # the zone's "primary-namespace" index
    assert ovn_netconf(deep) is None and not is_ovn_nad(deep)
    # the node agent takes the normal network and leaves the deep one out
    topologies = PluginHost.load(udn_config()).topologies
    assert [n.name for n in primary_networks(
        [deep, nad("blue", good_config(), {"k8s.ovn.org/network-id": "2"})], topologies)] \
        == ["ns_blue"]


def test_a_nad_rendered_from_a_udn_whose_config_was_made_deep_is_rewritten() -> None:
    desired = nad("blue", good_config())
    desired["metadata"].update(labels={},
                               finalizers=["k8s.ovn.org/user-defined-network-protection"])
    existing = nad("blue", DEEP)
    existing["metadata"].update(labels={}, finalizers=desired["metadata"]["finalizers"])
    assert nad_needs_update(existing, desired)


def test_deep_annotations_are_values_that_cannot_be_read() -> None:
    with pytest.raises(pod_networks.PodAnnotationError,
                       match=f"is not valid JSON: {TOO_DEEP}"):
        pod_networks.parse(DEEP_OBJECT)
    pod = {"metadata": {"name": "p", "namespace": "ns",
                        "annotations": {pod_networks.POD_NETWORKS_ANNOTATION: DEEP_OBJECT}}}
    assert pod_nad_keys(pod) == [] and pod_ip_keys(pod) == []  # the zone's pod indexes
    with pytest.raises(ValueError, match=TOO_DEEP):
        parse_selections(DEEP, "ns")
    assert annotated_tunnel_keys(nad("blue", good_config(),
                                     {"k8s.ovn.org/tunnel-keys": DEEP})) == []
    node = build_node("ovn-worker", 0)
    annotations = node["metadata"]["annotations"]  # type: ignore[index]
    annotations["k8s.ovn.org/node-subnets"] = DEEP_OBJECT
    assert parse_node_subnets(node) == {}
    annotations["k8s.ovn.org/l3-gateway-config"] = DEEP_OBJECT
    facts = read_node(node)  # one node's problems, reported on it; the rest of it is read
    assert facts.problems == [f"k8s.ovn.org/l3-gateway-config is not valid JSON: {TOO_DEEP}",
                              f"k8s.ovn.org/node-subnets is not valid JSON: {TOO_DEEP}"]
    assert facts.chassis_id and facts.gateway is None
