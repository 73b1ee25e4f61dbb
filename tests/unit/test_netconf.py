"""Parsing NAD netconfs into NetInfo through the bundled topology plugins.

Golden netconfs are upstream's template tests (udn-reference §2.2); rules are
§1.3-1.5 and §2.3.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from ipaddress import ip_network
from typing import Any

import pytest

from ovnk_core.config import load_config
from ovnk_core.config.values import ClusterSubnet
from ovnk_core.errors import NetworkConfigError, TopologyNotSupported
from ovnk_core.networks.builtin_checks import check_network, find_internal_overlaps
from ovnk_core.networks.netconf import parse_common
from ovnk_core.networks.netconf_fields import DEFAULT_UDN_JOIN_SUBNETS
from ovnk_core.networks.netinfo import NetInfo, NetworkNeeds
from ovnk_core.plugins import PluginHost

UDN = {"enable_multi_network": "true", "enable_network_segmentation": "true",
       "v4_masquerade_subnet": "169.254.0.0/17", "v6_masquerade_subnet": "fd69::/112"}
DROP = object()  # marks a key to remove from a base netconf


@pytest.fixture(scope="module")
def hosts() -> dict[str, PluginHost]:
    def host(**cli: str) -> PluginHost:
        return PluginHost.load(load_config(cli, env={}))

    return {
        "default": host(),
        "udn": host(**UDN),
        "persistent": host(**UDN, enable_persistent_ips="true"),
        "layer3-only": host(**UDN, topologies="layer3"),
        "mtu-9000": host(**UDN, enable_persistent_ips="true", mtu="9000"),
        "mtu-1100": host(**UDN, mtu="1100"),
    }


def nc(base: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    doc = dict(base)
    for key, value in changes.items():
        if value is DROP:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def parse(host: PluginHost, doc: str | Mapping[str, Any]) -> NetInfo:
    netinfo = host.parse_netconf(doc)
    assert isinstance(netinfo, NetInfo)
    return netinfo


def cs(cidr: str, host_prefix: int | None = None) -> ClusterSubnet:
    net = ip_network(cidr)
    return ClusterSubnet(net, net.prefixlen if host_prefix is None else host_prefix)


def nets(*cidrs: str) -> tuple[Any, ...]:
    return tuple(ip_network(c) for c in cidrs)


COMMON = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay",
          "name": "mynamespace_test-net", "netAttachDefName": "mynamespace/test-net"}
L3 = {**COMMON, "topology": "layer3", "role": "primary", "subnets": "10.100.0.0/16/24"}
L3_SECONDARY = {**COMMON, "topology": "layer3", "role": "secondary",
                "subnets": "10.100.0.0/16/24"}
L2 = {**COMMON, "topology": "layer2", "role": "primary", "subnets": "10.100.0.0/24"}
L2_SECONDARY = {**COMMON, "topology": "layer2", "role": "secondary"}
LOCALNET = {**COMMON, "name": "cluster_udn_test-net", "topology": "localnet",
            "role": "secondary", "physicalNetworkName": "mylocalnet1",
            "subnets": "192.168.100.0/24,2001:dbb::/64"}

# --------------------------------------------------------------------------- golden netconfs

GOLDEN_LAYER3 = ('{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"mynamespace_test-net",'
                 '"netAttachDefName":"mynamespace/test-net","role":"primary","topology":"layer3",'
                 '"joinSubnet":"100.65.0.0/16,fd99::/64",'
                 '"subnets":"192.168.100.0/16,2001:dbb::/60","mtu":1500}')
GOLDEN_LAYER2 = ('{"cniVersion":"1.1.0","type":"ovn-k8s-cni-overlay","name":"mynamespace_test-net",'
                 '"netAttachDefName":"mynamespace/test-net","role":"primary","topology":"layer2",'
                 '"joinSubnet":"100.65.0.0/16,fd99::/64","transitSubnet":"100.88.0.0/16,fd97::/64",'
                 '"subnets":"192.168.100.0/24,2001:dbb::/64","mtu":1500,"allowPersistentIPs":true}')
GOLDEN_LOCALNET = {**COMMON, "name": "cluster_udn_test-net", "role": "secondary",
                   "topology": "localnet", "physicalNetworkName": "mylocalnet1",
                   "subnets": "192.168.100.0/24,2001:dbb::/64",
                   "excludeSubnets": "192.168.100.1/32,2001:dbb::0/128", "mtu": 1600,
                   "vlanID": 200, "allowPersistentIPs": True}


def test_golden_primary_layer3_masks_host_bits_like_upstream(
        hosts: dict[str, PluginHost]) -> None:
    # 192.168.100.0/16 has host bits set: upstream's net.ParseCIDR masks them (the CRD's
    # isCIDR() accepts it too), so the network is 192.168.0.0/16 and not an error.
    netinfo = parse(hosts["udn"], GOLDEN_LAYER3)
    assert netinfo == NetInfo(
        name="mynamespace_test-net", topology="layer3", role="primary", mtu=1500,
        subnets=(cs("192.168.0.0/16", 24), cs("2001:dbb::/60", 64)),
        join_subnets=nets("100.65.0.0/16", "fd99::/64"), nad_key="mynamespace/test-net",
        needs=NetworkNeeds(node_subnets=True, transit_switch_subnet=True, node_gateway=True,
                           management_port=True),
    )
    assert netinfo.is_primary and not netinfo.is_default
    assert netinfo.prefix == "mynamespace_test.net_"
    # The same document as a mapping parses to an equal NetInfo.
    assert parse(hosts["udn"], json.loads(GOLDEN_LAYER3)) == netinfo


def test_golden_primary_layer2_with_persistent_ips(hosts: dict[str, PluginHost]) -> None:
    netinfo = parse(hosts["persistent"], GOLDEN_LAYER2)
    assert netinfo == NetInfo(
        name="mynamespace_test-net", topology="layer2", role="primary", mtu=1500,
        subnets=(cs("192.168.100.0/24"), cs("2001:dbb::/64")),
        join_subnets=nets("100.65.0.0/16", "fd99::/64"),
        transit_subnets=nets("100.88.0.0/16", "fd97::/64"),
        allow_persistent_ips=True, nad_key="mynamespace/test-net",
        needs=NetworkNeeds(pod_tunnel_ids=True, extra_tunnel_keys=1, node_gateway=True),
    )


def test_golden_layer2_persistent_ips_need_the_flag(hosts: dict[str, PluginHost]) -> None:
    with pytest.raises(NetworkConfigError) as info:
        parse(hosts["udn"], GOLDEN_LAYER2)
    assert str(info.value) == "allowPersistentIPs is set but persistentIPs is Disabled"
    assert info.value.reason == "InvalidNetworkConfig"


def test_golden_localnet_cudn(hosts: dict[str, PluginHost]) -> None:
    netinfo = parse(hosts["persistent"], GOLDEN_LOCALNET)
    assert netinfo == NetInfo(
        name="cluster_udn_test-net", topology="localnet", role="secondary", mtu=1600,
        subnets=(cs("192.168.100.0/24"), cs("2001:dbb::/64")),
        exclude_subnets=nets("192.168.100.1/32", "2001:dbb::/128"),
        vlan_id=200, physical_network_name="mylocalnet1", allow_persistent_ips=True,
        nad_key="mynamespace/test-net",
    )


@pytest.mark.parametrize(
    ("host", "mtu"), [("persistent", 1500), ("mtu-9000", 9100)],
    ids=["default-1400+100", "cluster-9000+100"],
)
def test_localnet_default_mtu_is_cluster_mtu_plus_100(
        hosts: dict[str, PluginHost], host: str, mtu: int) -> None:
    assert parse(hosts[host], nc(GOLDEN_LOCALNET, mtu=DROP)).mtu == mtu


@pytest.mark.parametrize(
    ("doc", "mtu"),
    [(nc(L3, mtu=DROP), 1400), (nc(L3, mtu=0), 1400), (nc(L3, mtu=-1), 1400),
     (nc(L3, mtu=9000), 9000), (nc(L2, mtu=DROP), 1400)],
    ids=["layer3-unset", "layer3-zero", "layer3-negative", "layer3-set", "layer2-unset"],
)
def test_overlay_default_mtu_is_cluster_mtu(hosts: dict[str, PluginHost], doc: dict[str, Any],
                                            mtu: int) -> None:
    assert parse(hosts["udn"], doc).mtu == mtu


# --------------------------------------------------------------------------- accepted variants

@pytest.mark.parametrize(
    ("doc", "check"),
    [
        (nc(L3, joinSubnet=DROP), {"join_subnets": DEFAULT_UDN_JOIN_SUBNETS}),
        (nc(L3, joinSubnet="100.70.0.0/16"), {"join_subnets": nets("100.70.0.0/16")}),
        (L3_SECONDARY, {"join_subnets": (), "role": "secondary"}),
        (nc(L3_SECONDARY, role=DROP), {"role": "secondary"}),
        (nc(L3_SECONDARY, role=""), {"role": "secondary"}),
        (nc(L3, topology="Layer3"), {"topology": "layer3"}),
        (nc(L3, subnets="10.100.0.0/16/26,fd00:100::/48/64"),
         {"subnets": (cs("10.100.0.0/16", 26), cs("fd00:100::/48", 64))}),
        (nc(L3, subnets="10.100.0.0/16"), {"subnets": (cs("10.100.0.0/16", 24),)}),
        (nc(L3, netAttachDefName=DROP), {"nad_key": ""}),
        (nc(L3, allowPersistentIPs=False), {"allow_persistent_ips": False}),
        (L2_SECONDARY, {"subnets": (), "join_subnets": (), "transit_subnets": ()}),
        (nc(L2, transitSubnet=DROP), {"transit_subnets": ()}),
        (nc(L2, subnets="10.100.0.5/24"), {"subnets": (cs("10.100.0.0/24"),)}),
        (nc(L2_SECONDARY, subnets="10.100.0.0/24", excludeSubnets="10.100.0.0/29"),
         {"exclude_subnets": nets("10.100.0.0/29")}),
        (nc(L2_SECONDARY, transitSubnet="100.88.0.0/16"), {"transit_subnets": ()}),
        (nc(LOCALNET, physicalNetworkName=DROP),
         {"physical_network_name": "cluster_udn_test-net"}),
        (nc(LOCALNET, subnets=DROP), {"subnets": ()}),
        (nc(LOCALNET, vlanID=1), {"vlan_id": 1}),
        (nc(LOCALNET, vlanID=4094), {"vlan_id": 4094}),
        (LOCALNET, {"vlan_id": None, "allow_persistent_ips": False}),
    ],
    ids=["layer3-default-join", "layer3-custom-join", "layer3-secondary-no-join",
         "role-defaults-to-secondary", "empty-role-is-secondary", "topology-case-insensitive",
         "layer3-dual-stack", "layer3-default-host-prefix", "no-nad-key",
         "layer3-persistent-false", "layer2-secondary-without-subnets",
         "layer2-primary-without-transit", "layer2-host-bits-masked", "layer2-exclude",
         "transit-only-read-for-primary", "localnet-physical-defaults-to-name",
         "localnet-without-subnets", "vlan-1", "vlan-4094", "localnet-no-vlan"],
)
def test_accepted_netconfs(hosts: dict[str, PluginHost], doc: dict[str, Any],
                           check: dict[str, Any]) -> None:
    netinfo = parse(hosts["udn"], doc)
    assert {key: getattr(netinfo, key) for key in check} == check


# --------------------------------------------------------------------------- errors

ERRORS: list[tuple[str, str, Any, str, str]] = [
    # id, host, document, message, reason
    ("bad-json", "udn", '{"type": ', "netconf is not valid JSON: Expecting value: line 1 "
     "column 10 (char 9)", "InvalidNetworkConfig"),
    ("json-array", "udn", "[1, 2]", "netconf must be a JSON object", "InvalidNetworkConfig"),
    ("wrong-type", "udn", nc(L3, type="bridge"),
     "netconf type 'bridge' is not 'ovn-k8s-cni-overlay'", "NotOVNKubernetes"),
    ("missing-type", "udn", nc(L3, type=DROP),
     "netconf type None is not 'ovn-k8s-cni-overlay'", "NotOVNKubernetes"),
    ("ipam-key", "udn", nc(L2, ipam={"type": "whereabouts"}),
     "IPAM key is not supported. Use OVN-K provided IPAM via the subnets attribute",
     "InvalidNetworkConfig"),
    ("missing-name", "udn", nc(L3, name=DROP), "netconf name is required",
     "InvalidNetworkConfig"),
    ("empty-name", "udn", nc(L3, name=""), "netconf name is required", "InvalidNetworkConfig"),
    ("name-not-string", "udn", nc(L3, name=7), "netconf name is required",
     "InvalidNetworkConfig"),
    ("missing-topology", "udn", nc(L3, topology=DROP),
     "netconf of network 'mynamespace_test-net' has no topology", "InvalidNetworkConfig"),
    ("reserved-default", "udn", nc(L3, name="default"),
     "invalid name in in secondary network netconf (default)", "InvalidNetworkConfig"),
    ("reserved-ovn-kubernetes", "udn", nc(L2, name="ovn-kubernetes"),
     "invalid name in in secondary network netconf (ovn-kubernetes)", "InvalidNetworkConfig"),
    ("reserved-ext", "udn", nc(L3_SECONDARY, name="ext"),
     "network name 'ext' is reserved: its node switches would be named ext_<node>, like the "
     "default network's external switches", "InvalidNetworkConfig"),
    ("reserved-gr", "udn", nc(L2_SECONDARY, name="GR"),
     "network name 'GR' is reserved: its node switches would be named GR_<node>, like the "
     "default network's gateway routers", "InvalidNetworkConfig"),
    ("no-overlay-transport", "udn", nc(L3, transport="no-overlay"),
     "netconf transport 'no-overlay' of network 'mynamespace_test-net' is not supported by "
     "this control plane (only the default Geneve overlay is)", "TransportNotSupported"),
    ("evpn-transport", "udn", nc(L2, transport="evpn"),
     "netconf transport 'evpn' of network 'mynamespace_test-net' is not supported by this "
     "control plane (only the default Geneve overlay is)", "TransportNotSupported"),
    ("invalid-role", "udn", nc(L3, role="tertiary"), "invalid network role value 'tertiary'",
     "InvalidNetworkConfig"),
    ("role-default-is-not-allowed", "udn", nc(L3, role="default"),
     "invalid network role value 'default'", "InvalidNetworkConfig"),
    ("mtu-string", "udn", nc(L3, mtu="1500"), "netconf 'mtu' must be an integer, got '1500'",
     "InvalidNetworkConfig"),
    ("mtu-bool", "udn", nc(L3, mtu=True), "netconf 'mtu' must be an integer, got True",
     "InvalidNetworkConfig"),
    ("nad-key-not-string", "udn", nc(L3, netAttachDefName=5),
     "netconf 'netAttachDefName' must be a string, got 5", "InvalidNetworkConfig"),
    # Layer3
    ("layer3-persistent-ips", "persistent", nc(L3, allowPersistentIPs=True),
     "layer3 topology does not allow persistent IPs", "InvalidNetworkConfig"),
    ("layer3-persistent-not-bool", "udn", nc(L3, allowPersistentIPs="yes"),
     "netconf 'allowPersistentIPs' must be true or false, got 'yes'", "InvalidNetworkConfig"),
    ("layer3-no-subnets", "udn", nc(L3, subnets=DROP),
     "network mynamespace_test-net: layer3 topology requires subnets", "InvalidNetworkConfig"),
    ("layer3-subnets-not-string", "udn", nc(L3, subnets=["10.100.0.0/16"]),
     "netconf 'subnets' must be a string, got ['10.100.0.0/16']", "InvalidNetworkConfig"),
    ("layer3-exclude-subnets", "udn", nc(L3, excludeSubnets="10.100.0.0/29"),
     "layer3 topology does not support excludeSubnets", "InvalidNetworkConfig"),
    ("layer3-host-33", "udn", nc(L3, subnets="10.100.0.0/16/33"),
     "invalid layer3 subnet: '10.100.0.0/16/33': host prefix /33 is longer than 32",
     "InvalidNetworkConfig"),
    ("layer3-host-not-longer", "udn", nc(L3, subnets="10.100.0.0/16/16"),
     "invalid layer3 subnet: '10.100.0.0/16/16': host prefix /16 must be longer than the "
     "CIDR's /16", "InvalidNetworkConfig"),
    ("layer3-v6-host-60", "udn", nc(L3, subnets="10.100.0.0/16,2001:db8::/48/60"),
     "invalid layer3 subnet: '2001:db8::/48/60': IPv6 only supports /64 host subnets",
     "InvalidNetworkConfig"),
    ("layer3-v6-64-no-room", "udn", nc(L3, subnets="2001:db8::/64"),
     "invalid layer3 subnet: '2001:db8::/64': host prefix /64 must be longer than the "
     "CIDR's /64", "InvalidNetworkConfig"),
    ("layer3-host-30", "udn", nc(L3, subnets="10.100.0.0/16/30"),
     "invalid layer3 subnet: '10.100.0.0/16/30': HostSubnet must be at most 29 for ipv4 CIDR: "
     "a /30 node subnet has no address left for pods after its network, gateway (.1), "
     "management port (.2) and broadcast addresses", "InvalidNetworkConfig"),
    ("layer3-host-31-dual-stack", "udn", nc(L3, subnets="fd00:100::/48,10.100.0.0/16/31"),
     "invalid layer3 subnet: '10.100.0.0/16/31': HostSubnet must be at most 29 for ipv4 CIDR: "
     "a /31 node subnet has no address left for pods after its network, gateway (.1), "
     "management port (.2) and broadcast addresses", "InvalidNetworkConfig"),
    ("layer3-host-not-number", "udn", nc(L3, subnets="10.100.0.0/16/x"),
     "invalid layer3 subnet: '10.100.0.0/16/x': host prefix 'x' is not a number",
     "InvalidNetworkConfig"),
    ("layer3-bad-cidr", "udn", nc(L3, subnets="10.100.0.0/40"),
     "invalid layer3 subnet: '10.100.0.0/40' is not a valid CIDR ('10.100.0.0/40' does not "
     "appear to be an IPv4 or IPv6 network)", "InvalidNetworkConfig"),
    ("layer3-mixed-host-prefixes", "udn", nc(L3, subnets="10.100.0.0/16/24,10.200.0.0/16/25"),
     "Subnets from the same IP family must use the same hostSubnet value",
     "InvalidNetworkConfig"),
    ("layer3-overlapping-subnets", "udn", nc(L3, subnets="10.100.0.0/16,10.100.0.0/20"),
     "Subnets must not overlap or contain each other", "InvalidNetworkConfig"),
    ("layer3-secondary-join", "udn", nc(L3_SECONDARY, joinSubnet="100.65.0.0/16"),
     "JoinSubnets is only supported for Primary network", "InvalidNetworkConfig"),
    ("layer3-two-v4-joins", "udn", nc(L3, joinSubnet="100.65.0.0/16,100.66.0.0/16"),
     "netconf 'joinSubnet' may hold at most one CIDR per IP family", "InvalidNetworkConfig"),
    ("layer3-bad-join", "udn", nc(L3, joinSubnet="100.65.0.0/33"),
     "netconf 'joinSubnet': '100.65.0.0/33' is not a valid CIDR ('100.65.0.0/33' does not "
     "appear to be an IPv4 or IPv6 network)", "InvalidNetworkConfig"),
    ("layer3-v6-join-on-v4-network", "udn", nc(L3, joinSubnet="fd99::/64"),
     "joinSubnet must have a CIDR of every IP family of the subnets: IPv4 is missing",
     "InvalidNetworkConfig"),
    ("layer3-join-30", "udn", nc(L3, joinSubnet="100.65.0.0/30"),
     "joinSubnet 100.65.0.0/30 is too small: it must hold the cluster router and a gateway "
     "router address for every node ID (up to 65534), so a /16 or larger IPv4 CIDR",
     "InvalidNetworkConfig"),
    ("layer3-join-32-and-missing-v6", "udn",
     nc(L3, subnets="10.100.0.0/16,fd00:100::/48", joinSubnet="100.65.0.1/32"),
     "joinSubnet must have a CIDR of every IP family of the subnets: IPv6 is missing; "
     "joinSubnet 100.65.0.1/32 is too small: it must hold the cluster router and a gateway "
     "router address for every node ID (up to 65534), so a /16 or larger IPv4 CIDR",
     "InvalidNetworkConfig"),
    ("layer3-ipv6-mtu-1279", "udn", nc(L3, subnets="10.100.0.0/16,fd00:100::/48", mtu=1279),
     "MTU should be greater than or equal to 1280 when IPv6 subnet is used",
     "InvalidNetworkConfig"),
    # Layer2
    ("layer2-primary-without-subnets", "udn", nc(L2, subnets=DROP),
     "the subnet attribute must be defined for layer2 primary user defined networks",
     "InvalidNetworkConfig"),
    ("layer2-persistent-flag-off", "udn", nc(L2, allowPersistentIPs=True),
     "allowPersistentIPs is set but persistentIPs is Disabled", "InvalidNetworkConfig"),
    ("layer2-persistent-without-subnets", "persistent",
     nc(L2_SECONDARY, allowPersistentIPs=True),
     "allowPersistentIPs is set but the network has no subnets", "InvalidNetworkConfig"),
    ("layer2-two-v4-subnets", "udn", nc(L2, subnets="10.100.0.0/24,10.101.0.0/24"),
     "netconf 'subnets' may hold at most one CIDR per IP family", "InvalidNetworkConfig"),
    ("layer2-bad-subnet", "udn", nc(L2, subnets="10.100.0.0/33"),
     "netconf 'subnets': '10.100.0.0/33' is not a valid CIDR ('10.100.0.0/33' does not "
     "appear to be an IPv4 or IPv6 network)", "InvalidNetworkConfig"),
    ("layer2-exclude-outside", "udn", nc(L2, excludeSubnets="10.200.0.0/28"),
     "the provided network subnets 10.100.0.0/24 do not contain excluded subnets 10.200.0.0/28",
     "InvalidNetworkConfig"),
    ("layer2-exclude-without-subnets", "udn", nc(L2_SECONDARY, excludeSubnets="10.1.0.0/28"),
     "excludeSubnets must be unset when subnets is unset", "InvalidNetworkConfig"),
    ("layer2-secondary-join", "udn", nc(L2_SECONDARY, subnets="10.100.0.0/24",
                                        joinSubnet="100.65.0.0/16"),
     "JoinSubnets is only supported for Primary network", "InvalidNetworkConfig"),
    ("layer2-join-v6-too-small", "udn",
     nc(L2, subnets="fd00:100::/64", joinSubnet="fd99::/120"),
     "joinSubnet fd99::/120 is too small: it must hold the cluster router and a gateway "
     "router address for every node ID (up to 65534), so a /112 or larger IPv6 CIDR",
     "InvalidNetworkConfig"),
    ("layer2-ipv6-mtu-1200", "udn", nc(L2, subnets="fd00:100::/64", mtu=1200),
     "MTU should be greater than or equal to 1280 when IPv6 subnet is used",
     "InvalidNetworkConfig"),
    # Localnet
    ("localnet-primary", "udn", nc(LOCALNET, role="primary"),
     "unexpected network field \"role\" 'primary' for \"localnet\" topology, only "
     "\"secondary\" role is supported", "InvalidNetworkConfig"),
    ("localnet-join", "udn", nc(LOCALNET, joinSubnet="100.65.0.0/16"),
     "localnet topology does not support joinSubnet", "InvalidNetworkConfig"),
    ("localnet-physical-comma", "udn", nc(LOCALNET, physicalNetworkName="phys,net"),
     "physicalNetworkName cannot contain `,` or `:` characters", "InvalidNetworkConfig"),
    ("localnet-physical-colon", "udn", nc(LOCALNET, physicalNetworkName="phys:net"),
     "physicalNetworkName cannot contain `,` or `:` characters", "InvalidNetworkConfig"),
    ("localnet-physical-not-string", "udn", nc(LOCALNET, physicalNetworkName=3),
     "netconf 'physicalNetworkName' must be a string, got 3", "InvalidNetworkConfig"),
    ("localnet-vlan-0", "udn", nc(LOCALNET, vlanID=0), "vlanID 0 is out of range (1..4094)",
     "InvalidNetworkConfig"),
    ("localnet-vlan-4095", "udn", nc(LOCALNET, vlanID=4095),
     "vlanID 4095 is out of range (1..4094)", "InvalidNetworkConfig"),
    ("localnet-vlan-string", "udn", nc(LOCALNET, vlanID="200"),
     "netconf 'vlanID' must be an integer, got '200'", "InvalidNetworkConfig"),
    ("localnet-exclude-outside-v6", "udn", nc(LOCALNET, excludeSubnets="2001:dbc::1/128"),
     "the provided network subnets 192.168.100.0/24,2001:dbb::/64 do not contain excluded "
     "subnets 2001:dbc::1/128", "InvalidNetworkConfig"),
    ("localnet-exclude-without-subnets", "udn",
     nc(LOCALNET, subnets=DROP, excludeSubnets="192.168.100.1/32"),
     "excludeSubnets must be unset when subnets is unset", "InvalidNetworkConfig"),
    ("localnet-persistent-flag-off", "udn", GOLDEN_LOCALNET,
     "allowPersistentIPs is set but persistentIPs is Disabled", "InvalidNetworkConfig"),
    ("localnet-ipv6-mtu-1279", "udn", nc(LOCALNET, mtu=1279),
     "MTU should be greater than or equal to 1280 when IPv6 subnet is used",
     "InvalidNetworkConfig"),
    # --mtu 1100 gives localnet a default of 1200: too small once an IPv6 subnet is used.
    ("localnet-ipv6-default-mtu-1200", "mtu-1100", LOCALNET,
     "MTU should be greater than or equal to 1280 when IPv6 subnet is used",
     "InvalidNetworkConfig"),
]


@pytest.mark.parametrize(("host", "doc", "message", "reason"), [e[1:] for e in ERRORS],
                         ids=[e[0] for e in ERRORS])
def test_invalid_netconf(hosts: dict[str, PluginHost], host: str, doc: Any, message: str,
                         reason: str) -> None:
    with pytest.raises(NetworkConfigError) as info:
        hosts[host].parse_netconf(doc)
    assert type(info.value) is NetworkConfigError
    assert str(info.value) == message
    assert info.value.reason == reason


def test_parse_common_keeps_raw_document_for_topology_keys() -> None:
    conf = parse_common(nc(LOCALNET, vlanID=200, role=DROP))
    assert (conf.name, conf.topology, conf.role, conf.mtu, conf.nad_key) == (
        "cluster_udn_test-net", "localnet", "secondary", None, "mynamespace/test-net")
    assert conf.raw["vlanID"] == 200
    assert conf.get_int("vlanID") == 200
    assert conf.get_int("missing") is None
    assert conf.get_str("missing", "dflt") == "dflt"
    assert conf.get_bool("missing") is False
    assert conf.get_cidrs("missing") == ()


# --------------------------------------------------------------------------- subnet overlaps

OVERLAP = "pod or join subnet overlaps with already configured internal subnets: "


@pytest.mark.parametrize(
    ("doc", "phrases"),
    [
        (nc(L3, subnets="10.244.0.0/16/24"),
         ["user defined subnet 10.244.0.0/16 overlaps cluster subnet 10.244.0.0/16"]),
        (nc(L3, subnets="10.244.128.0/17/24"),
         ["user defined subnet 10.244.128.0/17 overlaps cluster subnet 10.244.0.0/16"]),
        (nc(L3, subnets="10.96.0.0/12/24"),
         ["user defined subnet 10.96.0.0/12 overlaps service subnet 10.96.0.0/16"]),
        (nc(L3, subnets="100.64.0.0/16/24"),
         ["user defined subnet 100.64.0.0/16 overlaps built-in join subnet 100.64.0.0/16"]),
        (nc(L3, subnets="169.254.0.0/16/24"),
         ["user defined subnet 169.254.0.0/16 overlaps masquerade subnet 169.254.0.0/17"]),
        (nc(L3, subnets="100.88.0.0/16/24"),
         ["user defined subnet 100.88.0.0/16 overlaps transit switch subnet 100.88.0.0/16"]),
        (nc(L3, subnets="10.100.0.0/16/24,fd97::/48"),
         ["user defined subnet fd97::/48 overlaps transit switch subnet fd97::/64"]),
        (nc(L3, subnets="10.100.0.0/16/24,fd98::/48"),
         ["user defined subnet fd98::/48 overlaps built-in join subnet fd98::/64"]),
        (nc(L3, subnets="10.100.0.0/16/24,fd69::/48"),
         ["user defined subnet fd69::/48 overlaps masquerade subnet fd69::/112"]),
        (nc(L3, joinSubnet="100.64.0.0/16"),
         ["user defined join subnet 100.64.0.0/16 overlaps built-in join subnet 100.64.0.0/16"]),
        (nc(L2, joinSubnet="100.88.0.0/16,fd98::/64"),
         ["user defined join subnet fd98::/64 overlaps built-in join subnet fd98::/64"]),
        (nc(L2, subnets="10.96.0.0/24"),
         ["user defined subnet 10.96.0.0/24 overlaps service subnet 10.96.0.0/16"]),
        (nc(LOCALNET, subnets="169.254.0.0/24"),
         ["user defined subnet 169.254.0.0/24 overlaps masquerade subnet 169.254.0.0/17"]),
        (nc(L3, subnets="10.0.0.0/8/24"),
         ["user defined subnet 10.0.0.0/8 overlaps cluster subnet 10.244.0.0/16",
          "user defined subnet 10.0.0.0/8 overlaps service subnet 10.96.0.0/16"]),
        (nc(LOCALNET, subnets="10.0.0.0/8", excludeSubnets="10.244.0.0/16"),
         ["user defined subnet 10.0.0.0/8 overlaps service subnet 10.96.0.0/16"]),
        (nc(LOCALNET, subnets="10.0.0.0/8", excludeSubnets="10.244.0.0/17,10.96.0.0/16"),
         ["user defined subnet 10.0.0.0/8 overlaps cluster subnet 10.244.0.0/16"]),
        (nc(L3, subnets="100.65.0.0/16/24"),
         ["user defined join subnet 100.65.0.0/16 overlaps user defined subnet "
          "100.65.0.0/16"]),
        (nc(L3, subnets="100.70.128.0/17/24", joinSubnet="100.70.0.0/16"),
         ["user defined join subnet 100.70.0.0/16 overlaps user defined subnet "
          "100.70.128.0/17"]),
        (nc(L2, subnets="10.100.0.0/24,fd99::/64"),
         ["user defined join subnet fd99::/64 overlaps user defined subnet fd99::/64"]),
    ],
    ids=["layer3-vs-cluster", "layer3-inside-cluster", "layer3-contains-service",
         "layer3-vs-join", "layer3-vs-masquerade", "layer3-vs-transit", "layer3-v6-vs-transit",
         "layer3-v6-vs-join", "layer3-v6-vs-masquerade", "user-join-vs-join",
         "layer2-user-join-v6", "layer2-vs-service", "localnet-vs-masquerade",
         "two-overlaps-one-message", "excluded-cluster-not-reported",
         "partly-excluded-still-reported", "layer3-equal-to-default-join",
         "layer3-inside-own-join", "layer2-v6-equal-to-default-join"],
)
def test_subnet_overlapping_internal_subnets_is_rejected(
        hosts: dict[str, PluginHost], doc: dict[str, Any], phrases: list[str]) -> None:
    with pytest.raises(NetworkConfigError) as info:
        hosts["udn"].parse_netconf(doc)
    assert info.value.reason == "SubnetOverlap"
    assert str(info.value) == OVERLAP + "; ".join(phrases)


@pytest.mark.parametrize(
    "doc",
    [nc(L2, subnets="100.88.0.0/24"),
     nc(L2_SECONDARY, subnets="100.88.0.0/24"),
     nc(LOCALNET, subnets="100.88.0.0/24,fd97::/64"),
     nc(LOCALNET, subnets="10.0.0.0/8", excludeSubnets="10.244.0.0/16,10.96.0.0/16"),
     nc(LOCALNET, subnets="10.0.0.0/8", excludeSubnets="10.64.0.0/10,10.192.0.0/10"),
     nc(L3_SECONDARY, subnets="100.65.0.0/16/24")],
    ids=["layer2-primary-transit-not-checked", "layer2-secondary-transit-not-checked",
         "localnet-transit-not-checked", "all-overlaps-excluded", "excluded-by-supernet",
         "secondary-has-no-join-subnet"],
)
def test_subnets_that_do_not_clash(hosts: dict[str, PluginHost], doc: dict[str, Any]) -> None:
    netinfo = parse(hosts["udn"], doc)
    assert netinfo.subnets


def test_default_network_is_not_checked_for_overlaps(hosts: dict[str, PluginHost]) -> None:
    """The default network owns the built-in subnets (no NAD may name it: see
    ``reserved-default``); the core's check leaves it alone."""
    default = NetInfo(name="default", topology="layer3", role="default", mtu=1400,
                      subnets=(cs("10.244.0.0/16", 24),), join_subnets=nets("100.64.0.0/16"))
    assert find_internal_overlaps(default, hosts["udn"].config)  # the overlaps exist...
    check_network(default, hosts["udn"].config)


# --------------------------------------------------------------------------- topology plugins

@pytest.mark.parametrize(
    ("host", "doc", "message"),
    [("udn", nc(L3, topology="evpn"),
      "topology 'evpn' is not supported: no enabled topology plugin provides it "
      "(available: layer2, layer3, localnet)"),
     ("layer3-only", L2,
      "topology 'layer2' is not supported: no enabled topology plugin provides it "
      "(available: layer3)"),
     ("layer3-only", LOCALNET,
      "topology 'localnet' is not supported: no enabled topology plugin provides it "
      "(available: layer3)")],
    ids=["not-installed", "layer2-not-enabled", "localnet-not-enabled"],
)
def test_topology_not_supported(hosts: dict[str, PluginHost], host: str, doc: dict[str, Any],
                                message: str) -> None:
    with pytest.raises(TopologyNotSupported) as info:
        hosts[host].parse_netconf(doc)
    assert str(info.value) == message
    assert info.value.reason == "TopologyNotSupported"
    assert info.value.topology == doc["topology"]
    assert isinstance(info.value, NetworkConfigError)


def test_layer3_only_host_still_parses_layer3(hosts: dict[str, PluginHost]) -> None:
    assert parse(hosts["layer3-only"], L3).topology == "layer3"


def test_an_invalid_netconf_does_not_affect_the_next_one(hosts: dict[str, PluginHost]) -> None:
    host = hosts["udn"]
    good = nc(L3, name="ns1_blue", netAttachDefName="ns1/blue")
    expected = parse(host, good)
    bad: list[Any] = [nc(L3, topology="evpn"), nc(L3, subnets="10.244.0.0/16/24"),
                      nc(L2, subnets=DROP), '{"broken', nc(LOCALNET, vlanID=0)]
    for doc in bad:
        with pytest.raises(NetworkConfigError):
            host.parse_netconf(doc)
        assert parse(host, good) == expected
    assert parse(host, L2).topology == "layer2"
    assert parse(host, LOCALNET).topology == "localnet"
