"""ParsedByVersion: one parse per object version, shared by every caller."""

from __future__ import annotations

import json

import pytest

from ovnk_core.annotations.node_subnets import parse_node_subnets
from ovnk_core.kube.client import JSON
from ovnk_core.kube.parsed_cache import ParsedByVersion, annotations_version


def node(version: str, subnets: dict[str, str]) -> JSON:
    return {"metadata": {"name": "n1", "resourceVersion": version, "annotations": {
        "k8s.ovn.org/node-subnets": json.dumps(subnets)}}}


def test_each_version_is_parsed_once() -> None:
    calls: list[str] = []

    def parse(obj: JSON) -> dict[str, list[str]]:
        calls.append(obj["metadata"]["resourceVersion"])
        return parse_node_subnets(obj)

    cache = ParsedByVersion(parse)
    first = node("7", {"default": "10.244.0.0/24"})
    value = cache.get(first)
    assert cache.get(json.loads(json.dumps(first))) is value  # same version, another copy
    assert calls == ["7"]
    newer = cache.get(node("8", {"default": "10.244.0.0/24", "a": "10.1.0.0/24"}))
    assert set(newer) == {"default", "a"} and calls == ["7", "8"] and len(cache) == 1
    cache.forget("n1")
    assert len(cache) == 0
    assert cache.get(first) == value and calls == ["7", "8", "7"]


def test_objects_without_a_version_are_parsed_every_time() -> None:
    cache = ParsedByVersion(parse_node_subnets)
    unversioned = node("", {"default": "10.244.0.0/24"})
    assert cache.get(unversioned) is not cache.get(unversioned)
    assert len(cache) == 0


def test_a_parse_that_raises_caches_nothing() -> None:
    def broken(_obj: JSON) -> int:
        raise ValueError("bad")

    cache = ParsedByVersion(broken)
    with pytest.raises(ValueError):
        cache.get(node("1", {}))
    assert len(cache) == 0


def test_an_annotations_version_survives_writes_that_leave_them_alone() -> None:
    calls: list[str] = []

    def parse(obj: JSON) -> dict[str, list[str]]:
        calls.append(obj["metadata"]["resourceVersion"])
        return parse_node_subnets(obj)

    cache = ParsedByVersion(parse, annotations_version("k8s.ovn.org/node-subnets"))
    value = cache.get(node("7", {"default": "10.244.0.0/24"}))
    heartbeat = node("8", {"default": "10.244.0.0/24"})  # status written, annotation same
    assert cache.get(heartbeat) is value and calls == ["7"]
    changed = cache.get(node("9", {"default": "10.244.0.0/24", "a": "10.1.0.0/24"}))
    assert set(changed) == {"default", "a"} and calls == ["7", "9"]
