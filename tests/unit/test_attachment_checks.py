"""The zone's checks of a pod-networks entry before it becomes a logical switch port."""

from __future__ import annotations

import dataclasses
import ipaddress
import json
from typing import Any

import pytest

from ovnk_core.annotations.pod_networks import PodNetwork
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.plugins import PluginHost
from ovnk_core.pods.annotation import build_pod_network, random_mac
from ovnk_core.testing.configs import udn_config
from ovnk_core.zone.attachment_checks import (
    REASON,
    PodContext,
    check_attachment,
    choose_holder,
    conflict_problem,
    mac_problems,
    refusal_message,
)
from ovnk_core.zone.networks import READY, default_network, lookup_network

CONFIG = udn_config()
HOST = PluginHost.load(CONFIG)
DEFAULT = default_network(CONFIG).netinfo
NODE_SUBNET = ipaddress.ip_network("10.244.1.0/24")
BLUE_NODE_SUBNET = ipaddress.ip_network("103.103.1.0/24")
POD = PodContext("blue", "a", "ovn-worker", primary_nads=("blue/blue-network",))
PLAIN = PodContext("plain", "p", "ovn-worker")


def network(name: str, nad_key: str, **config: Any) -> NetInfo:
    namespace, nad_name = nad_key.split("/")
    netconf = {"cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": name,
               "netAttachDefName": nad_key, **config}
    nad = {"metadata": {"name": nad_name, "namespace": namespace,
                        "annotations": {"k8s.ovn.org/network-id": "3",
                                        "k8s.ovn.org/tunnel-keys": "[16711686,16715779]"}},
           "spec": {"config": json.dumps(netconf)}}
    lookup = lookup_network(name, [nad], CONFIG, HOST)
    assert lookup.status == READY and lookup.state is not None, lookup.reason
    return lookup.state.netinfo


BLUE = network("blue_blue-network", "blue/blue-network", topology="layer3", role="primary",
               subnets="103.103.0.0/16/24")
SIDE = network("side_red", "side/red", topology="layer2", role="secondary",
               subnets="192.168.0.0/24", excludeSubnets="192.168.0.192/26")
TEAL2 = network("teal_l2", "teal/l2", topology="layer2", role="primary",
                subnets="10.50.0.0/24")


def entry(netinfo: NetInfo | None, role: str, *ips: str) -> PodNetwork:
    """What the cluster manager's pod IPAM writes."""
    return build_pod_network(CONFIG, netinfo, role,
                             [ipaddress.ip_interface(ip) for ip in ips],
                             tunnel_id=10 if netinfo and netinfo.needs.pod_tunnel_ids else None,
                             topology=HOST.topology(netinfo.topology) if netinfo else None)


def check(pod: PodContext, nad_key: str, value: PodNetwork, netinfo: NetInfo,
          node_subnets: tuple[Any, ...] = (NODE_SUBNET,)) -> list[str]:
    return check_attachment(CONFIG, pod, nad_key, value, netinfo, node_subnets,
                            HOST.topology(netinfo.topology))


# -- what the pod IPAM writes passes ------------------------------------------------------------
@pytest.mark.parametrize(("pod", "nad_key", "value", "netinfo", "subnets"), [
    (PLAIN, "default", entry(None, "primary", "10.244.1.5/24"), DEFAULT, (NODE_SUBNET,)),
    (POD, "default", entry(None, "infrastructure-locked", "10.244.1.5/24"), DEFAULT,
     (NODE_SUBNET,)),
    (POD, "blue/blue-network", entry(BLUE, "primary", "103.103.1.3/24"), BLUE,
     (BLUE_NODE_SUBNET,)),
    (dataclasses.replace(PLAIN, requested=("side/red",)), "side/red",
     entry(SIDE, "secondary", "192.168.0.1/24"), SIDE, ()),  # no reserved .1 on L2 secondary
    (PodContext("teal", "t", "n", primary_nads=("teal/l2",)), "teal/l2",
     entry(TEAL2, "primary", "10.50.0.3/24"), TEAL2, ()),
])
def test_what_the_pod_ipam_writes_is_accepted(pod: PodContext, nad_key: str, value: PodNetwork,
                                              netinfo: NetInfo, subnets: tuple[Any, ...]
                                              ) -> None:
    assert check(pod, nad_key, value, netinfo, subnets) == []


def test_a_default_entry_may_be_infrastructure_locked_before_the_zone_knows_the_udn() -> None:
    # The NAD may reach the zone after the pod: no false alarm.
    assert check(PLAIN, "default", entry(None, "infrastructure-locked", "10.244.1.5/24"),
                 DEFAULT) == []


# -- the network ------------------------------------------------------------------------------
def test_the_primary_network_of_another_namespace_is_refused() -> None:
    green = PodContext("green", "g", "ovn-worker", primary_nads=("green/green-network",))
    assert check(green, "blue/blue-network", entry(BLUE, "primary", "103.103.1.200/24"), BLUE,
                 (BLUE_NODE_SUBNET,)) == [
        "network blue_blue-network is the primary network of namespace blue, not of the "
        "pod's namespace green"]


def test_a_primary_network_named_as_a_secondary_selection_is_still_refused() -> None:
    green = PodContext("green", "g", "ovn-worker", requested=("blue/blue-network",))
    assert check(green, "blue/blue-network", entry(BLUE, "secondary", "103.103.1.200/24"),
                 BLUE, (BLUE_NODE_SUBNET,)) == [
        "network blue_blue-network is the primary network of namespace blue, not of the "
        "pod's namespace green",
        "role 'secondary' is not the network's role 'primary'"]


def test_a_secondary_network_the_pod_does_not_request_is_refused() -> None:
    assert check(PLAIN, "side/red", entry(SIDE, "secondary", "192.168.0.5/24"), SIDE) == [
        "network side_red (NAD side/red) is not requested in the pod's "
        "k8s.v1.cni.cncf.io/networks"]
    other = dataclasses.replace(PLAIN, requested=("plain/red",))  # same name, own namespace
    assert len(check(other, "side/red", entry(SIDE, "secondary", "192.168.0.5/24"), SIDE)) == 1


@pytest.mark.parametrize(("pod", "role", "problem"), [
    (PLAIN, "secondary", "role 'secondary' is not a role on the default network (expected "
     "'primary' or 'infrastructure-locked')"),
    (PLAIN, "\x00", "role '\\x00' is not a role on the default network (expected "
     "'primary' or 'infrastructure-locked')"),
    (POD, "primary", "role 'primary' on the default network, but namespace blue has the "
     "primary network of NAD blue/blue-network (expected 'infrastructure-locked')"),
])
def test_default_network_roles(pod: PodContext, role: str, problem: str) -> None:
    value = dataclasses.replace(entry(None, "primary", "10.244.1.5/24"), role=role)
    assert check(pod, "default", value, DEFAULT) == [problem]


def test_a_host_network_pod_has_no_attachments() -> None:
    pod = dataclasses.replace(PLAIN, host_network=True)
    assert check(pod, "default", entry(None, "primary", "10.244.1.5/24"), DEFAULT) == [
        "the pod uses the host network: it has no pod network attachments"]


# -- the addresses ----------------------------------------------------------------------------
@pytest.mark.parametrize(("ip", "problem"), [
    ("10.244.1.1/24", "IP 10.244.1.1 is the gateway address of 10.244.1.0/24"),
    ("10.244.1.2/24", "IP 10.244.1.2 is the management port address of 10.244.1.0/24"),
    ("10.244.1.0/24", "IP 10.244.1.0 is the network address of 10.244.1.0/24"),
    ("10.244.1.255/24", "IP 10.244.1.255 is the broadcast address of 10.244.1.0/24"),
    ("10.244.2.5/24", "IP 10.244.2.5/24 is outside node ovn-worker's subnet(s) 10.244.1.0/24 "
     "of network default"),
    ("10.244.1.5/16", "IP 10.244.1.5/16 does not have the prefix length of its subnet "
     "10.244.1.0/24"),
    ("fd00::5/64", "IP fd00::5/64 is outside node ovn-worker's subnet(s) 10.244.1.0/24 of "
     "network default"),
])
def test_addresses_of_the_node_subnet(ip: str, problem: str) -> None:
    value = dataclasses.replace(entry(None, "primary", "10.244.1.5/24"), ip_addresses=(ip,))
    assert check(PLAIN, "default", value, DEFAULT) == [problem]


def test_address_forms() -> None:
    base = entry(None, "primary", "10.244.1.5/24")
    def with_ip(text: str) -> list[str]:
        return check(PLAIN, "default", dataclasses.replace(base, ip_addresses=(text,)),
                     DEFAULT)
    assert with_ip("10.244.1.5/255.255.255.0") == [
        "IP address '10.244.1.5/255.255.255.0' is not in canonical CIDR form "
        "('10.244.1.5/24')"]
    assert with_ip("0a00:0::5/64") == [
        "IP address '0a00:0::5/64' is not in canonical CIDR form ('a00::5/64')"]
    assert with_ip("fe80::1%e\x00/64") == ["IP address 'fe80::1%e\\x00/64' has a zone index"]
    two = dataclasses.replace(base, ip_addresses=("10.244.1.5/24", "10.244.1.6/24"))
    assert check(PLAIN, "default", two, DEFAULT) == [
        "IPs 10.244.1.5/24 and 10.244.1.6/24 are both in subnet 10.244.1.0/24 (one address "
        "per subnet)"]
    none = dataclasses.replace(base, ip_addresses=())
    assert check(PLAIN, "default", none, DEFAULT) == ["the entry has no IP address"]


def test_cluster_wide_ipam_uses_the_network_subnets_and_its_exclusions() -> None:
    pod = dataclasses.replace(PLAIN, requested=("side/red",))
    base = entry(SIDE, "secondary", "192.168.0.5/24")

    def with_ip(ip: str) -> list[str]:
        return check(pod, "side/red", dataclasses.replace(base, ip_addresses=(ip,)), SIDE,
                     (NODE_SUBNET,))  # node subnets do not matter here
    assert with_ip("192.168.0.200/24") == [
        "IP 192.168.0.200 is excluded from 192.168.0.0/24 (in 192.168.0.192/26)"]
    assert with_ip("10.244.1.5/24") == [
        "IP 10.244.1.5/24 is outside the subnet(s) 192.168.0.0/24 of network side_red"]
    primary = PodContext("teal", "t", "n", primary_nads=("teal/l2",))
    gateway = dataclasses.replace(entry(TEAL2, "primary", "10.50.0.3/24"),
                                  ip_addresses=("10.50.0.1/24",))
    problems = check(primary, "teal/l2", gateway, TEAL2)
    assert problems[0] == "IP 10.50.0.1 is the gateway address of 10.50.0.0/24"


def test_a_node_without_a_subnet_and_a_network_without_subnets() -> None:
    assert check(PLAIN, "default", entry(None, "primary", "10.244.1.5/24"), DEFAULT, ()) == [
        "node ovn-worker has no subnet in network default"]
    no_ipam = dataclasses.replace(SIDE, subnets=(), exclude_subnets=())
    pod = dataclasses.replace(PLAIN, requested=("side/red",))
    assert check(pod, "side/red", entry(SIDE, "secondary", "192.168.0.5/24"), no_ipam) == [
        "network side_red has no subnets: it gives no IP addresses"]


# -- gateways and routes ----------------------------------------------------------------------
def test_gateways_must_be_the_subnet_gateway() -> None:
    base = entry(None, "primary", "10.244.1.5/24")
    assert base.gateway_ips == ("10.244.1.1",)
    forged = dataclasses.replace(base, gateway_ips=("10.244.1.9",))
    assert check(PLAIN, "default", forged, DEFAULT) == [
        "gateway IPs 10.244.1.9 are not the ones the network gives (10.244.1.1)"]
    bad = dataclasses.replace(base, gateway_ips=("gw",))
    assert check(PLAIN, "default", bad, DEFAULT) == ["gateway IP 'gw' is not an IP address"]
    locked = entry(None, "infrastructure-locked", "10.244.1.5/24")
    assert check(POD, "default", dataclasses.replace(locked, gateway_ips=("10.244.1.1",)),
                 DEFAULT) == ["gateway IPs 10.244.1.1 are not the ones the network gives "
                              "(none)"]


def test_routes_must_be_ones_the_network_gives() -> None:
    base = entry(None, "primary", "10.244.1.5/24")
    fewer = dataclasses.replace(base, routes=base.routes[:1])  # an older configuration's
    assert check(PLAIN, "default", fewer, DEFAULT) == []
    stolen = dataclasses.replace(base, routes=(*base.routes, ("0.0.0.0/0", "10.244.1.1")))
    assert check(PLAIN, "default", stolen, DEFAULT) == [
        "route 0.0.0.0/0 via 10.244.1.1 is not one the network gives"]
    elsewhere = dataclasses.replace(base, routes=(("10.244.0.0/16", "10.244.1.7"),))
    assert check(PLAIN, "default", elsewhere, DEFAULT) == [
        "route 10.244.0.0/16 via 10.244.1.7 is not one the network gives"]
    junk = dataclasses.replace(base, routes=(("10.244.0.1/16", "x"),))
    assert check(PLAIN, "default", junk, DEFAULT) == [
        "route '10.244.0.1/16' via 'x' is not a destination subnet and a next hop"]
    lla = dataclasses.replace(base, ipv6_lla_gateway_ip="fe80::1")
    assert check(PLAIN, "default", lla, DEFAULT) == [
        "ipv6_lla_gateway_ip 'fe80::1' is not the one the network gives (none)"]


# -- the MAC ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("mac", "problem"), [
    ("0a:58:0a:f4:01:05", None),
    ("0A:58:0A:F4:01:05", None),
    ("0a:58:0a:f4:01", "MAC address '0a:58:0a:f4:01' is not a MAC address (six hex octets "
     "separated by colons)"),
    ("0a:58:0a:f4:01:0\x00", "MAC address '0a:58:0a:f4:01:0\\x00' is not a MAC address (six "
     "hex octets separated by colons)"),
    ("0a:58:0a:f4:01:\ud800\ud800", "MAC address '0a:58:0a:f4:01:\\ud800\\ud800' is not a MAC "
     "address (six hex octets separated by colons)"),
    ("0a:58:0a:f4:01:05\n", "MAC address '0a:58:0a:f4:01:05\\n' is not a MAC address (six hex "
     "octets separated by colons)"),
    ("0a-58-0a-f4-01-05", "MAC address '0a-58-0a-f4-01-05' is not a MAC address (six hex "
     "octets separated by colons)"),
    ("", "MAC address '' is not a MAC address (six hex octets separated by colons)"),
    ("01:00:5e:00:00:01", "MAC address 01:00:5e:00:00:01 is a multicast address"),
    ("ff:ff:ff:ff:ff:ff", "MAC address ff:ff:ff:ff:ff:ff is a multicast address"),
    ("00:00:00:00:00:00", "MAC address 00:00:00:00:00:00 is the all-zero address"),
])
def test_mac(mac: str, problem: str | None) -> None:
    assert mac_problems(mac) == ([problem] if problem else [])
    value = dataclasses.replace(entry(None, "primary", "10.244.1.5/24"), mac_address=mac)
    assert check(PLAIN, "default", value, DEFAULT) == ([problem] if problem else [])


def test_every_problem_is_reported_at_once() -> None:
    green = PodContext("green", "g", "ovn-worker")
    value = dataclasses.replace(entry(BLUE, "primary", "103.103.1.1/24"), mac_address="x")
    assert check(green, "blue/blue-network", value, BLUE, (BLUE_NODE_SUBNET,)) == [
        "network blue_blue-network is the primary network of namespace blue, not of the "
        "pod's namespace green",
        "IP 103.103.1.1 is the gateway address of 103.103.1.0/24",
        "MAC address 'x' is not a MAC address (six hex octets separated by colons)"]


# -- who keeps an IP; the event message -------------------------------------------------------
def test_choose_holder() -> None:
    # Remembered since the zone started: that pod keeps it.
    assert choose_holder("blue/x", "blue/a", {"blue/a", "blue/x"}, []) == "blue/a"
    # ... unless it no longer claims it (gone, completed, annotation changed).
    assert choose_holder("blue/x", "blue/a", {"blue/x"}, []) == "blue/x"
    # After a restart: the pod whose port in NB has it.
    assert choose_holder("blue/x", None, {"blue/a", "blue/x"}, ["blue/a"]) == "blue/a"
    assert choose_holder("blue/a", None, {"blue/a", "blue/x"}, ["blue/a"]) == "blue/a"
    # Both in NB (written before these checks): one, the same whoever asks.
    both = ["blue/x", "blue/a"]
    assert choose_holder("blue/x", None, {"blue/a", "blue/x"}, both) == "blue/a"
    assert choose_holder("blue/a", None, {"blue/a", "blue/x"}, both) == "blue/a"
    # Nobody yet: first come.
    assert choose_holder("blue/x", None, {"blue/a", "blue/x"}, []) == "blue/x"


def test_messages() -> None:
    assert REASON == "ErrorAddingLogicalPort"
    assert conflict_problem("103.103.1.3", "blue_blue-network", "blue/a") == \
        "IP 103.103.1.3 is already used on network blue_blue-network by pod blue/a"
    assert refusal_message(POD, "blue/blue-network", "blue_blue-network", ["p1", "p2"]) == \
        ("pod blue/a: not rendering the k8s.ovn.org/pod-networks entry for blue/blue-network "
         "(network blue_blue-network): p1; p2")


# -- tunnel IDs and networks without IPAM -------------------------------------------------------
SIDE_POD = dataclasses.replace(PLAIN, requested=("side/red",))
MACONLY = network("side_mac", "side/mac", topology="layer2", role="secondary")


@pytest.mark.parametrize(("tunnel_id", "problem"), [
    (None, "the entry has no tunnel_id (network side_red gives each pod one)"),
    (0, "tunnel_id 0 is outside 1..32767"),
    (32768, "tunnel_id 32768 is outside 1..32767"),
    (-4, "tunnel_id -4 is outside 1..32767"),
])
def test_a_network_with_pod_tunnel_ids_needs_one_in_range(tunnel_id: int | None,
                                                         problem: str) -> None:
    value = dataclasses.replace(entry(SIDE, "secondary", "192.168.0.7/24"), tunnel_id=tunnel_id)
    assert check(SIDE_POD, "side/red", value, SIDE, ()) == [problem]


def test_a_network_without_pod_tunnel_ids_refuses_one() -> None:
    value = dataclasses.replace(entry(BLUE, "primary", "103.103.1.3/24"), tunnel_id=12)
    assert check(POD, "blue/blue-network", value, BLUE, (BLUE_NODE_SUBNET,)) == [
        "tunnel_id 12 is set, but network blue_blue-network gives its pods none"]


def test_a_network_without_ipam_takes_a_mac_only_entry() -> None:
    pod = dataclasses.replace(PLAIN, requested=("side/mac",))
    value = dataclasses.replace(entry(MACONLY, "secondary"), mac_address=random_mac())
    assert value.ip_addresses == ()
    assert check(pod, "side/mac", value, MACONLY, ()) == []
    # but an entry without IPs on a network that has subnets is refused
    no_ips = dataclasses.replace(entry(SIDE, "secondary"), mac_address=random_mac())
    assert check(SIDE_POD, "side/red", no_ips, SIDE, ()) == ["the entry has no IP address"]
