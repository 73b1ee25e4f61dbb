"""Streaming lists (client-go's WatchList): ``sendInitialEvents=true`` gives every current
object as ADDED, then the BOOKMARK annotated ``k8s.io/initial-events-end`` at the list's
resourceVersion, then live events; invalid option combinations are refused as
kube-apiserver refuses them."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
from kubernetes import client, watch
from ovnk_local.apiserver.server import ServerHandle

from .conftest import RawCall
from .test_protobuf_api import read_frames

CONFIGMAPS = "/api/v1/namespaces/blue/configmaps"
WATCH_LIST = "watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
END = "k8s.io/initial-events-end"


def events_of(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines() if line.strip()]


def test_initial_events_end_with_the_annotated_bookmark(raw: RawCall, core: client.CoreV1Api,
                                                        namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "b"}})
    listed = core.list_namespaced_config_map(namespace).metadata.resource_version

    def later() -> None:
        time.sleep(0.5)
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}})

    writer = threading.Thread(target=later)
    writer.start()
    reply = raw("GET", f"{CONFIGMAPS}?{WATCH_LIST}&allowWatchBookmarks=true&timeoutSeconds=2")
    writer.join()
    events = events_of(reply.body)
    assert [(e["type"], e["object"]["metadata"].get("name")) for e in events[:4]] == [
        ("ADDED", "a"), ("ADDED", "b"), ("BOOKMARK", None), ("ADDED", "c")]
    bookmark = events[2]["object"]
    assert bookmark["metadata"] == {"resourceVersion": listed, "annotations": {END: "true"}}
    assert (bookmark["kind"], bookmark["apiVersion"]) == ("ConfigMap", "v1")
    # later bookmarks are plain ones
    assert all(END not in (e["object"]["metadata"].get("annotations") or {})
               for e in events[3:])


def test_without_bookmarks_the_initial_events_are_not_marked(raw: RawCall,
                                                             core: client.CoreV1Api,
                                                             namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    events = events_of(raw("GET", f"{CONFIGMAPS}?{WATCH_LIST}&timeoutSeconds=1").body)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]


def test_send_initial_events_false_starts_at_the_newest_version(
        raw: RawCall, core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "old"}})
    query = "watch=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"

    def later() -> None:
        time.sleep(0.5)
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "new"}})

    writer = threading.Thread(target=later)
    writer.start()
    events = events_of(raw("GET", f"{CONFIGMAPS}?{query}").body)
    writer.join()
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "new")]


def test_a_resource_version_newer_than_the_server_s_is_too_large(raw: RawCall,
                                                                 namespace: str) -> None:
    reply = raw("GET", f"{CONFIGMAPS}?{WATCH_LIST}&resourceVersion=999999")
    assert reply.status == 504
    status = reply.json()
    assert status["reason"] == "Timeout"
    assert status["message"].startswith("Timeout: Too large resource version: 999999, current: ")
    assert status["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                            "message": "Too large resource version"}]


@pytest.mark.parametrize(("query", "message"), [
    ("watch=1&sendInitialEvents=true",
     "resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
     "resourceVersionMatch to NotOlderThan"),
    ("watch=1&resourceVersionMatch=NotOlderThan",
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless "
     "sendInitialEvents is provided"),
    ("watch=1&sendInitialEvents=true&resourceVersionMatch=Exact",
     "[resourceVersionMatch: Forbidden: sendInitialEvents requires setting "
     "resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "
     '"Exact": supported values: "NotOlderThan"]'),
    ("sendInitialEvents=true",
     "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"),
    ("resourceVersionMatch=NotOlderThan",
     "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless "
     "resourceVersion is provided"),
    ("resourceVersion=0&resourceVersionMatch=Exact",
     'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for '
     'resourceVersion "0"'),
])
def test_invalid_option_combinations(raw: RawCall, namespace: str, query: str,
                                     message: str) -> None:
    reply = raw("GET", f"{CONFIGMAPS}?{query}")
    assert reply.status == 422
    status = reply.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == f'ListOptions.meta.k8s.io "" is invalid: {message}'
    assert status["details"]["kind"] == "ListOptions"
    assert status["details"]["group"] == "meta.k8s.io"


def test_the_python_client_streams_a_list(core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    stream = watch.Watch().stream(
        core.list_namespaced_config_map, namespace, send_initial_events=True,
        resource_version_match="NotOlderThan", allow_watch_bookmarks=True, timeout_seconds=1)
    events = [(e["type"], e["raw_object"]) for e in stream]
    assert events[0][0] == "ADDED" and events[0][1]["metadata"]["name"] == "a"
    assert events[1][0] == "BOOKMARK"
    assert events[1][1]["metadata"]["annotations"] == {END: "true"}


def test_a_protobuf_watch_list(kube_apiserver: ServerHandle, core: client.CoreV1Api,
                               namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    _, events = read_frames(
        kube_apiserver, f"{CONFIGMAPS}?{WATCH_LIST}&allowWatchBookmarks=true&timeoutSeconds=1")
    assert events[0][0] == "ADDED" and events[0][1]["metadata"]["name"] == "a"
    kind, bookmark = events[1]
    assert kind == "BOOKMARK" and bookmark["metadata"]["annotations"] == {END: "true"}
