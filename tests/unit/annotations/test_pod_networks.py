"""``k8s.ovn.org/pod-networks`` entries are read strictly: a forged or corrupted entry is an
error naming what is wrong (which the controllers report on the pod), never a half-read
entry that renders nothing and says nothing.  Found by tests/e2e/test_fuzz.py."""

from __future__ import annotations

import json

import pytest

from ovnk_core.annotations import AnnotationError
from ovnk_core.annotations.pod_networks import (
    POD_NETWORKS_ANNOTATION,
    PodAnnotationError,
    PodNetwork,
    entries,
    merge,
    parse,
    serialize,
)

pytestmark = pytest.mark.unit

GOOD = {"ip_addresses": ["10.244.0.5/24"], "mac_address": "0a:58:0a:f4:00:05",
        "gateway_ips": ["10.244.0.1"], "routes": [{"dest": "10.96.0.0/16",
                                                   "nextHop": "10.244.0.1"}],
        "role": "primary", "tunnel_id": 7}


def test_a_written_entry_reads_back() -> None:
    entries = parse(json.dumps({"default": GOOD}))
    assert json.loads(serialize(entries))["default"]["ip_addresses"] == ["10.244.0.5/24"]
    assert parse(json.dumps({"x/y": {"ip_addresses": None, "mac_address": "0a:58:00:00:00:01",
                                     "role": "secondary"}}))["x/y"].ip_addresses == ()


@pytest.mark.parametrize(("change", "problem"), [
    ({"ip_addresses": {}}, "ip_addresses must be a list, got dict"),
    ({"ip_addresses": [5]}, "ip_addresses must be a list of strings"),
    ({"ip_addresses": ["x"]}, "does not appear to be an IPv4 or IPv6 interface"),
    ({"mac_address": "x"}, "failed to parse pod MAC 'x'"),
    ({"mac_address": {"a": 1}}, "failed to parse pod MAC {'a': 1}"),
    # every entry ovnk writes has a MAC (a network without IPAM gives nothing else), and
    # upstream's reader fails without one: an admin's {"default": {}} is an error, not an
    # entry that stops the pod IPAM from allocating and renders nothing
    ({"mac_address": ""}, "failed to parse pod MAC ''"),
    ({"mac_address": None}, "failed to parse pod MAC None"),
    ({"role": 367}, "role 367 is not one of primary, secondary, infrastructure-locked"),
    ({"role": "boss"}, "role 'boss' is not one of"),
    ({"gateway_ips": ["10.244.0.300"]}, "does not appear to be an IPv4 or IPv6 address"),
    ({"routes": [{"dest": "bad", "nextHop": "10.244.0.1"}]}, "does not appear to be"),
    ({"routes": {"dest": "10.0.0.0/8"}}, "routes must be a list"),
    ({"tunnel_id": "7"}, "tunnel_id '7' is not an integer"),
    ({"tunnel_id": True}, "tunnel_id True is not an integer"),
    ({"ip_addresses": None, "ip_address": 5}, "ip_address must be a string, got int"),
    ({"gateway_ips": None, "gateway_ip": 5}, "gateway_ip must be a string, got int"),
    ({"routes": [{"dest": 5, "nextHop": "10.244.0.1"}]}, "dest and nextHop must be strings"),
    ({"routes": [{"dest": "10.0.0.0/8"}]}, "'nextHop'"),
    ({"routes": ["10.0.0.0/8"]}, "a route must be an object, got str"),
    ({"ipv6_lla_gateway_ip": 5}, "ipv6_lla_gateway_ip 5 is not a string"),
    ({"ipv6_lla_gateway_ip": "10.0.0.1"}, "At least 3 parts expected in '10.0.0.1'"),
])
def test_a_malformed_entry_is_an_error_naming_the_field(change: dict[str, object],
                                                       problem: str) -> None:
    with pytest.raises(PodAnnotationError, match="invalid pod network entry") as err:
        parse(json.dumps({"default": {**GOOD, **change}}))
    assert problem in str(err.value)


def test_an_entry_that_is_not_an_object_is_an_error() -> None:
    with pytest.raises(PodAnnotationError,
                       match="entry 'default' must be a JSON object, got int"):
        parse('{"default": 5}')


def test_every_field_round_trips() -> None:
    entry = PodNetwork(ip_addresses=("10.100.1.5/24", "fd00:10:100:1::5/64"),
                       mac_address="0a:58:0a:64:01:05", role="primary",
                       gateway_ips=("10.100.1.1", "fd00:10:100:1::1"),
                       routes=(("10.96.0.0/16", "10.100.1.1"),), tunnel_id=3,
                       ipv6_lla_gateway_ip="fe80::1")
    single = PodNetwork(ip_addresses=("10.244.0.5/24",), mac_address="0a:58:0a:f4:00:05",
                        role="infrastructure-locked", gateway_ips=("10.244.0.1",))
    written = serialize({"ns/blue": entry, "default": single})
    assert parse(written) == {"ns/blue": entry, "default": single}
    # upstream's single-value fields are written for one address, and read back
    legacy = json.loads(written)["default"]
    assert legacy["ip_address"] == "10.244.0.5/24" and legacy["gateway_ip"] == "10.244.0.1"
    assert parse(json.dumps({"default": {"ip_address": "10.244.0.5/24",
                                         "mac_address": "0a:58:0a:f4:00:05",
                                         "gateway_ip": "10.244.0.1"}}))["default"] \
        == PodNetwork(ip_addresses=("10.244.0.5/24",), mac_address="0a:58:0a:f4:00:05",
                      role="", gateway_ips=("10.244.0.1",))


@pytest.mark.parametrize("raw", [None, ""])
def test_no_annotation_is_no_entries(raw: str | None) -> None:
    assert parse(raw) == {} and entries(raw) == {}


@pytest.mark.parametrize(("raw", "problem"), [
    ("{oops", f"{POD_NETWORKS_ANNOTATION} is not valid JSON"),
    ("[]", f"{POD_NETWORKS_ANNOTATION} must be a JSON object"),
    ('{"a": []}', f"{POD_NETWORKS_ANNOTATION} entry 'a' must be a JSON object, got list"),
    ('{"a":' * 300 + "1" + "}" * 300, "nested deeper than"),
])
def test_a_malformed_document_is_an_error_for_parse_and_entries(raw: str, problem: str) -> None:
    for reader in (parse, entries):
        with pytest.raises(PodAnnotationError) as err:
            reader(raw)
        assert problem in str(err.value)
        assert isinstance(err.value, AnnotationError) and isinstance(err.value, ValueError)


def test_entries_checks_only_the_shape() -> None:
    assert list(entries(json.dumps({"ns/blue": {"mac_address": "x"}}))) == ["ns/blue"]


def test_merge_adds_missing_entries_and_never_changes_ips() -> None:
    default = PodNetwork(("10.244.0.5/24",), "0a:58:0a:f4:00:05", "primary")
    blue = PodNetwork(("10.100.0.5/24",), "0a:58:0a:64:00:05", "secondary")
    assert merge({"default": default}, {"default": default, "ns/blue": blue}) == {
        "default": default, "ns/blue": blue}
    moved = PodNetwork(("10.244.0.6/24",), "0a:58:0a:f4:00:06", "primary")
    with pytest.raises(PodAnnotationError, match="entry default already has IPs 10.244.0.5/24; "
                                                 "refusing to override them with 10.244.0.6/24"):
        merge({"default": default}, {"default": moved})
