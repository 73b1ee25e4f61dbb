"""NAD rendering against upstream's golden examples (template tests) and identity rules."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ovnk_core.config import load_config
from ovnk_core.errors import NetworkConfigError
from ovnk_core.udn.nad import (
    FINALIZER,
    NAD_LABEL,
    build_nad,
    merge_for_update,
    nad_needs_update,
    transit_subnets,
)

CONFIG = load_config({}, env={})
PERSISTENT = load_config({"enable_persistent_ips": "true"}, env={})


def udn(spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
            "metadata": {"name": "test-net", "namespace": "mynamespace", "uid": "u1", **meta},
            "spec": spec}


def cudn(network: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "k8s.ovn.org/v1", "kind": "ClusterUserDefinedNetwork",
            "metadata": {"name": "test-net", "uid": "c1"},
            "spec": {"namespaceSelector": {}, "network": network}}


def config_of(nad: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(nad["spec"]["config"])
    return result


def test_golden_primary_layer3() -> None:
    nad = build_nad(udn({"topology": "Layer3", "layer3": {
        "role": "Primary", "mtu": 1500,
        "subnets": [{"cidr": "192.168.100.0/16"}, {"cidr": "2001:dbb::/60"}]}}),
        "mynamespace", CONFIG)
    assert config_of(nad) == json.loads(
        '{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"mynamespace_test-net",'
        '"netAttachDefName":"mynamespace/test-net","role":"primary","topology":"layer3",'
        '"joinSubnet":"100.65.0.0/16,fd99::/64","subnets":"192.168.100.0/16,2001:dbb::/60",'
        '"mtu":1500}')


def test_golden_primary_layer2_persistent() -> None:
    obj = udn({"topology": "Layer2", "layer2": {
        "role": "Primary", "mtu": 1500, "subnets": ["192.168.100.0/24", "2001:dbb::/64"],
        "ipam": {"lifecycle": "Persistent"}}})
    assert config_of(build_nad(obj, "mynamespace", PERSISTENT)) == json.loads(
        '{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"mynamespace_test-net",'
        '"netAttachDefName":"mynamespace/test-net","role":"primary","topology":"layer2",'
        '"joinSubnet":"100.65.0.0/16,fd99::/64","transitSubnet":"100.88.0.0/16,fd97::/64",'
        '"subnets":"192.168.100.0/24,2001:dbb::/64","mtu":1500,"allowPersistentIPs":true}')
    with pytest.raises(NetworkConfigError,
                       match="allowPersistentIPs is set but persistentIPs is Disabled"):
        build_nad(obj, "mynamespace", CONFIG)


def test_golden_cudn_localnet() -> None:
    localnet = {"role": "Secondary", "physicalNetworkName": "mylocalnet1",
                "subnets": ["192.168.100.0/24", "2001:dbb::/64"],
                "excludeSubnets": ["192.168.100.1/32", "2001:dbb::0/128"], "mtu": 1600,
                "vlan": {"mode": "Access", "access": {"id": 200}},
                "ipam": {"lifecycle": "Persistent"}}
    nad = build_nad(cudn({"topology": "Localnet", "localnet": localnet}), "mynamespace",
                    PERSISTENT)
    assert config_of(nad) == json.loads(
        '{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"cluster_udn_test-net",'
        '"netAttachDefName":"mynamespace/test-net","role":"secondary","topology":"localnet",'
        '"physicalNetworkName":"mylocalnet1","subnets":"192.168.100.0/24,2001:dbb::/64",'
        '"excludeSubnets":"192.168.100.1/32,2001:dbb::0/128","mtu":1600,"vlanID":200,'
        '"allowPersistentIPs":true}')
    del localnet["mtu"]
    assert config_of(build_nad(cudn({"topology": "Localnet", "localnet": localnet}),
                               "mynamespace", PERSISTENT))["mtu"] == 1500


def test_secondary_has_no_join_subnet_and_host_subnet_is_rendered() -> None:
    cni = config_of(build_nad(udn({"topology": "Layer3", "layer3": {
        "role": "Secondary", "subnets": [{"cidr": "10.100.0.0/16", "hostSubnet": 24}]}}),
        "mynamespace", CONFIG))
    assert "joinSubnet" not in cni and "mtu" not in cni
    assert cni["subnets"] == "10.100.0.0/16/24"


def test_custom_join_subnets() -> None:
    cni = config_of(build_nad(udn({"topology": "Layer3", "layer3": {
        "role": "Primary", "subnets": [{"cidr": "10.100.0.0/16"}],
        "joinSubnets": ["100.70.0.0/16"]}}), "mynamespace", CONFIG))
    assert cni["joinSubnet"] == "100.70.0.0/16"


def test_identity_labels_annotations_owner_and_finalizer() -> None:
    obj = udn({"topology": "Layer2", "layer2": {"role": "Primary", "subnets": ["10.0.0.0/24"]}},
              labels={"team": "blue"},
              annotations={"note": "x", "k8s.ovn.org/internal": "y"})
    nad = build_nad(obj, "mynamespace", CONFIG)
    meta = nad["metadata"]
    assert (meta["name"], meta["namespace"]) == ("test-net", "mynamespace")
    assert meta["labels"] == {"team": "blue", NAD_LABEL: ""}
    assert meta["annotations"] == {"note": "x"}
    assert meta["finalizers"] == [FINALIZER]
    assert meta["ownerReferences"] == [{
        "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork", "name": "test-net",
        "uid": "u1", "controller": True, "blockOwnerDeletion": True}]
    assert "annotations" not in build_nad(udn(obj["spec"]), "mynamespace", CONFIG)["metadata"]


def test_transit_subnet_moves_off_overlapping_subnets() -> None:
    assert transit_subnets(["10.0.0.0/24"]) == "100.88.0.0/16"
    assert transit_subnets(["100.88.0.0/24", "fd97::/64"]) == "100.89.0.0/16,fd97:0:0:1::/64"


def test_update_keeps_ovn_annotations_and_detects_drift() -> None:
    obj = udn({"topology": "Layer3", "layer3": {"role": "Primary",
                                                "subnets": [{"cidr": "10.100.0.0/16"}]}})
    desired = build_nad(obj, "mynamespace", CONFIG)
    existing = json.loads(json.dumps(desired))
    existing["metadata"].update(resourceVersion="7", uid="n1",
                                annotations={"k8s.ovn.org/network-id": "3"})
    assert not nad_needs_update(existing, desired)
    tampered = json.loads(json.dumps(existing))
    tampered["spec"]["config"] = tampered["spec"]["config"].replace("10.100", "10.101")
    assert nad_needs_update(tampered, desired)
    merged = merge_for_update(tampered, desired)
    assert merged["metadata"]["annotations"] == {"k8s.ovn.org/network-id": "3"}
    assert merged["metadata"]["resourceVersion"] == "7"
    assert config_of(merged) == config_of(desired)


def test_unsupported_transports_are_clear_errors() -> None:
    network = {"topology": "Layer3", "transport": "EVPN", "evpn": {"vtep": "v"},
               "layer3": {"role": "Primary", "subnets": [{"cidr": "10.1.0.0/16"}]}}
    with pytest.raises(NetworkConfigError) as info:
        build_nad(cudn(network), "ns", CONFIG)
    assert str(info.value) == "transport 'EVPN' is not supported by this control plane"
    # NoOverlay is not rendered as an overlay network either: it is refused the same way.
    no_overlay = dict(network, transport="NoOverlay", noOverlay={"outboundSNAT": "Enabled"})
    del no_overlay["evpn"]
    with pytest.raises(NetworkConfigError) as info:
        build_nad(cudn(no_overlay), "ns", CONFIG)
    assert str(info.value) == "transport 'NoOverlay' is not supported by this control plane"
