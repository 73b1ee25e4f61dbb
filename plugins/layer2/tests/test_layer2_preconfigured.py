"""A primary Layer2 network's preconfigured addresses: parsed, checked, and what they change.

``reservedSubnets`` and ``infrastructureSubnets`` are never handed to pods; the gateway and
management addresses come from ``defaultGatewayIPs`` / the infrastructure subnets
(upstream's ``allocateInfrastructureIPs``); the transit router's port and the pods'
gateway follow.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
from ovnk_layer2.primary import build_router

from ovnk_core.errors import NetworkConfigError
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.plugins import PluginHost
from ovnk_core.pods.annotation import build_pod_network
from ovnk_core.pods.ip_pools import excluded_subnets, infrastructure_ips
from ovnk_core.render_state import NetworkState
from ovnk_core.testing.configs import udn_config

net = ipaddress.ip_network
ip = ipaddress.ip_address
ENABLED = PluginHost.load(udn_config(enable_preconfigured_udn_addresses="true"))
DISABLED = PluginHost.load(udn_config())


def parse(host: PluginHost, role: str = "primary", **keys: Any) -> NetInfo:
    return host.parse_netconf(json.dumps({
        "cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": "ns1_vm",
        "netAttachDefName": "ns1/vm", "topology": "layer2", "role": role,
        "subnets": "10.10.0.0/24", **keys}))


def test_the_keys_are_parsed_with_the_flag_and_refused_without() -> None:
    netinfo = parse(ENABLED, reservedSubnets="10.10.0.128/25",
                    infrastructureSubnets="10.10.0.0/29", defaultGatewayIPs="10.10.0.4")
    assert netinfo.reserved_subnets == (net("10.10.0.128/25"),)
    assert netinfo.infrastructure_subnets == (net("10.10.0.0/29"),)
    assert netinfo.default_gateway_ips == (ip("10.10.0.4"),)
    with pytest.raises(NetworkConfigError, match=r"reservedSubnets set but preconfigured UDN "
                       r"addresses are disabled \(--enable-preconfigured-udn-addresses\)"):
        parse(DISABLED, reservedSubnets="10.10.0.128/25")


@pytest.mark.parametrize(("role", "keys", "message"), [
    ("secondary", {"reservedSubnets": "10.10.0.128/25"},
     "reservedSubnets is only supported for Primary network"),
    ("primary", {"reservedSubnets": "10.99.0.0/25"},
     "the provided network subnets 10.10.0.0/24 do not contain reservedSubnets 10.99.0.0/25"),
    ("primary", {"reservedSubnets": "10.10.0.0/28", "infrastructureSubnets": "10.10.0.0/29"},
     "infrastructureSubnets and reservedSubnets must not overlap"),
    ("primary", {"defaultGatewayIPs": "10.99.0.1"},
     "defaultGatewayIPs must belong to one of the subnets specified in the subnets field"),
    ("primary", {"defaultGatewayIPs": "10.10.0.9", "infrastructureSubnets": "10.10.0.0/29"},
     "defaultGatewayIPs have to belong to infrastructureSubnets"),
    ("primary", {"defaultGatewayIPs": "10.10.0.1,10.10.0.2"},
     "defaultGatewayIPs must be specified for all IP families"),
])
def test_unusable_preconfigured_addresses_are_refused(role: str, keys: dict[str, str],
                                                      message: str) -> None:
    with pytest.raises(NetworkConfigError, match=message):
        parse(ENABLED, role, **keys)


@pytest.mark.parametrize(("keys", "gateway", "management"), [
    ({}, "10.10.0.1", "10.10.0.2"),
    ({"infrastructureSubnets": "10.10.0.240/28"}, "10.10.0.240", "10.10.0.241"),
    ({"infrastructureSubnets": "10.10.0.240/28", "defaultGatewayIPs": "10.10.0.250"},
     "10.10.0.250", "10.10.0.240"),
    ({"infrastructureSubnets": "10.10.0.0/29"}, "10.10.0.1", "10.10.0.2"),  # .0 is never used
    ({"defaultGatewayIPs": "10.10.0.2"}, "10.10.0.2", "10.10.0.1"),  # .2 taken: mgmt is .1
    ({"defaultGatewayIPs": "10.10.0.254"}, "10.10.0.254", "10.10.0.2"),
])
def test_gateway_and_management_addresses(keys: dict[str, str], gateway: str,
                                          management: str) -> None:
    netinfo = parse(ENABLED, **keys)
    assert infrastructure_ips(netinfo, net("10.10.0.0/24")) == (ip(gateway), ip(management))


def test_pods_never_get_reserved_or_infrastructure_addresses_and_use_the_gateway() -> None:
    netinfo = parse(ENABLED, reservedSubnets="10.10.0.128/26",
                    infrastructureSubnets="10.10.0.240/28", defaultGatewayIPs="10.10.0.250",
                    excludeSubnets="10.10.0.64/26")
    excluded = excluded_subnets(netinfo, net("10.10.0.0/24"))
    assert {net("10.10.0.250/32"), net("10.10.0.240/32"), net("10.10.0.128/26"),
            net("10.10.0.240/28"), net("10.10.0.64/26")} <= set(excluded)
    assert net("10.10.0.1/32") not in excluded  # .1 is an ordinary address here
    entry = build_pod_network(ENABLED.config, netinfo, "primary",
                              [ipaddress.ip_interface("10.10.0.1/24")],
                              topology=ENABLED.topology("layer2"), tunnel_id=10)
    assert entry.gateway_ips == ("10.10.0.250",)
    assert all(hop == "10.10.0.250" for _, hop in entry.routes)
    state = NetworkState(netinfo, 3, (net("169.254.0.0/17"),), (), (16711686, 16715779))
    trtos = next(row for row in build_router(state) if row.table == "Logical_Router_Port")
    assert trtos.columns["networks"] == ["10.10.0.250/24"]
