"""``k8s.ovn.org/node-subnets``: what the cluster manager writes reads back; ``parse`` is
strict, ``read`` reports each bad network and keeps the others, ``parse_node_subnets`` (the
allocators' reader) leaves out what it cannot read."""

from __future__ import annotations

import ipaddress
import json

import pytest

from ovnk_core.annotations import AnnotationError
from ovnk_core.annotations.node_subnets import (
    NODE_SUBNETS_ANNOTATION,
    NodeSubnetsError,
    parse,
    parse_entry,
    parse_node_subnets,
    read,
    serialize,
)

pytestmark = pytest.mark.unit

DEEP = '{"a":' * 300 + "1" + "}" * 300


def node(raw: str | None) -> dict[str, object]:
    return {"metadata": {"name": "n", "annotations": {} if raw is None else {
        NODE_SUBNETS_ANNOTATION: raw}}}


def test_a_written_value_reads_back() -> None:
    subnets = {"default": ["10.244.1.0/24", "fd00:10:244:2::/64"], "ns_blue": ["10.100.1.0/24"]}
    raw = serialize(subnets)
    assert raw == ('{"default":["10.244.1.0/24","fd00:10:244:2::/64"],'
                   '"ns_blue":["10.100.1.0/24"]}')
    assert parse(raw) == {network: tuple(ipaddress.ip_network(c) for c in cidrs)
                          for network, cidrs in subnets.items()}
    assert read(raw) == (parse(raw), [])
    assert parse_node_subnets(node(raw)) == subnets


def test_the_legacy_single_cidr_form() -> None:
    raw = '{"default":"10.244.1.0/24"}'
    assert parse(raw) == {"default": (ipaddress.ip_network("10.244.1.0/24"),)}
    assert parse_node_subnets(node(raw)) == {"default": ["10.244.1.0/24"]}


@pytest.mark.parametrize(("raw", "message"), [
    ("{oops", f"{NODE_SUBNETS_ANNOTATION} is not valid JSON"),
    (DEEP, f"{NODE_SUBNETS_ANNOTATION} is not valid JSON: nested deeper than"),
    ('["10.244.1.0/24"]', f"{NODE_SUBNETS_ANNOTATION} must be a JSON object, got list"),
    ('{"default": 5}', f"{NODE_SUBNETS_ANNOTATION}[default]: must be a CIDR or a list of "
                       "CIDRs, got 5"),
    ('{"default": [5]}', f"{NODE_SUBNETS_ANNOTATION}[default]: must be a CIDR or a list of "
                         "CIDRs, got [5]"),
    ('{"default": ["10.244.1.3/24"]}', f"{NODE_SUBNETS_ANNOTATION}[default]: 10.244.1.3/24 "
                                       "has host bits set"),
    ('{"default": ["nonsense"]}', f"{NODE_SUBNETS_ANNOTATION}[default]: 'nonsense' does not "
                                  "appear to be an IPv4 or IPv6 network"),
])
def test_a_malformed_value_is_a_specific_error(raw: str, message: str) -> None:
    with pytest.raises(NodeSubnetsError) as info:
        parse(raw)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, AnnotationError) and isinstance(info.value, ValueError)
    assert read(raw)[1] == [str(info.value)]


def test_read_keeps_the_good_networks_and_reports_each_bad_one() -> None:
    raw = json.dumps({"default": ["10.244.1.0/24"], "blue": ["10.1.2.3/24"], "red": 5})
    subnets, problems = read(raw)
    assert subnets == {"default": (ipaddress.ip_network("10.244.1.0/24"),)}
    assert problems == [f"{NODE_SUBNETS_ANNOTATION}[blue]: 10.1.2.3/24 has host bits set",
                        f"{NODE_SUBNETS_ANNOTATION}[red]: must be a CIDR or a list of CIDRs, "
                        "got 5"]
    assert parse_node_subnets(node(raw)) == {"default": ["10.244.1.0/24"]}
    with pytest.raises(NodeSubnetsError, match=r"\[blue\]"):
        parse_entry("blue", ["10.1.2.3/24"])


@pytest.mark.parametrize("raw", [None, "", "{oops", DEEP, "[]"])
def test_the_allocators_reader_sees_no_networks_in_what_it_cannot_read(raw: str | None
                                                                        ) -> None:
    assert parse_node_subnets(node(raw)) == {}
    assert parse_node_subnets({"metadata": {"name": "n"}}) == {}
    if not raw:
        assert read(raw) == ({}, [])
