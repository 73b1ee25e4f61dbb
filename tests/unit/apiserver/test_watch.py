"""Watch: order, resume from a resourceVersion, bookmarks, 410 Expired, timeouts, selectors,
and many concurrent watchers and writers."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.resources import ResourceType
from ovnk_local.apiserver.selectors import matcher
from ovnk_local.apiserver.server import ServerHandle, ServerOptions
from ovnk_local.apiserver.store import Store
from ovnk_local.apiserver.watch import WatchRequest, stream
from ovnk_local.testing.apiserver_fixtures import client_for


def collect(func: Callable[..., Any], *args: Any, timeout: int = 2,
            **kwargs: Any) -> list[tuple[str, dict[str, Any]]]:
    """Every (type, raw object) of one watch stream that ends after ``timeout`` seconds."""
    return [(e["type"], e["raw_object"]) for e in watch.Watch().stream(
        func, *args, timeout_seconds=timeout, **kwargs)]


def rv(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


def test_watch_from_list_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "v"}},
                                     _content_type="application/merge-patch+json")
    core.delete_namespaced_config_map("a", namespace)
    events = collect(core.list_namespaced_config_map, namespace, resource_version=start,
                     timeout=1)
    assert [t for t, _ in events] == ["ADDED", "MODIFIED", "DELETED"]
    versions = [rv(o) for _, o in events]
    assert versions == sorted(versions) and len(set(versions)) == 3
    assert events[2][1]["data"] == {"k": "v"}


def test_watch_resumes_after_resource_version(core: client.CoreV1Api, namespace: str) -> None:
    first = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "b"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}})
    events = collect(core.list_namespaced_config_map, namespace,
                     resource_version=first.metadata.resource_version, timeout=1)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "b"), ("ADDED", "c")]


def test_watch_without_resource_version_starts_with_current_state(
        core: client.CoreV1Api, namespace: str) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "b"}})
    events = collect(core.list_namespaced_config_map, namespace, timeout=1)
    assert [(t, o["metadata"]["name"]) for t, o in events] == [("ADDED", "a"), ("ADDED", "b")]


def test_bookmarks_while_idle_and_at_the_end(core: client.CoreV1Api, namespace: str) -> None:
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    started = time.monotonic()
    events = collect(core.list_namespaced_config_map, namespace,
                     resource_version=created.metadata.resource_version,
                     allow_watch_bookmarks=True, timeout=3)
    assert 2.5 < time.monotonic() - started < 6
    bookmarks = [o for t, o in events if t == "BOOKMARK"]
    assert len(bookmarks) >= 3  # one per second while idle, one when the stream ends
    assert all(rv(b) >= int(created.metadata.resource_version) for b in bookmarks)
    assert set(bookmarks[0]["metadata"]) == {"resourceVersion"}


def test_no_bookmarks_unless_asked(core: client.CoreV1Api, namespace: str) -> None:
    events = collect(core.list_namespaced_config_map, namespace, resource_version="1",
                     timeout=2)
    assert events == []


def test_watch_from_compacted_history_is_410(
        kube_apiserver_factory: Callable[..., ServerHandle]) -> None:
    server = kube_apiserver_factory(ServerOptions(history_size=5, bookmark_interval=1.0))
    core = client.CoreV1Api(client_for(server))
    core.create_namespace({"metadata": {"name": "blue"}})
    early = core.create_namespaced_config_map("blue", {"metadata": {"name": "a"}})
    for i in range(10):
        core.create_namespaced_config_map("blue", {"metadata": {"name": f"c{i}"}})
    stream = watch.Watch().stream(core.list_namespaced_config_map, "blue",
                                  resource_version=early.metadata.resource_version,
                                  timeout_seconds=2)
    with pytest.raises(ApiException) as err:
        list(stream)
    assert err.value.status == 410
    raw = core.api_client.rest_client.pool_manager.request(
        "GET", f"{server.url}/api/v1/namespaces/blue/configmaps?watch=true&resourceVersion="
               f"{early.metadata.resource_version}&timeoutSeconds=1")
    assert raw.status == 200
    line = raw.data.decode().splitlines()[0]
    assert '"type":"ERROR"' in line and '"code":410' in line and '"reason":"Expired"' in line
    assert "too old resource version" in line
    recent = core.list_namespaced_config_map("blue").metadata.resource_version
    assert collect(core.list_namespaced_config_map, "blue", resource_version=recent,
                   timeout=1) == []


def test_list_continue_from_compacted_history_is_410(
        kube_apiserver_factory: Callable[..., ServerHandle]) -> None:
    server = kube_apiserver_factory(ServerOptions(history_size=3))
    core = client.CoreV1Api(client_for(server))
    core.create_namespace({"metadata": {"name": "blue"}})
    for i in range(4):
        core.create_namespaced_config_map("blue", {"metadata": {"name": f"c{i}"}})
    page = core.list_namespaced_config_map("blue", limit=2)
    for i in range(4, 10):
        core.create_namespaced_config_map("blue", {"metadata": {"name": f"c{i}"}})
    with pytest.raises(ApiException) as err:
        core.list_namespaced_config_map("blue", limit=2, _continue=page.metadata.var_continue)
    assert err.value.status == 410
    assert "continue parameter is too old" in err.value.body


def test_timeout_seconds_ends_the_stream(core: client.CoreV1Api, namespace: str) -> None:
    started = time.monotonic()
    collect(core.list_namespaced_config_map, namespace, resource_version="1", timeout=1)
    assert 0.8 < time.monotonic() - started < 3


def test_label_selector_transitions(core: client.CoreV1Api, namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    for labels in ({"app": "web"}, {"app": "web", "x": "1"}, {"app": "db"}):
        core.patch_namespaced_config_map("a", namespace, {"metadata": {"labels": labels}},
                                         _content_type="application/strategic-merge-patch+json")
    events = collect(core.list_namespaced_config_map, namespace, resource_version=start,
                     label_selector="app=web", timeout=1)
    assert [t for t, _ in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[2][1]["metadata"]["labels"]["app"] == "db"


def test_field_selector_watch(core: client.CoreV1Api, namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    for name in ("a", "b"):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    events = collect(core.list_namespaced_config_map, namespace, resource_version=start,
                     field_selector="metadata.name=b", timeout=1)
    assert [o["metadata"]["name"] for _, o in events] == ["b"]


def test_custom_resource_watch(custom: client.CustomObjectsApi, namespace: str,
                               widget_crd: dict[str, Any]) -> None:
    listing = custom.list_namespaced_custom_object("example.org", "v1", namespace, "widgets")
    custom.create_namespaced_custom_object("example.org", "v1", namespace, "widgets", {
        "apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"topology": "Layer2"}})
    events = [(e["type"], e["object"]) for e in watch.Watch().stream(
        custom.list_namespaced_custom_object, "example.org", "v1", namespace, "widgets",
        resource_version=listing["metadata"]["resourceVersion"], timeout_seconds=1)]
    assert [(t, o["metadata"]["name"], o["kind"]) for t, o in events] == [
        ("ADDED", "w", "Widget")]


def test_many_watchers_and_writers(server: ServerHandle, core: client.CoreV1Api,
                                   namespace: str) -> None:
    start = core.list_namespaced_config_map(namespace).metadata.resource_version
    writers, per_writer, watchers = 4, 25, 8
    expected = writers * per_writer * 2
    results: list[list[tuple[str, int]]] = [[] for _ in range(watchers)]

    def watch_all(index: int) -> None:
        api = client.CoreV1Api(client_for(server))
        stream = watch.Watch()
        for event in stream.stream(api.list_config_map_for_all_namespaces,
                                   resource_version=start, timeout_seconds=30):
            results[index].append((event["type"], rv(event["raw_object"])))
            if len(results[index]) >= expected:
                stream.stop()

    def write(index: int) -> None:
        api = client.CoreV1Api(client_for(server))
        for i in range(per_writer):
            name = f"w{index}-{i}"
            api.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
            api.patch_namespaced_config_map(name, namespace, {"data": {"i": str(i)}},
                                            _content_type="application/merge-patch+json")

    threads = [threading.Thread(target=watch_all, args=(i,)) for i in range(watchers)]
    threads += [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for events in results:
        assert len(events) == expected
        versions = [v for _, v in events]
        assert versions == sorted(versions) and len(set(versions)) == expected
    assert results.count(results[0]) == watchers


def test_bookmarks_advance_a_busy_filtered_watch(server: ServerHandle, core: client.CoreV1Api,
                                                 namespace: str) -> None:
    start = int(core.list_namespaced_config_map(namespace).metadata.resource_version)
    stop = threading.Event()

    def churn() -> None:
        api = client.CoreV1Api(client_for(server))
        api.create_namespaced_config_map(namespace, {"metadata": {"name": "busy"}})
        i = 0
        while not stop.is_set():
            i += 1
            api.patch_namespaced_config_map("busy", namespace, {"data": {"i": str(i)}},
                                            _content_type="application/merge-patch+json")

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        events = collect(core.list_namespaced_config_map, namespace,
                         resource_version=str(start), label_selector="never=matches",
                         allow_watch_bookmarks=True, timeout=3)
    finally:
        stop.set()
        writer.join()
    bookmarks = [rv(o) for t, o in events if t == "BOOKMARK"]
    assert [t for t, _ in events] == ["BOOKMARK"] * len(bookmarks)
    assert len(bookmarks) >= 2 and bookmarks[-1] > start + 10
    assert bookmarks == sorted(bookmarks)


def test_an_event_is_encoded_once_for_every_stream_and_reads_as_before() -> None:
    """Each pod event goes to every component watching pods: the object is encoded once per
    event and API version, and every stream sends the same line, which reads as the event
    encoded on its own did (the label selector turns a MODIFIED into an ADDED for one)."""
    rt = ResourceType("", "v1", "configmaps", "configmap", "ConfigMap", namespaced=True)
    store = Store()
    store.put(rt.storage, {"metadata": {"name": "c", "namespace": "blue"}, "data": {"k": "é"}})
    since = store.resource_version
    lines: dict[str, list[bytes]] = {"all": [], "labelled": []}
    selectors = {"all": None, "labelled": "app=web"}
    streams = [threading.Thread(target=stream, args=(
        store, WatchRequest(rt, "blue", since, matcher(selectors[name], None), False, 1.0, 60.0),
        lines[name].append, lambda: True)) for name in lines]
    for thread in streams:
        thread.start()
    time.sleep(0.2)
    store.put(rt.storage, {"metadata": {"name": "c", "namespace": "blue",
                                        "labels": {"app": "web"}}, "data": {"k": "é"}})
    for thread in streams:
        thread.join(5)
    [everything], [labelled] = lines["all"], lines["labelled"]
    event = json.loads(everything)
    assert event["type"] == "MODIFIED" and event["object"]["metadata"]["labels"] == {
        "app": "web"}
    assert event["object"]["apiVersion"] == "v1" and event["object"]["kind"] == "ConfigMap"
    assert everything == json.dumps(event, separators=(",", ":")).encode() + b"\n"
    assert json.loads(labelled) == {**event, "type": "ADDED"}
    [recorded] = [e for e in store._history if e.rv == since + 1]
    assert list(recorded.encoded) == ["v1/ConfigMap"]  # once, for both streams
