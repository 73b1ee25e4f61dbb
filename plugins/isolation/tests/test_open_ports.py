"""``k8s.ovn.org/open-default-ports``: upstream's rules and messages, and the ACL matches."""

from __future__ import annotations

import pytest
from ovnk_isolation.open_ports import (
    ANNOTATION,
    OpenPort,
    OpenPortsError,
    egress_match,
    ingress_match,
    parse_open_ports,
)

pytestmark = pytest.mark.unit


def parse(raw: str) -> list[OpenPort]:
    return parse_open_ports({ANNOTATION: raw})


def test_yaml_and_json_lists_are_read() -> None:
    assert parse("- protocol: tcp\n  port: 80\n- protocol: icmp\n- protocol: udp\n  port: 0\n") \
        == [OpenPort("tcp", 80), OpenPort("icmp"), OpenPort("udp", 0)]
    assert parse('[{"protocol": "sctp", "port": 65535, "extra": 1}]') == [OpenPort("sctp", 65535)]
    assert parse_open_ports({}) == [] and parse_open_ports(None) == []
    assert parse("") == [] and parse("[]") == []


@pytest.mark.parametrize(("raw", "message"), [
    ("- protocol: http\n  port: 80", "invalid protocol http"),
    ("- port: 80", "invalid protocol "),
    ("- null", "invalid protocol "),
    ("- protocol: TCP\n  port: 80", "invalid protocol TCP"),
    ("- protocol: icmp\n  port: 8", "invalid port 8 for icmp protocol, should be empty"),
    ("- protocol: udp", "port is required for udp protocol"),
    ("- protocol: tcp\n  port: 65536", "invalid port 65536"),
    ("- protocol: tcp\n  port: -1", "invalid port -1"),
    # the first rule broken wins, in the list's order
    ("- protocol: tcp\n  port: 70000\n- protocol: bogus", "invalid port 70000"),
])
def test_upstream_rules_and_messages(raw: str, message: str) -> None:
    with pytest.raises(OpenPortsError) as refused:
        parse(raw)
    assert str(refused.value) == message


@pytest.mark.parametrize(("raw", "detail"), [
    ("protocol: tcp", "json: cannot unmarshal object into Go value of type []*util.OpenPort"),
    ("- protocol: tcp\n  port: '80'", "json: cannot unmarshal string into Go struct field "
     "OpenPort.port of type int"),
    ("- protocol: tcp\n  port: true", "json: cannot unmarshal bool into Go struct field "
     "OpenPort.port of type int"),
    ("- protocol: 6\n  port: 80", "json: cannot unmarshal number into Go struct field "
     "OpenPort.protocol of type string"),
    ("- tcp", "json: cannot unmarshal string into Go value of type util.OpenPort"),
])
def test_values_of_the_wrong_type_cannot_be_unmarshalled(raw: str, detail: str) -> None:
    with pytest.raises(OpenPortsError) as refused:
        parse(raw)
    assert str(refused.value) == f"failed to unmarshal UDN open ports annotation {raw}: {detail}"


def test_yaml_that_does_not_parse_names_the_annotation() -> None:
    with pytest.raises(OpenPortsError) as refused:
        parse("- protocol: [tcp")
    assert str(refused.value).startswith(
        "failed to unmarshal UDN open ports annotation - protocol: [tcp: ")


def test_the_acl_matches_are_upstreams() -> None:
    ports = [OpenPort("tcp", 80), OpenPort("icmp"), OpenPort("udp", 53)]
    assert ingress_match("ns_pod", ports) == \
        'outport == "ns_pod" && (arp || nd || (tcp.dst == 80 || icmp || udp.dst == 53))'
    assert egress_match("ns_pod") == 'inport == "ns_pod" && (arp || nd)'


@pytest.mark.parametrize("raw", [
    "- protocol: tcp\n  port: 80\n- protocol: icmp\n",
    '[{"protocol": "udp", "port": 53}]',
    "- protocol: tcp\n  port: [80\n",  # not YAML
    "- {protocol: smtp, port: 25}",
    "{protocol: tcp}",
    "- protocol: tcp\n  port: '80'\n",
])
def test_libyaml_and_the_pure_parser_read_the_same(raw: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    import ovnk_isolation.open_ports as module

    def outcome() -> object:
        try:
            return module.parse_open_ports({module.ANNOTATION: raw})
        except module.OpenPortsError as exc:
            return str(exc)

    fast = outcome()
    monkeypatch.setattr(module, "_FAST_LOADER", None)
    assert outcome() == fast
