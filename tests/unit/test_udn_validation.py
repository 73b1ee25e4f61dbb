"""Table-driven tests of every UDN/CUDN rule, valid and invalid, with the exact line a real
API server prints for each (CEL rules print the schema type, schema keywords the value)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ovnk_core.udn.admission import validate_udn_hook
from ovnk_core.udn.validation import FieldError, invalid_message, validate_cudn, validate_udn

L3 = {"role": "Primary", "subnets": [{"cidr": "10.100.0.0/16", "hostSubnet": 24}]}
L2 = {"role": "Primary", "subnets": ["10.200.0.0/16"]}
LOCALNET = {"role": "Secondary", "physicalNetworkName": "physnet", "subnets": ["192.168.0.0/24"]}


def udn(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "blue", "namespace": "blue"}, "spec": spec}


def cudn(network: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"metadata": {"name": "red"},
            "spec": {"namespaceSelector": {"matchLabels": {"x": "y"}}, "network": network,
                     **extra}}


def l3(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(L3)
    config.update(changes)
    return config


def l2(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(L2)
    config.update(changes)
    return {k: v for k, v in config.items() if v is not None}


def localnet(**changes: Any) -> dict[str, Any]:
    config = copy.deepcopy(LOCALNET)
    config.update(changes)
    return {k: v for k, v in config.items() if v is not None}


VALID_UDNS = {
    "layer3 primary": udn(topology="Layer3", layer3=L3),
    "layer3 dual stack": udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.100.0.0/16"}, {"cidr": "2001:db8::/60", "hostSubnet": 64}])),
    "layer3 join subnets": udn(topology="Layer3", layer3=l3(joinSubnets=["100.70.0.0/16"])),
    "layer3 secondary two families": udn(topology="Layer3", layer3=l3(
        role="Secondary", subnets=[{"cidr": "10.1.0.0/16"}, {"cidr": "fd00::/48"}])),
    "layer2 primary": udn(topology="Layer2", layer2=L2),
    "layer2 persistent": udn(topology="Layer2", layer2=l2(ipam={"lifecycle": "Persistent"})),
    "layer2 secondary no ipam": udn(topology="Layer2", layer2={
        "role": "Secondary", "ipam": {"mode": "Disabled"}}),
    "layer3 host subnet 29": udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.100.0.0/16", "hostSubnet": 29}])),
    "layer3 dual join for a v4 network": udn(topology="Layer3", layer3=l3(
        joinSubnets=["100.70.0.0/16", "fd70::/64"])),
    "layer3 smallest joins": udn(topology="Layer3", layer3=l3(
        subnets=[{"cidr": "10.100.0.0/16"}, {"cidr": "2001:db8::/60", "hostSubnet": 64}],
        joinSubnets=["100.70.0.0/16", "fd70::/112"])),
    "layer2 preconfigured": udn(topology="Layer2", layer2=l2(
        subnets=["10.200.0.0/16"], infrastructureSubnets=["10.200.0.0/30"],
        reservedSubnets=["10.200.1.0/24"], defaultGatewayIPs=["10.200.0.1"])),
}

INVALID_UDNS = {
    "no topology": (udn(layer3=L3), 'spec.topology: Required value'),
    "localnet on udn": (udn(topology="Localnet", localnet=LOCALNET),
                        'spec.topology: Unsupported value: "Localnet": supported values: "Layer2", '
                        '"Layer3"'),
    "layer3 missing": (udn(topology="Layer3"),
                       'spec: Invalid value: spec.layer3 is required when topology is '
                       'Layer3 and forbidden otherwise'),
    "layer2 with layer3": (udn(topology="Layer3", layer3=L3, layer2=L2),
                           'spec: Invalid value: spec.layer2 is required when topology '
                           'is Layer2 and forbidden otherwise'),
    "bad role": (udn(topology="Layer3", layer3=l3(role="Tertiary")),
                 'spec.layer3.role: Unsupported value: "Tertiary": supported values: "Primary", '
                 '"Secondary"'),
    "bad cidr": (udn(topology="Layer3", layer3=l3(subnets=[{"cidr": "10.0.0.300/16"}])),
                 'spec.layer3.subnets[0].cidr: Invalid value: "10.0.0.300/16": CIDR is invalid'),
    "host subnet not smaller": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.0.0.0/24", "hostSubnet": 16}])), 'spec.layer3.subnets[0]: Invalid value: '
                                                      'HostSubnet must be smaller than '
                                                      'CIDR subnet'),
    "host subnet 32": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.0.0.0/16", "hostSubnet": 32}])), 'spec.layer3.subnets[0]: Invalid value: '
                                                      'HostSubnet must < 32 for ipv4 '
                                                      'CIDR'),
    # ovnk's rules beyond upstream's CEL: each of these was accepted and rendered broken.
    "host subnet 30": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.0.0.0/16", "hostSubnet": 30}])),
        'spec.layer3.subnets[0]: Invalid value: HostSubnet must be at most 29 for ipv4 '
        'CIDR: a /30 node subnet has no address left for pods after its network, gateway (.1), '
        'management port (.2) and broadcast addresses'),
    "host subnet 31": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.0.0.0/16", "hostSubnet": 31}])),
        'spec.layer3.subnets[0]: Invalid value: HostSubnet must be at most 29 for ipv4 '
        'CIDR: a /31 node subnet has no address left for pods after its network, gateway (.1), '
        'management port (.2) and broadcast addresses'),
    "join /30": (udn(topology="Layer3", layer3=l3(joinSubnets=["100.70.0.0/30"])),
                 'spec.layer3.joinSubnets: Invalid value: joinSubnets 100.70.0.0/30 is '
                 'too small: it must hold the cluster router and a gateway router address for '
                 'every node ID (up to 65534), so a /16 or larger IPv4 CIDR'),
    "join /32": (udn(topology="Layer2", layer2=l2(joinSubnets=["100.70.0.1/32"])),
                 'spec.layer2.joinSubnets: Invalid value: joinSubnets 100.70.0.1/32 is '
                 'too small: it must hold the cluster router and a gateway router address for '
                 'every node ID (up to 65534), so a /16 or larger IPv4 CIDR'),
    "join /17": (udn(topology="Layer3", layer3=l3(joinSubnets=["100.70.0.0/17"])),
                 'spec.layer3.joinSubnets: Invalid value: joinSubnets 100.70.0.0/17 is '
                 'too small: it must hold the cluster router and a gateway router address for '
                 'every node ID (up to 65534), so a /16 or larger IPv4 CIDR'),
    "join v6 /113": (udn(topology="Layer3", layer3=l3(
        subnets=[{"cidr": "2001:db8::/60", "hostSubnet": 64}], joinSubnets=["fd70::/113"])),
        'spec.layer3.joinSubnets: Invalid value: joinSubnets fd70::/113 is too small: it '
        'must hold the cluster router and a gateway router address for every node ID (up to '
        '65534), so a /112 or larger IPv6 CIDR'),
    "v6 join on a v4 network": (udn(topology="Layer3", layer3=l3(joinSubnets=["fd70::/64"])),
                                'spec.layer3.joinSubnets: Invalid value: joinSubnets must '
                                'have a CIDR of every IP family of the subnets: IPv4 is missing'),
    "v4 join on a dual-stack layer2": (udn(topology="Layer2", layer2=l2(
        subnets=["10.200.0.0/16", "fd00::/64"], joinSubnets=["100.70.0.0/16"])),
        'spec.layer2.joinSubnets: Invalid value: joinSubnets must have a CIDR of every IP '
        'family of the subnets: IPv6 is missing'),
    "secondary three subnets": (udn(topology="Layer3", layer3=l3(role="Secondary", subnets=[
        {"cidr": "10.1.0.0/16"}, {"cidr": "10.2.0.0/16"}, {"cidr": "fd00::/48"}])),
        'spec.layer3: Invalid value: Secondary networks may define at most 2 subnets'),
    "secondary same family": (udn(topology="Layer3", layer3=l3(role="Secondary", subnets=[
        {"cidr": "10.1.0.0/16"}, {"cidr": "10.2.0.0/16"}])),
        'spec.layer3: Invalid value: When 2 CIDRs are set for Secondary networks, they '
        'must be from different IP families'),
    "join on secondary": (udn(topology="Layer3", layer3=l3(role="Secondary",
                                                            joinSubnets=["100.70.0.0/16"])),
                          'spec.layer3: Invalid value: JoinSubnets is only supported for '
                          'Primary network'),
    "ipv6 low mtu": (udn(topology="Layer3", layer3=l3(mtu=1000, subnets=[
        {"cidr": "fd00::/48"}])), 'spec.layer3: Invalid value: MTU should be greater '
                                  'than or equal to 1280 when IPv6 subnet is used'),
    "mtu out of range": (udn(topology="Layer3", layer3=l3(mtu=100)),
                         'spec.layer3.mtu: Invalid value: 100: spec.layer3.mtu in body should be '
                         'greater than or equal to 576'),
    "overlapping subnets": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.0.0.0/16"}, {"cidr": "10.0.1.0/24"}])),
        'spec.layer3: Invalid value: Subnets must not overlap or contain each other'),
    "duplicate subnets": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.0.0.0/16"}, {"cidr": "10.0.0.0/16"}])),
        'spec.layer3: Invalid value: Subnets with same CIDR are not allowed'),
    "mixed host subnets": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.0.0.0/16", "hostSubnet": 24}, {"cidr": "10.1.0.0/16", "hostSubnet": 25}])),
        'spec.layer3: Invalid value: Subnets from the same IP family must use the same '
        'hostSubnet value'),
    "layer2 no subnets": (udn(topology="Layer2", layer2={"role": "Primary"}),
                          'spec.layer2: Invalid value: Subnets is required with '
                          'ipam.mode is Enabled or unset'),
    "layer2 disabled with subnets": (udn(topology="Layer2", layer2=l2(
        role="Secondary", ipam={"mode": "Disabled"})),
        'spec.layer2: Invalid value: Subnets must be unset when ipam.mode is Disabled'),
    "layer2 disabled primary": (udn(topology="Layer2", layer2={
        "role": "Primary", "ipam": {"mode": "Disabled"}}),
        'spec.layer2: Invalid value: Disabled ipam.mode is only supported for Secondary '
        'network'),
    "persistent with disabled": (udn(topology="Layer2", layer2={
        "role": "Secondary", "ipam": {"mode": "Disabled", "lifecycle": "Persistent"}}),
        'spec.layer2.ipam: Invalid value: lifecycle Persistent is only supported when '
        'ipam.mode is Enabled'),
    "layer2 same family": (udn(topology="Layer2", layer2=l2(subnets=["10.0.0.0/16",
                                                                      "10.1.0.0/16"])),
                           'spec.layer2.subnets: Invalid value: When 2 CIDRs are set, '
                           'they must be from different IP families'),
    "gateway outside": (udn(topology="Layer2", layer2=l2(defaultGatewayIPs=["10.9.0.1"])),
                        'spec.layer2: Invalid value: defaultGatewayIPs must belong to '
                        'one of the subnets specified in the subnets field'),
    "gateway on secondary": (udn(topology="Layer2", layer2=l2(
        role="Secondary", defaultGatewayIPs=["10.200.0.1"])),
        'spec.layer2: Invalid value: defaultGatewayIPs is only supported for Primary '
        'network'),
    "gateway families": (udn(topology="Layer2", layer2=l2(
        subnets=["10.200.0.0/16", "fd00::/64"], defaultGatewayIPs=["10.200.0.1"])),
        'spec.layer2: Invalid value: defaultGatewayIPs must be specified for all IP '
        'families'),
    "reserved outside": (udn(topology="Layer2", layer2=l2(reservedSubnets=["10.9.0.0/24"])),
                         'spec.layer2.reservedSubnets: Invalid value: reservedSubnets '
                         'must be subnetworks of the networks specified in the subnets field'),
    "reserved on secondary": (udn(topology="Layer2", layer2=l2(
        role="Secondary", reservedSubnets=["10.200.1.0/24"])),
        'spec.layer2: Invalid value: reservedSubnets is only supported for Primary '
        'network'),
    "infra host bits": (udn(topology="Layer2", layer2=l2(infrastructureSubnets=["10.200.0.1/30"])),
                        'spec.layer2: Invalid value: infrastructureSubnets must be a '
                        'masked network address (no host bits set)'),
    "infra reserved overlap": (udn(topology="Layer2", layer2=l2(
        infrastructureSubnets=["10.200.0.0/24"], reservedSubnets=["10.200.0.0/25"])),
        'spec.layer2: Invalid value: infrastructureSubnets and reservedSubnets must not '
        'overlap'),
    "gateway not in infra": (udn(topology="Layer2", layer2=l2(
        infrastructureSubnets=["10.200.0.0/30"], defaultGatewayIPs=["10.200.5.1"])),
        'spec.layer2: Invalid value: defaultGatewayIPs have to belong to '
        'infrastructureSubnets'),
}


@pytest.mark.parametrize("obj", VALID_UDNS.values(), ids=VALID_UDNS.keys())
def test_valid_udns(obj: dict[str, Any]) -> None:
    assert validate_udn(obj) == []


@pytest.mark.parametrize(("obj", "message"), INVALID_UDNS.values(), ids=INVALID_UDNS.keys())
def test_invalid_udns(obj: dict[str, Any], message: str) -> None:
    errors = validate_udn(obj)
    assert message in [str(error) for error in errors]


UPDATES = {
    "topology": (udn(topology="Layer3", layer3=L3), udn(topology="Layer2", layer2=L2),
                 'spec.topology: Invalid value: "Layer2": Topology is immutable'),
    "layer2": (udn(topology="Layer2", layer2=L2), udn(topology="Layer2", layer2=l2(mtu=1300)),
               'spec.layer2: Invalid value: Layer2 is immutable'),
    "role": (udn(topology="Layer3", layer3=L3), udn(topology="Layer3", layer3=l3(
        role="Secondary")), 'spec.layer3.role: Invalid value: "Secondary": role is immutable'),
    "mtu": (udn(topology="Layer3", layer3=L3), udn(topology="Layer3", layer3=l3(mtu=1300)),
            'spec.layer3.mtu: Invalid value: 1300: mtu is immutable'),
    "join": (udn(topology="Layer3", layer3=L3), udn(topology="Layer3", layer3=l3(
        joinSubnets=["100.70.0.0/16"])), 'spec.layer3.joinSubnets: Invalid value: '
                                         'joinSubnets is immutable'),
    "remove subnet": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.100.0.0/16", "hostSubnet": 24}, {"cidr": "10.101.0.0/16",
                                                      "hostSubnet": 24}])),
        udn(topology="Layer3", layer3=L3), 'spec.layer3: Invalid value: Removing '
                                           'existing subnets is not allowed'),
    "host subnet": (udn(topology="Layer3", layer3=L3), udn(topology="Layer3", layer3=l3(
        subnets=[{"cidr": "10.100.0.0/16", "hostSubnet": 25}])), 'spec.layer3: Invalid value: '
                                                                 'hostSubnet is '
                                                                 'immutable'),
    "secondary subnets": (udn(topology="Layer3", layer3=l3(role="Secondary")),
                          udn(topology="Layer3", layer3=l3(role="Secondary", subnets=[
                              {"cidr": "10.100.0.0/16", "hostSubnet": 24},
                              {"cidr": "fd00::/48"}])), 'spec.layer3: Invalid value: '
                                                        'Subnets is immutable for Secondary role'),
}


@pytest.mark.parametrize(("old", "new", "message"), UPDATES.values(), ids=UPDATES.keys())
def test_immutable_fields(old: dict[str, Any], new: dict[str, Any], message: str) -> None:
    assert validate_udn(old) == []
    errors = validate_udn(new, old)
    assert message in [str(error) for error in errors]


def test_primary_layer3_may_append_subnets() -> None:
    old = udn(topology="Layer3", layer3=L3)
    new = udn(topology="Layer3", layer3=l3(subnets=[*L3["subnets"], {"cidr": "10.101.0.0/16",
                                                                     "hostSubnet": 24}]))
    assert validate_udn(new, old) == []


VALID_CUDNS = {
    "localnet": cudn({"topology": "Localnet", "localnet": localnet(
        excludeSubnets=["192.168.0.1/32"], vlan={"mode": "Access", "access": {"id": 200}})}),
    "localnet no ipam": cudn({"topology": "Localnet", "localnet": localnet(
        subnets=None, ipam={"mode": "Disabled"})}),
    "layer3": cudn({"topology": "Layer3", "layer3": L3}),
    "evpn layer2": cudn({"topology": "Layer2", "layer2": L2, "transport": "EVPN",
                         "evpn": {"vtep": "v", "macVRF": {"vni": 10}}}),
    "no overlay": cudn({"topology": "Layer3", "layer3": L3, "transport": "NoOverlay",
                        "noOverlay": {"outboundSNAT": "Enabled", "routing": "Managed"}}),
}

INVALID_CUDNS = {
    "no selector": ({"metadata": {"name": "x"}, "spec": {"network": {
        "topology": "Layer3", "layer3": L3}}}, 'spec.namespaceSelector: Required value'),
    "localnet missing": (cudn({"topology": "Localnet"}),
                         'spec.network: Invalid value: spec.localnet is required when '
                         'topology is Localnet and forbidden otherwise'),
    "localnet primary": (cudn({"topology": "Localnet", "localnet": localnet(role="Primary")}),
                         'spec.network.localnet.role: Unsupported value: "Primary": supported '
                         'values: "Secondary"'),
    "physnet comma": (cudn({"topology": "Localnet", "localnet": localnet(
        physicalNetworkName="a,b")}), 'spec.network.localnet.physicalNetworkName: Invalid value: '
                                      '"a,b": physicalNetworkName cannot contain `,` or `:` '
                                      'characters'),
    "localnet no subnets": (cudn({"topology": "Localnet", "localnet": localnet(subnets=None)}),
                            'spec.network.localnet: Invalid value: Subnets is required '
                            'with ipam.mode is Enabled or unset, and forbidden otherwise'),
    "exclude without subnets": (cudn({"topology": "Localnet", "localnet": localnet(
        subnets=None, ipam={"mode": "Disabled"}, excludeSubnets=["10.0.0.0/24"])}),
        'spec.network.localnet: Invalid value: excludeSubnets must be unset when subnets '
        'is unset'),
    "vlan without access": (cudn({"topology": "Localnet", "localnet": localnet(
        vlan={"mode": "Access"})}), 'spec.network.localnet.vlan: Invalid value: vlan '
                                    "access config is required when vlan mode is 'Access', and "
                                    'forbidden otherwise'),
    "no overlay on layer2": (cudn({"topology": "Layer2", "layer2": L2,
                                   "transport": "NoOverlay", "noOverlay": {}}),
                             'spec.network: Invalid value: transport \'NoOverlay\' is '
                             'only supported for Layer3 primary networks'),
    "no overlay config missing": (cudn({"topology": "Layer3", "layer3": L3,
                                        "transport": "NoOverlay"}),
                                  'spec.network: Invalid value: spec.noOverlay is '
                                  "required when type transport is 'NoOverlay'"),
    "no overlay config without transport": (cudn({"topology": "Layer3", "layer3": L3,
                                                  "noOverlay": {}}),
                                            'spec.network: Invalid value: spec.noOverlay '
                                            "is forbidden when transport type is not 'NoOverlay'"),
    "evpn secondary": (cudn({"topology": "Layer3", "layer3": l3(role="Secondary"),
                             "transport": "EVPN", "evpn": {"vtep": "v", "ipVRF": {"vni": 1}}}),
                       'spec.network: Invalid value: transport \'EVPN\' is only '
                       'supported for Layer2 or Layer3 primary networks'),
    "evpn missing": (cudn({"topology": "Layer3", "layer3": L3, "transport": "EVPN"}),
                     'spec.network: Invalid value: spec.evpn field is required when '
                     "transport is 'EVPN'"),
    "evpn forbidden": (cudn({"topology": "Layer3", "layer3": L3, "evpn": {"vtep": "v"}}),
                       'spec.network: Invalid value: spec.evpn field is forbidden when '
                       "transport is not 'EVPN'"),
    "evpn l2 macvrf": (cudn({"topology": "Layer2", "layer2": L2, "transport": "EVPN",
                             "evpn": {"vtep": "v", "ipVRF": {"vni": 1}}}),
                       'spec.network: Invalid value: spec.evpn.macVRF field is required '
                       "for Layer2 topology when transport is 'EVPN'"),
    "evpn l3 ipvrf": (cudn({"topology": "Layer3", "layer3": L3, "transport": "EVPN",
                            "evpn": {"vtep": "v", "macVRF": {"vni": 1}}}),
                      'spec.network: Invalid value: spec.evpn.ipVRF field is required '
                      "for Layer3 topology when transport is 'EVPN'"),
}


@pytest.mark.parametrize("obj", VALID_CUDNS.values(), ids=VALID_CUDNS.keys())
def test_valid_cudns(obj: dict[str, Any]) -> None:
    assert validate_cudn(obj) == []


@pytest.mark.parametrize(("obj", "message"), INVALID_CUDNS.values(), ids=INVALID_CUDNS.keys())
def test_invalid_cudns(obj: dict[str, Any], message: str) -> None:
    errors = validate_cudn(obj)
    assert message in [str(error) for error in errors]


def test_localnet_is_immutable() -> None:
    old = cudn({"topology": "Localnet", "localnet": LOCALNET})
    new = cudn({"topology": "Localnet", "localnet": localnet(mtu=1600)})
    assert [str(e) for e in validate_cudn(new, old)] == [
        'spec.network.localnet: Invalid value: Localnet is immutable']


def test_invalid_message_matches_api_server_format() -> None:
    one = [FieldError("spec", "spec.layer3 is required when topology is Layer3 and forbidden "
                              "otherwise")]
    assert invalid_message("UserDefinedNetwork", "k8s.ovn.org", "blue", one) == (
        'UserDefinedNetwork.k8s.ovn.org "blue" is invalid: spec: Invalid value: '
        "spec.layer3 is required when topology is Layer3 and forbidden otherwise")
    two = [*one, FieldError("spec.topology", "Topology is immutable", "Layer2")]
    assert invalid_message("UserDefinedNetwork", "k8s.ovn.org", "blue", two).endswith(
        '[spec: Invalid value: spec.layer3 is required when topology is Layer3 and '
        'forbidden otherwise, spec.topology: Invalid value: "Layer2": Topology is immutable]')


SCHEMA_KEYWORDS = {
    "no spec": ({"metadata": {"name": "blue"}}, ["spec: Required value"]),
    "spec not an object": ({"metadata": {"name": "blue"}, "spec": "Layer3"}, [
        'spec: Invalid value: "string": spec in body must be of type object: "string"']),
    "topology not a string": (udn(topology=3), [
        'spec.topology: Invalid value: "integer": spec.topology in body must be of type '
        'string: "integer"']),
    "layer3 not an object": (udn(topology="Layer3", layer3=["x"]), [
        'spec.layer3: Invalid value: "array": spec.layer3 in body must be of type object: '
        '"array"']),
    "no role": (udn(topology="Layer3", layer3={"subnets": L3["subnets"]}),
                ["spec.layer3.role: Required value"]),
    "no subnets": (udn(topology="Layer3", layer3={"role": "Primary"}),
                   ["spec.layer3.subnets: Required value"]),
    "empty subnets": (udn(topology="Layer3", layer3=l3(subnets=[])), [
        "spec.layer3.subnets: Invalid value: 0: spec.layer3.subnets in body should have at "
        "least 1 items"]),
    "401 subnets": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": f"10.{i // 256}.{i % 256}.0/24"} for i in range(401)])), [
        "spec.layer3.subnets: Too many: 401: must have at most 400 items"]),
    "subnet without cidr": (udn(topology="Layer3", layer3=l3(subnets=[{"hostSubnet": 24}])),
                            ["spec.layer3.subnets[0].cidr: Required value"]),
    "host subnet 0": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "10.0.0.0/16", "hostSubnet": 0}])), [
        "spec.layer3.subnets[0].hostSubnet: Invalid value: 0: spec.layer3.subnets[0].hostSubnet "
        "in body should be greater than or equal to 1"]),
    "host subnet 200": (udn(topology="Layer3", layer3=l3(subnets=[
        {"cidr": "fd00::/48", "hostSubnet": 200}])), [
        "spec.layer3.subnets[0].hostSubnet: Invalid value: 200: "
        "spec.layer3.subnets[0].hostSubnet in body should be less than or equal to 127"]),
    "mtu too big": (udn(topology="Layer3", layer3=l3(mtu=70000)), [
        "spec.layer3.mtu: Invalid value: 70000: spec.layer3.mtu in body should be less than or "
        "equal to 65536"]),
    "mtu a string": (udn(topology="Layer3", layer3=l3(mtu="big")), [
        'spec.layer3.mtu: Invalid value: "string": spec.layer3.mtu in body must be of type '
        'integer: "string"']),
    "role a number": (udn(topology="Layer3", layer3=l3(role=1)), [
        'spec.layer3.role: Invalid value: "integer": spec.layer3.role in body must be of type '
        'string: "integer"']),
    "three layer2 subnets": (udn(topology="Layer2", layer2=l2(subnets=[
        "10.1.0.0/16", "fd00::/64", "10.2.0.0/16"])), [
        "spec.layer2.subnets: Too many: 3: must have at most 2 items"]),
    "empty join subnets": (udn(topology="Layer2", layer2=l2(joinSubnets=[])), [
        "spec.layer2.joinSubnets: Invalid value: 0: spec.layer2.joinSubnets in body should "
        "have at least 1 items"]),
    "cidr a number": (udn(topology="Layer2", layer2=l2(subnets=[10])), [
        'spec.layer2.subnets[0]: Invalid value: "integer": spec.layer2.subnets[0] in body must '
        'be of type string: "integer"']),
    "empty ipam": (udn(topology="Layer2", layer2=l2(ipam={})), [
        "spec.layer2.ipam: Invalid value: 0: spec.layer2.ipam in body should have at least 1 "
        "properties"]),
    "ipam mode": (udn(topology="Layer2", layer2=l2(ipam={"mode": "Auto"})), [
        'spec.layer2.ipam.mode: Unsupported value: "Auto": supported values: "Enabled", '
        '"Disabled"']),
    "gateway not an ip": (udn(topology="Layer2", layer2=l2(
        subnets=["10.200.0.0/16", "fd00::/64"], defaultGatewayIPs=["10.200.0.1", "fd00::x"])), [
        'spec.layer2.defaultGatewayIPs[1]: Invalid value: "fd00::x": IP is invalid']),
}


@pytest.mark.parametrize(("obj", "expected"), SCHEMA_KEYWORDS.values(),
                         ids=SCHEMA_KEYWORDS.keys())
def test_schema_keywords_print_what_the_api_server_prints(obj: dict[str, Any],
                                                          expected: list[str]) -> None:
    """Type, Required, enum, bounds, item and property counts: the value (or count) found."""
    assert [str(error) for error in validate_udn(obj)] == expected


LOCALNET_KEYWORDS = {
    "no physical network": (localnet(physicalNetworkName=None),
                            ["spec.network.localnet.physicalNetworkName: Required value"]),
    "empty physical network": (localnet(physicalNetworkName=""), [
        'spec.network.localnet.physicalNetworkName: Invalid value: "": '
        "spec.network.localnet.physicalNetworkName in body should be at least 1 chars long",
        'spec.network.localnet.physicalNetworkName: Invalid value: "": '
        "physicalNetworkName cannot contain `,` or `:` characters"]),
    "long physical network": (localnet(physicalNetworkName="p" * 254), [
        "spec.network.localnet.physicalNetworkName: Too long: may not be more than 253 bytes"]),
    "vlan id 5000": (localnet(vlan={"mode": "Access", "access": {"id": 5000}}), [
        "spec.network.localnet.vlan.access.id: Invalid value: 5000: "
        "spec.network.localnet.vlan.access.id in body should be less than or equal to 4094"]),
    "vlan without id": (localnet(vlan={"mode": "Access", "access": {}}), [
        "spec.network.localnet.vlan.access.id: Required value"]),
}


@pytest.mark.parametrize(("config", "expected"), LOCALNET_KEYWORDS.values(),
                         ids=LOCALNET_KEYWORDS.keys())
def test_localnet_schema_keywords(config: dict[str, Any], expected: list[str]) -> None:
    errors = validate_cudn(cudn({"topology": "Localnet", "localnet": config}))
    assert [str(error) for error in errors] == expected


def test_cudn_without_network_or_selector() -> None:
    errors = validate_cudn({"metadata": {"name": "red"}, "spec": {"namespaceSelector": []}})
    assert [str(e) for e in errors] == [
        'spec.namespaceSelector: Invalid value: "array": spec.namespaceSelector in body must '
        'be of type object: "array"', "spec.network: Required value"]


def test_admission_hook_turns_errors_into_api_causes() -> None:
    """The hook hands the API server errors of the right kind, so the 422 has the right causes."""
    errors = validate_udn_hook("CREATE", udn(topology="Layer3", layer3=l3(
        mtu=100, subnets=[{"cidr": "300.0.0.0/24"}])), None)
    assert errors is not None
    assert [(e.reason, e.field, e.body()) for e in errors] == [
        ("FieldValueInvalid", "spec.layer3.subnets[0].cidr",
         'Invalid value: "300.0.0.0/24": CIDR is invalid'),
        ("FieldValueInvalid", "spec.layer3.mtu",
         "Invalid value: 100: spec.layer3.mtu in body should be greater than or equal to 576")]
    unsupported = validate_udn_hook("CREATE", udn(topology="Localnet"), None)
    assert unsupported is not None
    assert [(e.reason, e.field) for e in unsupported] == [("FieldValueNotSupported",
                                                           "spec.topology")]


@pytest.mark.parametrize(("target", "problems"), [
    ("65000:100", []), ("4200000000:100", []), ("10.0.0.1:100", []), ("*:4294967295", []),
    ("65000", ["RT must contain exactly one colon"]),
    ("1:2:3", ["RT must contain exactly one colon"]),
    ("as:100", ["RT global administrator must be either '*', an IPv4 address, or a number"]),
    ("65000:x", ["RT local administrator must be a number"]),
    ("*:4294967296", ["RT with wildcard global administrator must have format *:OPQR where "
                      "OPQR <= 4294967295"]),
    ("10.0.0.1:70000", ["RT with IPv4 global administrator must have format A.B.C.D:MN where "
                        "MN <= 65535"]),
    ("4200000000:70000", ["RT with 4-byte ASN global administrator must have format GHJK:MN "
                          "where GHJK <= 4294967295 and MN <= 65535"]),
    ("65000:4294967296", ["RT with 2-byte ASN global administrator must have format EF:OPQR "
                          "where EF <= 65535 and OPQR <= 4294967295"]),
])
def test_route_targets(target: str, problems: list[str]) -> None:
    network = {"topology": "Layer2", "layer2": L2, "transport": "EVPN",
               "evpn": {"vtep": "v", "macVRF": {"vni": 10, "routeTarget": target}}}
    assert [str(e) for e in validate_cudn(cudn(network))] == [
        f'spec.network.evpn.macVRF.routeTarget: Invalid value: "{target}": {problem}'
        for problem in problems]


def test_evpn_vrfs() -> None:
    def errors(evpn: dict[str, Any]) -> list[str]:
        network = {"topology": "Layer3", "layer3": L3, "transport": "EVPN",
                   "evpn": {"vtep": "v", **evpn}}
        return [str(e) for e in validate_cudn(cudn(network))]

    assert "spec.network.evpn: Invalid value: at least one of macVRF or ipVRF must be " \
           "specified" in errors({})
    assert "spec.network.evpn: Invalid value: macVRF and ipVRF must use different VNIs" in \
        errors({"macVRF": {"vni": 5}, "ipVRF": {"vni": 5}})
    assert errors({"ipVRF": {"vni": 5}}) == []
