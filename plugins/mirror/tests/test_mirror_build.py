"""The pure parts of the mirror: names, addresses, the built object."""

from __future__ import annotations

import json

import pytest
from ovnk_mirror.mirror import (
    EndpointAddressError,
    build_mirror,
    is_valid_generate_name,
    mirror_generate_name,
    pod_address,
    source_key,
)
from ovnk_mirror.testing import endpoint

pytestmark = pytest.mark.unit
NAD = "testns/l3-network"


@pytest.mark.parametrize(("prefix", "valid"), [
    ("l3-network-svc2-", True), ("svc2-", True), ("a" * 253, True), ("a" * 254, False),
    ("testns_l3-network-svc2-", False), ("UPPER-", False), ("-leading", False),
    ("dots.are.fine-", True), ("", False)])
def test_generate_name_validation(prefix: str, valid: bool) -> None:
    assert is_valid_generate_name(prefix) is valid


def test_generate_name_prefers_the_network_and_falls_back_to_the_source() -> None:
    source = {"metadata": {"name": "svc2-abcde", "generateName": "svc2-"}}
    assert mirror_generate_name(source, "l3-network") == "l3-network-svc2-"
    assert mirror_generate_name(source, "testns_l3-network") == "svc2-"
    assert mirror_generate_name({"metadata": {"name": "plain"}}, "net") == "net-plain"
    assert mirror_generate_name({"metadata": {"name": "a" * 250}}, "net") == "a" * 250


def pod(networks: dict[str, list[str]] | None = None, host_ips: list[str] | None = None,
        raw: str | None = None) -> dict[str, object]:
    annotations = {}
    if networks is not None:
        raw = json.dumps({k: {"ip_addresses": v, "mac_address": "0a:58:00:00:00:01",
                              "role": "primary"} for k, v in networks.items()})
    if raw is not None:
        annotations["k8s.ovn.org/pod-networks"] = raw
    result: dict[str, object] = {"metadata": {"name": "p", "annotations": annotations},
                                 "spec": {"hostNetwork": host_ips is not None}}
    if host_ips is not None:
        result["status"] = {"podIPs": [{"ip": ip} for ip in host_ips]}
    return result


def test_pod_address_by_family_and_host_network() -> None:
    dual = pod({NAD: ["10.132.2.4/24", "fd00::4/64"], "default": ["10.244.2.3/24"]})
    assert pod_address(dual, NAD, ipv6=False) == "10.132.2.4"
    assert pod_address(dual, NAD, ipv6=True) == "fd00::4"
    host = pod(host_ips=["172.18.0.3", "fc00::3"])
    assert pod_address(host, NAD, ipv6=False) == "172.18.0.3"
    assert pod_address(host, NAD, ipv6=True) == "fc00::3"


@pytest.mark.parametrize(("subject", "ipv6", "message"), [
    (pod({"default": ["10.244.2.3/24"]}), False,
     "k8s.ovn.org/pod-networks has no entry for testns/l3-network"),
    (pod({NAD: ["10.132.2.4/24"]}), True,
     r"k8s.ovn.org/pod-networks\[testns/l3-network\] has no IPv6 address"),
    (pod(raw="{not json"), False, "k8s.ovn.org/pod-networks is not valid JSON"),
    (pod(host_ips=["172.18.0.3"]), True, "host-network pod has no IPv6 address"),
])
def test_pod_address_errors_are_specific(subject: dict[str, object], ipv6: bool,
                                         message: str) -> None:
    with pytest.raises(EndpointAddressError, match=message):
        pod_address(subject, NAD, ipv6)


def test_build_keeps_order_and_non_pod_endpoints_and_fails_whole() -> None:
    source = {"metadata": {"name": "s", "namespace": "testns", "resourceVersion": "7",
                           "labels": {"kubernetes.io/service-name": "svc2"}},
              "addressType": "IPv4", "ports": [{"port": 80}],
              "endpoints": [endpoint("testns", "a", "10.244.2.3"),
                            {"addresses": ["192.0.2.10"]},
                            endpoint("testns", "b", "10.244.2.4")]}
    addresses = {"a": "10.132.2.4", "b": "10.132.2.5"}

    def lookup(target: dict[str, str], ipv6: bool) -> str:
        if target["name"] not in addresses:
            raise EndpointAddressError("no address")
        return addresses[target["name"]]

    built = build_mirror(source, None, "l3-network", lookup)
    assert [e["addresses"] for e in built["endpoints"]] == [
        ["10.132.2.4"], ["192.0.2.10"], ["10.132.2.5"]]
    assert "ownerReferences" not in built["metadata"]
    assert source_key(built) == "testns/s"
    del addresses["b"]
    with pytest.raises(EndpointAddressError,
                       match="failed to determine the Pod IP of: testns/b: no address"):
        build_mirror(source, None, "l3-network", lookup)
