"""A node's gateway facts (``k8s.ovn.org/l3-gateway-config``, ``node-chassis-id``,
``node-primary-ifaddr``): what the node agent writes reads back; a malformed value is an
error naming what is wrong."""

from __future__ import annotations

import json

import pytest
from ovnk_local.cluster import node_gateway_annotations

from ovnk_core.annotations import AnnotationError
from ovnk_core.annotations.node_gateway import (
    CHASSIS_ID_ANNOTATION,
    GATEWAY_CONFIG_ANNOTATION,
    PRIMARY_IFADDR_ANNOTATION,
    GatewayConfig,
    GatewayConfigError,
    parse,
    serialize,
    serialize_primary_ifaddr,
)

pytestmark = pytest.mark.unit

SHARED = GatewayConfig(mode="shared", bridge_id="breth0", mac="0a:58:ac:12:00:02",
                       ips=("172.18.0.2/16",), next_hops=("172.18.0.1",))


def test_a_written_gateway_reads_back() -> None:
    raw = serialize(SHARED, "ovn-worker")
    assert parse(raw) == SHARED
    entry = json.loads(raw)["default"]
    assert entry["interface-id"] == "breth0_ovn-worker"
    assert entry["ip-address"] == "172.18.0.2/16" and entry["next-hop"] == "172.18.0.1"
    dual = GatewayConfig(mode="local", bridge_id="breth1", mac="0a:58:ac:12:00:03",
                         ips=("172.18.0.3/16", "fc00:f853:ccd:e793::3/64"),
                         next_hops=("172.18.0.1", "fc00:f853:ccd:e793::1"), vlan_id=12)
    raw = serialize(dual, "ovn-worker2")
    assert parse(raw) == dual
    assert "ip-address" not in json.loads(raw)["default"]


def test_what_the_local_cluster_publishes_reads_back() -> None:
    annotations = node_gateway_annotations("ovn-worker", "172.18.0.2")
    assert parse(annotations[GATEWAY_CONFIG_ANNOTATION]) == SHARED
    assert annotations[CHASSIS_ID_ANNOTATION] == "ovn-worker"
    assert json.loads(annotations[PRIMARY_IFADDR_ANNOTATION]) == {"ipv4": "172.18.0.2/16"}


def test_legacy_fields_and_interface_id() -> None:
    raw = json.dumps({"default": {"mode": "shared", "interface-id": "breth0_ovn-worker",
                                  "ip-address": "172.18.0.2/16", "next-hop": "172.18.0.1",
                                  "vlan-id": "0"}})
    assert parse(raw) == GatewayConfig("shared", "breth0", "", ("172.18.0.2/16",),
                                       ("172.18.0.1",))


def test_primary_ifaddr() -> None:
    assert json.loads(serialize_primary_ifaddr(ipv4="10.0.0.2/24", ipv6="fd00::2/64")) == {
        "ipv4": "10.0.0.2/24", "ipv6": "fd00::2/64"}
    assert serialize_primary_ifaddr(ipv6="fd00::2/64") == '{"ipv6":"fd00::2/64"}'  # as upstream
    assert serialize_primary_ifaddr(ipv4="172.18.0.2/16", ipv6="fd80:172:18::2/64") == (
        '{"ipv4":"172.18.0.2/16","ipv6":"fd80:172:18::2/64"}')


def gateway(**change: object) -> str:
    entry = {"mode": "shared", "bridge-id": "breth0", "mac-address": "0a:58:ac:12:00:02",
             "ip-addresses": ["172.18.0.2/16"], "next-hops": ["172.18.0.1"]}
    entry.update(change)
    return json.dumps({"default": {k: v for k, v in entry.items() if v is not None}})


@pytest.mark.parametrize(("raw", "message"), [
    ("{not json", "is not valid JSON"),
    ('{"a":' * 300 + "1" + "}" * 300, "is not valid JSON: nested deeper than"),
    ('{"other": {}}', "has no 'default' object"),
    ('{"default": []}', "has no 'default' object"),
    ('{"default": {"mode": "fast", "ip-addresses": ["1.2.3.4/24"]}}',
     "mode must be shared or local, not 'fast'"),
    ('{"default": {"mode": "shared", "ip-addresses": []}}', "ip-addresses is empty"),
    ('{"default": {"mode": "shared", "ip-addresses": ["1.2.3.4/99"], "bridge-id": "b"}}',
     "1.2.3.4/99"),
    ('{"default": {"mode": "shared", "ip-addresses": ["1.2.3.4/24"]}}', "bridge-id is missing"),
    (gateway(**{"ip-addresses": "172.18.0.2/16"}),
     'ip-addresses must be a list of strings, got "172.18.0.2/16"'),
    (gateway(**{"ip-addresses": [5]}), "ip-addresses must be a list of strings, got [5]"),
    (gateway(**{"ip-addresses": None, "ip-address": 5}), "ip-address must be a string, got 5"),
    (gateway(**{"next-hops": ["172.18.0.300"]}), "'172.18.0.300' does not appear to be"),
    (gateway(**{"next-hops": None, "next-hop": 7}), "next-hop must be a string, got 7"),
    (gateway(**{"vlan-id": "x"}), "invalid literal for int()"),
    (gateway(**{"vlan-id": True}), "vlan-id must be an integer, got true"),
    (gateway(**{"vlan-id": 5000}), "vlan-id 5000 is out of range 0..4094"),
    (gateway(**{"mac-address": "not-a-mac"}), "mac-address 'not-a-mac' is not a MAC address"),
    (gateway(**{"mac-address": 5}), "mac-address must be a string, got 5"),
    (gateway(**{"bridge-id": ["breth0"]}), 'bridge-id must be a string, got ["breth0"]'),
])
def test_bad_gateway_config_is_a_specific_error(raw: str, message: str) -> None:
    with pytest.raises(GatewayConfigError, match=GATEWAY_CONFIG_ANNOTATION) as info:
        parse(raw)
    assert message in str(info.value)
    assert isinstance(info.value, AnnotationError) and isinstance(info.value, ValueError)
