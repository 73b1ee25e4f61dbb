"""The shipped CRD YAML files are exactly what the builders produce, and carry upstream's
names, scopes, short names, status subresources and CEL messages."""

from __future__ import annotations

import json

from ovnk_core.manifests.crds import CRD_DIR, build_crds, crd_file_name, render


def test_shipped_yaml_matches_builders() -> None:
    built = build_crds()
    assert sorted(p.name for p in CRD_DIR.glob("*.yaml")) == sorted(map(crd_file_name, built))
    for obj in built:
        assert (CRD_DIR / crd_file_name(obj)).read_text() == render(obj), (
            "run: python -m ovnk_core.manifests.crds")


def test_crd_identities() -> None:
    crds = {c["metadata"]["name"]: c["spec"] for c in build_crds()}
    udn = crds["userdefinednetworks.k8s.ovn.org"]
    cudn = crds["clusteruserdefinednetworks.k8s.ovn.org"]
    nad = crds["network-attachment-definitions.k8s.cni.cncf.io"]
    assert (udn["scope"], udn["names"]["shortNames"]) == ("Namespaced", ["udn"])
    assert (cudn["scope"], cudn["names"]["shortNames"]) == ("Cluster", ["cudn"])
    assert nad["names"]["shortNames"] == ["net-attach-def"]
    assert udn["versions"][0]["subresources"] == {"status": {}}
    assert crds["ipamclaims.k8s.cni.cncf.io"]["versions"][0]["name"] == "v1alpha1"
    assert crds["egressips.k8s.ovn.org"]["scope"] == "Cluster"


def test_upstream_cel_messages_are_present() -> None:
    text = json.dumps(build_crds())
    for message in (
        "spec.layer3 is required when topology is Layer3 and forbidden otherwise",
        "spec.layer2 is required when topology is Layer2 and forbidden otherwise",
        "spec.localnet is required when topology is Localnet and forbidden otherwise",
        "Topology is immutable", "Layer2 is immutable", "Localnet is immutable",
        "HostSubnet must be smaller than CIDR subnet", "HostSubnet must < 32 for ipv4 CIDR",
        "JoinSubnets is only supported for Primary network",
        "Subnets must not overlap or contain each other",
        "Disabled ipam.mode is only supported for Secondary network",
        "lifecycle Persistent is only supported when ipam.mode is Enabled",
        "physicalNetworkName cannot contain `,` or `:` characters",
        "transport 'NoOverlay' is only supported for Layer3 primary networks",
        "spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'",
    ):
        assert message in text, message
