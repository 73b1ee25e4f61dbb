"""``k8s.ovn.org/pod-networks`` entries are read strictly: a forged or corrupted entry is an
error naming what is wrong (which the controllers report on the pod), never a half-read
entry that renders nothing and says nothing.  Found by tests/e2e/test_fuzz.py."""

from __future__ import annotations

import json

import pytest

from ovnk_core.pods.annotation import PodAnnotationError, parse, serialize

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
    ({"role": 367}, "role 367 is not one of primary, secondary, infrastructure-locked"),
    ({"role": "boss"}, "role 'boss' is not one of"),
    ({"gateway_ips": ["10.244.0.300"]}, "does not appear to be an IPv4 or IPv6 address"),
    ({"routes": [{"dest": "bad", "nextHop": "10.244.0.1"}]}, "does not appear to be"),
    ({"routes": {"dest": "10.0.0.0/8"}}, "routes must be a list"),
    ({"tunnel_id": "7"}, "tunnel_id '7' is not an integer"),
    ({"tunnel_id": True}, "tunnel_id True is not an integer"),
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
