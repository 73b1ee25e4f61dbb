"""Deeply nested documents: refused with 400 on every way in, served and kept at the limit.

Python's decoders and encoders give out near 1,000 levels with RecursionError;
before the bound a 1,100-level body was a 500 "Internal error" and nothing
stopped a JSON patch from building an object no watch could encode.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from ovnk_local.apiserver.nesting import MAX_BODY_DEPTH, TOO_DEEP
from ovnk_local.apiserver.persistence import read_snapshot
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for, with_crds

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.informer import Informer, wait_for_informers
from ovnk_core.kube.resources import CRDS, NADS, NAMESPACES, Resource
from ovnk_core.testing.waiting import wait_until

RawCall = Callable[..., Any]  # the ``raw`` fixture (conftest): one HTTPS request as the admin
WIDGETS = Resource("example.org", "v1", "widgets", "Widget", True)
# A Widget CRD whose spec keeps unknown fields under ``extra``: depth a schema cannot bound.
WIDGET_CRD: dict[str, Any] = {
    "metadata": {"name": "widgets.example.org"},
    "spec": {"group": "example.org", "scope": "Namespaced",
             "names": {"kind": "Widget", "plural": "widgets"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                 "openAPIV3Schema": {"type": "object", "properties": {"spec": {
                     "type": "object", "properties": {
                         "topology": {"type": "string"}, "note": {"type": "string"},
                         "extra": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": True}}}}}}}]}}
PATH = "/apis/example.org/v1/namespaces/blue/widgets"


def nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def nested_text(levels: int) -> str:
    return "[" * levels + "]" * levels


def widget_text(name: str, levels: int) -> str:
    """A Widget body nested ``levels`` deep (body, spec, extra, then lists)."""
    return (f'{{"apiVersion":"example.org/v1","kind":"Widget","metadata":{{"name":"{name}"}},'
            f'"spec":{{"topology":"Layer2","extra":{{"a":{nested_text(levels - 3)}}}}}}}')


def depth_of_extra(obj: dict[str, Any]) -> int:
    levels, value = 0, obj["spec"]["extra"]["a"]
    while isinstance(value, list):
        levels += 1
        value = value[0] if value else None
    return levels + 3


@pytest.fixture
def widgets(kube_apiserver: ServerHandle) -> KubeClient:
    """The Widget CRD served, and namespace blue."""
    api = KubeClient(client_for(kube_apiserver))
    api.create(CRDS, copy.deepcopy(WIDGET_CRD))
    api.create(NAMESPACES, {"metadata": {"name": "blue"}})
    wait_until(lambda: api.list(WIDGETS, "blue") is not None)
    return api


@pytest.mark.usefixtures("widgets")
def test_bodies_nested_too_deeply_are_refused_with_400(raw: RawCall) -> None:
    for levels in (MAX_BODY_DEPTH + 1, 1100, 100_000):  # decodable by Python or not
        reply = raw("POST", PATH, widget_text("deep", levels).encode())
        assert reply.status == 400, reply.body[:200]
        assert reply.json()["message"] == f"error decoding request body: {TOO_DEEP}"
    as_yaml = raw("POST", PATH, widget_text("deep", 1100).encode(),
                  headers={"Content-Type": "application/yaml"})
    assert (as_yaml.status, as_yaml.json()["message"]) == (
        400, f"error decoding request body: {TOO_DEEP}")
    put = raw("PUT", f"{PATH}/deep", widget_text("deep", 1100).encode())
    assert put.status == 400
    # nothing was stored and the server goes on serving
    assert raw("GET", PATH).json()["items"] == []
    assert raw("POST", PATH, widget_text("fine", 10).encode()).status == 201


@pytest.mark.usefixtures("widgets")
def test_patches_nested_too_deeply_and_patches_that_would_make_it_so_are_refused(
        raw: RawCall) -> None:
    assert raw("POST", PATH, widget_text("w", MAX_BODY_DEPTH).encode()).status == 201
    before = raw("GET", f"{PATH}/w").json()
    merge = raw("PATCH", f"{PATH}/w", f'{{"spec":{{"extra":{{"b":{nested_text(1100)}}}}}}}'
                .encode(), headers={"Content-Type": "application/merge-patch+json"})
    assert (merge.status, merge.json()["message"]) == (400, f"error decoding patch: {TOO_DEEP}")
    apply = raw("PATCH", f"{PATH}/w?fieldManager=t", yaml.safe_dump(
        {"apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
         "spec": {"extra": {"b": nested(MAX_BODY_DEPTH)}}}).encode(),
        headers={"Content-Type": "application/apply-patch+yaml"})
    assert (apply.status, apply.json()["message"]) == (400, f"error decoding patch: {TOO_DEEP}")
    # each JSON patch is shallow, but adding it below the deepest list would make the object
    # one level deeper than the limit
    path = "/spec/extra/a" + "/0" * (MAX_BODY_DEPTH - 4)
    grow = raw("PATCH", f"{PATH}/w", json.dumps(
        [{"op": "add", "path": f"{path}/-", "value": []}]).encode(),
        headers={"Content-Type": "application/json-patch+json"})
    assert (grow.status, grow.json()["message"]) == (
        400, f"the patched object would be {TOO_DEEP}")
    after = raw("GET", f"{PATH}/w").json()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_an_object_at_the_limit_is_served_watched_and_kept_across_a_restart(
        kube_apiserver_factory: Callable[..., ServerHandle], tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    first = kube_apiserver_factory(data_file=data)
    api = KubeClient(client_for(first))
    api.create(CRDS, copy.deepcopy(WIDGET_CRD))
    api.create(NAMESPACES, {"metadata": {"name": "blue"}})
    wait_until(lambda: api.list(WIDGETS, "blue") is not None)
    informer = Informer(api, WIDGETS, min_backoff=0.05, max_backoff=0.1).start()
    try:
        wait_for_informers([informer], 10)
        created = api.create(WIDGETS, json.loads(widget_text("w", MAX_BODY_DEPTH)), "blue")
        assert depth_of_extra(created) == MAX_BODY_DEPTH
        assert created["metadata"]["managedFields"]  # its field set is as deep, and kept
        wait_until(lambda: informer.get("blue/w") is not None)  # the watch encoded it
        assert depth_of_extra(api.get(WIDGETS, "w", "blue")) == MAX_BODY_DEPTH
        patched = api.patch(WIDGETS, "w", {"spec": {"note": "still fine"}}, "blue")
        wait_until(lambda: (informer.get("blue/w") or {}).get("metadata", {}).get(
            "resourceVersion") == patched["metadata"]["resourceVersion"])
        assert informer.stats.errors == 0 and informer.stats.undecodable == 0
    finally:
        informer.stop()
    first.stop()
    second = kube_apiserver_factory(data_file=data)
    kept = KubeClient(client_for(second)).get(WIDGETS, "w", "blue")
    assert depth_of_extra(kept) == MAX_BODY_DEPTH and kept["spec"]["note"] == "still fine"


def test_a_snapshot_nested_too_deeply_is_a_clear_error(tmp_path: Path) -> None:
    snapshot = tmp_path / "data.json"
    snapshot.write_text('{"objects":{"x":' + nested_text(1100) + "}}")
    with pytest.raises(ValueError, match=r"cannot read the snapshot .*data\.json: nested "
                                         r"deeper than 200 levels"):
        read_snapshot(snapshot)


def test_a_nad_config_nesting_deeply_is_only_a_string_an_object_there_is_refused(
        kube_apiserver: ServerHandle, raw: RawCall) -> None:
    """spec.config is a string: any text, deep JSON included, is stored as it is; a deep
    object in its place is a 400, not a crash."""
    api = with_crds(kube_apiserver)
    api.create(NAMESPACES, {"metadata": {"name": "blue"}})
    config = nested_text(1100)
    api.create(NADS, {"metadata": {"name": "deep", "namespace": "blue"},
                      "spec": {"config": config}})
    assert api.get(NADS, "deep", "blue")["spec"]["config"] == config
    reply = raw("POST", NADS.path("blue"), (
        '{"apiVersion":"k8s.cni.cncf.io/v1","kind":"NetworkAttachmentDefinition",'
        f'"metadata":{{"name":"object"}},"spec":{{"config":{config}}}}}').encode())
    assert (reply.status, reply.json()["message"]) == (
        400, f"error decoding request body: {TOO_DEEP}")
    assert [n["metadata"]["name"] for n in api.list(NADS, "blue")["items"]] == ["deep"]


@pytest.mark.usefixtures("widgets")
def test_a_continue_token_nested_too_deeply_is_a_400(raw: RawCall) -> None:
    import base64
    token = base64.urlsafe_b64encode(nested_text(1100).encode()).decode()
    reply = raw("GET", f"{PATH}?limit=1&continue={token}")
    assert reply.status == 400
    assert reply.json()["message"].startswith("continue key is not valid: nested deeper")
