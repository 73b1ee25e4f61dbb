"""Management ports and the networks a node serves, computed from annotations and NADs."""

from __future__ import annotations

import json

import pytest

from ovnk_core.networks.netinfo import NetworkNeeds
from ovnk_core.node.management_port import TABLE_BASE, build_management_port
from ovnk_core.node.networks import PrimaryNetwork, cluster_subnets, primary_networks
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config

TOPOLOGIES = PluginHost.load(udn_config()).topologies

pytestmark = pytest.mark.unit


def test_default_and_udn_management_ports_follow_upstream_names() -> None:
    default = build_management_port("ovn-worker", "default", 0, ["10.244.0.0/24"],
                                    ["10.244.0.0/16"])
    assert default is not None
    assert (default.ifname, default.port_name, default.mac, default.addresses,
            default.routes, default.table) == (
        "ovn-k8s-mp0", "k8s-ovn-worker", "0a:58:0a:f4:00:02", ("10.244.0.2/24",),
        (("10.244.0.0/16", "10.244.0.1"),), None)
    blue = build_management_port("ovn-worker", "blue_blue-network", 1,
                                 ["103.103.0.0/24", "fd00:103:0:1::/64"],
                                 ["103.103.0.0/16", "fd00:103::/48"])
    assert blue is not None
    assert blue.ifname == "ovn-k8s-mp1" and blue.table == TABLE_BASE + 1
    assert blue.port_name == "k8s-blue_blue.network_ovn-worker"
    assert blue.addresses == ("103.103.0.2/24", "fd00:103:0:1::2/64")
    assert blue.routes == (("103.103.0.0/16", "103.103.0.1"),
                           ("fd00:103::/48", "fd00:103:0:1::1"))
    assert build_management_port("ovn-worker", "blue_blue-network", 1, [], []) is None


def nad(name: str, config: object, network_id: str | None = "1") -> dict[str, object]:
    annotations = {"k8s.ovn.org/network-id": network_id} if network_id is not None else {}
    return {"metadata": {"name": name, "namespace": "ns", "annotations": annotations},
            "spec": {"config": config if isinstance(config, str) else json.dumps(config)}}


def test_primary_networks_come_from_readable_annotated_primary_nads() -> None:
    conf = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": "ns_blue",
            "netAttachDefName": "ns/blue", "topology": "layer3", "role": "primary",
            "subnets": "103.103.0.0/16/24"}
    networks = primary_networks([
        nad("blue", conf),
        nad("blue-copy", conf),  # a CUDN renders one NAD per namespace: one network
        nad("secondary", {**conf, "name": "ns_sec", "role": "secondary"}, "2"),
        nad("unannotated", {**conf, "name": "ns_new"}, None),
        nad("broken", "{not json", "4"),
        nad("local", {**conf, "name": "ns_loc", "topology": "localnet"}, "5"),
        nad("unknown", {**conf, "name": "ns_unk", "topology": "no-such-plugin"}, "6")],
        TOPOLOGIES)
    assert networks == [PrimaryNetwork("ns_blue", 1, "layer3", ("103.103.0.0/16",),
                                       NetworkNeeds(node_subnets=True, transit_switch_subnet=True,
                                                    node_gateway=True, management_port=True))]


def test_cluster_subnets_accept_host_prefixes_and_skip_garbage() -> None:
    assert cluster_subnets("10.1.0.0/16/24, fd00::/48/64,nonsense,10.2.0.0/16") == (
        "10.1.0.0/16", "fd00::/48", "10.2.0.0/16")
    assert cluster_subnets(None) == ()
