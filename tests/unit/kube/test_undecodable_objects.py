"""One object nested too deeply to decode never stops an informer (ovn-kubernetes #4846, #6541).

A real kube-apiserver keeps objects nested up to 10,000 levels; Python's json
gives out near 1,000 (RecursionError, not ValueError).  The local API server
refuses such objects, so these tests serve them from a small foreign server
that answers lists and watches as kube-apiserver would, and check what the
informer made of them: the others cached and delivered, the bad one reported
by name and skipped, the watch moving past it, its deletion applied.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from kubernetes import client
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import with_crds

from ovnk_core import jsondepth
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.decoding import (
    Undecodable,
    UndecodableResponse,
    cut_deep,
    decode_event,
    decode_list,
)
from ovnk_core.kube.events import UNDECODABLE_REASON, EventRecorder, undecodable_reporter
from ovnk_core.kube.informer import Informer, InformersNotSynced, wait_for_informers
from ovnk_core.kube.resources import CONFIGMAPS, EVENTS, NADS, NAMESPACES, Resource, object_key
from ovnk_core.testing.waiting import wait_until

DEPTH = 1100  # as in the report: past Python's recursion limit


def deep_value(depth: int) -> str:
    return "[" * depth + "]" * depth


def configmap_text(name: str, rv: str, deep: int = 0) -> str:
    """A ConfigMap as JSON text; ``deep`` nests an extra field that many levels."""
    extra = f',"extra":{deep_value(deep)}' if deep else ""
    return (f'{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}",'
            f'"namespace":"ns","uid":"uid-{name}","resourceVersion":"{rv}"}},'
            f'"data":{{"v":"{rv}"}}{extra}}}')


class ForeignServer:
    """Answers one resource's list (``list_items``) and watches (lines from ``events``),
    recording the query of every request."""

    def __init__(self) -> None:
        self.list_items: list[str] = []
        self.list_rv = "10"
        self.events: queue.Queue[str | None] = queue.Queue()
        self.requests: list[dict[str, list[str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                pass

            def do_GET(self) -> None:
                query = parse_qs(urlsplit(self.path).query)
                server.requests.append(query)
                if query.get("watch") == ["true"]:
                    self._watch()
                    return
                body = (f'{{"apiVersion":"v1","kind":"ConfigMapList","metadata":'
                        f'{{"resourceVersion":"{server.list_rv}"}},"items":['
                        + ",".join(server.list_items) + "]}").encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _watch(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while True:
                    try:
                        line = server.events.get(timeout=0.5)
                    except queue.Empty:
                        continue
                    if line is None:
                        break
                    data = line.encode() + b"\n"
                    self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def send(self, event_type: str, obj_text: str) -> None:
        self.events.put(f'{{"type":"{event_type}","object":{obj_text}}}')

    def watches_from(self, rv: str) -> int:
        return sum(1 for q in self.requests
                   if q.get("watch") == ["true"] and q.get("resourceVersion") == [rv])

    def lists(self) -> int:
        return sum(1 for q in self.requests if q.get("watch") != ["true"])


@pytest.fixture
def foreign() -> Iterator[ForeignServer]:
    server = ForeignServer()
    server.thread.start()
    yield server
    for _ in range(8):
        server.events.put(None)  # end open watches
    server.httpd.shutdown()
    server.httpd.server_close()


def client_of(server: ForeignServer) -> KubeClient:
    configuration = client.Configuration()
    configuration.host = server.url
    return KubeClient(client.ApiClient(configuration))


class Reports:
    def __init__(self) -> None:
        self.items: list[tuple[str, Undecodable]] = []
        self.lock = threading.Lock()

    def __call__(self, resource: Resource, item: Undecodable) -> None:
        with self.lock:
            self.items.append((resource.kind, item))

    def keys(self) -> list[str]:
        with self.lock:
            return [item.key for _, item in self.items]


def informer_of(server: ForeignServer, reports: Reports, **kwargs: Any) -> Informer:
    return Informer(client_of(server), CONFIGMAPS, min_backoff=0.05, max_backoff=0.1,
                    on_undecodable=reports, **kwargs)


# -- bounded decoding -------------------------------------------------------------------------
def test_too_deep_is_a_value_error_at_a_fixed_depth_never_a_recursion_error() -> None:
    limit = jsondepth.MAX_DEPTH
    assert jsondepth.loads(deep_value(limit)) is not None  # at the limit: fine
    for depth in (limit + 1, 900, DEPTH, 100_000):  # 201 and 900 decode in Python, still out
        with pytest.raises(ValueError, match=f"nested deeper than {limit} levels"):
            jsondepth.loads(deep_value(depth))
    with pytest.raises(ValueError):
        jsondepth.loads("[1,")  # plain invalid JSON is still a JSONDecodeError
    nested: Any = []
    for _ in range(100_000):  # built without recursion, measured without recursion
        nested = [nested]
    assert jsondepth.depth(nested) == limit + 1
    assert jsondepth.depth({"a": [1, {"b": "[[[["}]}) == 3


def test_cut_deep_keeps_strings_with_brackets_and_cuts_only_what_is_too_deep() -> None:
    text = b'{"a":"[{\\"]","b":[[[1]],[2]],"c":[[["x]"]]]}'
    assert json.loads(cut_deep(text, 2)) == {"a": '[{"]', "b": [None, None], "c": [None]}
    assert json.loads(cut_deep(text, 10)) == json.loads(text)


def test_a_list_with_a_deep_item_keeps_the_others_and_names_the_deep_one() -> None:
    items = [configmap_text("a", "5"), configmap_text("b", "6", deep=DEPTH),
             configmap_text("c", "7", deep=jsondepth.MAX_DEPTH)]  # c: deep but decodable
    data = ('{"metadata":{"resourceVersion":"9"},"items":[' + ",".join(items) + "]}").encode()
    document, skipped = decode_list(data, "GET /api/v1/configmaps")
    assert [object_key(item) for item in document["items"]] == ["ns/a"]
    assert [(item.key, item.resource_version) for item in skipped] == [("ns/b", "6"),
                                                                       ("ns/c", "7")]
    assert skipped[0].reason == f"nested deeper than {jsondepth.MAX_DEPTH} levels"
    assert document["metadata"]["resourceVersion"] == "9"


def test_a_watch_event_with_a_deep_object_keeps_its_type_and_identity() -> None:
    line = f'{{"type":"MODIFIED","object":{configmap_text("b", "6", deep=DEPTH)}}}'.encode()
    event = decode_event(line)
    assert isinstance(event, Undecodable)
    assert (event.event_type, event.key, event.resource_version) == ("MODIFIED", "ns/b", "6")
    fine = decode_event(f'{{"type":"ADDED","object":{configmap_text("a", "5")}}}'.encode())
    assert isinstance(fine, dict) and fine["object"]["metadata"]["name"] == "a"


def test_get_of_a_deep_object_is_an_api_error_not_a_recursion_error(
        foreign: ForeignServer) -> None:
    foreign.list_items = [configmap_text("b", "6", deep=DEPTH)]
    with pytest.raises(UndecodableResponse, match="cannot be decoded: nested deeper"):
        client_of(foreign).get(CONFIGMAPS, "b", "ns")  # the list body, deep: same decoding


# -- the informer -----------------------------------------------------------------------------
def test_informer_syncs_past_a_deep_object_in_its_first_list(foreign: ForeignServer) -> None:
    foreign.list_items = [configmap_text("a", "5"), configmap_text("b", "6", deep=DEPTH)]
    reports = Reports()
    informer = informer_of(foreign, reports).start()
    try:
        wait_for_informers([informer], 10)
        assert informer.list_keys() == ["ns/a"]
        assert reports.keys() == ["ns/b"]
        assert informer.resource_version == "10"
        # the watch goes on from the list's version: no error loop
        wait_until(lambda: foreign.watches_from("10") == 1)
        foreign.send("ADDED", configmap_text("c", "11"))
        wait_until(lambda: "ns/c" in informer.list_keys())
        assert informer.stats.errors == 0
    finally:
        informer.stop()


def test_informer_moves_past_deep_watch_events_and_applies_their_deletion(
        foreign: ForeignServer) -> None:
    foreign.list_items = [configmap_text("a", "5")]
    reports = Reports()
    seen: list[tuple[str, str]] = []
    informer = informer_of(foreign, reports)
    informer.add_handler(lambda event, old, new: seen.append(
        (event, object_key(new or old or {}))))
    informer.start()
    try:
        wait_for_informers([informer], 10)
        wait_until(lambda: foreign.watches_from("10") == 1)
        foreign.send("MODIFIED", configmap_text("a", "11", deep=DEPTH))
        foreign.send("ADDED", configmap_text("b", "12"))
        wait_until(lambda: "ns/b" in informer.list_keys())
        # the deep version is skipped: the last one that could be read stays
        cached = informer.get("ns/a")
        assert cached is not None and cached["metadata"]["resourceVersion"] == "5"
        assert reports.keys() == ["ns/a"]
        foreign.send("DELETED", configmap_text("a", "13", deep=DEPTH))
        wait_until(lambda: informer.list_keys() == ["ns/b"])
        assert ("DELETED", "ns/a") in seen
        assert informer.resource_version == "13"
        # the watch never went back to a version before the deep event
        assert foreign.watches_from("10") == 1 and foreign.watches_from("11") == 0
        assert foreign.lists() == 1 and informer.stats.errors == 0
    finally:
        informer.stop()


def test_an_event_whose_version_cannot_be_read_makes_the_informer_list_again(
        foreign: ForeignServer) -> None:
    foreign.list_items = [configmap_text("a", "5")]
    reports = Reports()
    informer = informer_of(foreign, reports).start()
    try:
        wait_for_informers([informer], 10)
        wait_until(lambda: foreign.watches_from("10") == 1)
        foreign.list_items.append(configmap_text("b", "12"))
        foreign.list_rv = "12"
        # identity nested too deep to be read: no name, no resourceVersion
        foreign.send("ADDED", f'{{"x":{deep_value(DEPTH)}}}')
        wait_until(lambda: foreign.lists() == 2)
        wait_until(lambda: informer.list_keys() == ["ns/a", "ns/b"])
        wait_until(lambda: foreign.watches_from("12") == 1)
        assert reports.keys() == [""]  # reported (no name to put an event on)
    finally:
        informer.stop()


def test_an_index_function_that_fails_on_one_object_leaves_only_it_out(
        foreign: ForeignServer) -> None:
    foreign.list_items = [configmap_text("a", "5"), configmap_text("bad", "6")]

    def by_value(obj: JSON) -> list[str]:
        if obj["metadata"]["name"] == "bad":
            raise RecursionError("maximum recursion depth exceeded")
        return [obj["data"]["v"]]

    informer = informer_of(foreign, Reports(), indexers={"value": by_value}).start()
    try:
        wait_for_informers([informer], 10)
        assert informer.list_keys() == ["ns/a", "ns/bad"]
        assert informer.keys_by_index("value", "5") == ["ns/a"]
        wait_until(lambda: foreign.watches_from("10") == 1)
        foreign.send("DELETED", configmap_text("bad", "11"))  # removal works too
        foreign.send("ADDED", configmap_text("c", "12"))
        wait_until(lambda: informer.list_keys() == ["ns/a", "ns/c"])
        assert informer.keys_by_index("value", "12") == ["ns/c"]
    finally:
        informer.stop()


def test_informers_that_cannot_sync_say_which_and_why(kube_apiserver: ServerHandle) -> None:
    from ovnk_local.testing.apiserver_fixtures import client_for
    api = KubeClient(client_for(kube_apiserver))  # no CRDs: NADs are not served
    nads = Informer(api, NADS, min_backoff=0.05, max_backoff=0.1).start()
    namespaces = Informer(api, NAMESPACES).start()
    try:
        with pytest.raises(InformersNotSynced) as caught:
            wait_for_informers([namespaces, nads], 1.0)
        message = str(caught.value)
        assert message.startswith("informers did not sync within 1s: "
                                  "network-attachment-definitions.k8s.cni.cncf.io (NotFound: ")
        assert "namespaces" not in message
    finally:
        nads.stop()
        namespaces.stop()


def test_the_event_reporter_puts_a_warning_on_the_named_object(
        kube_apiserver: ServerHandle) -> None:
    api = with_crds(kube_apiserver)
    api.create(NAMESPACES, {"metadata": {"name": "ns"}})
    nad = api.create(NADS, {"metadata": {"name": "deep", "namespace": "ns"},
                            "spec": {"config": "{}"}})
    report = undecodable_reporter(EventRecorder(api, "test"))
    meta = nad["metadata"]
    report(NADS, Undecodable("nested deeper than 200 levels", {"metadata": {
        "name": "deep", "namespace": "ns", "uid": meta["uid"],
        "resourceVersion": meta["resourceVersion"]}}))
    report(NADS, Undecodable("nested deeper than 200 levels", {}))  # unnamed: a log line only
    events = [e for e in api.list(EVENTS, "ns")["items"]]
    assert [(e["type"], e["reason"], e["involvedObject"]["kind"],
             e["involvedObject"]["name"], e["involvedObject"]["uid"]) for e in events] == [
        ("Warning", UNDECODABLE_REASON, "NetworkAttachmentDefinition", "deep", meta["uid"])]
    assert events[0]["message"] == (
        "NetworkAttachmentDefinition ns/deep cannot be decoded (nested deeper than 200 "
        "levels); it is skipped until it changes")


def test_the_shared_informers_of_a_process_report_through_its_reporter(
        foreign: ForeignServer) -> None:
    from ovnk_core.kube.factory import InformerFactory
    foreign.list_items = [configmap_text("a", "5"), configmap_text("b", "6", deep=DEPTH)]
    reports = Reports()
    factory = InformerFactory(client_of(foreign), on_undecodable=reports)
    informer = factory.get(CONFIGMAPS)
    factory.start()
    try:
        factory.wait_for_sync(10)
        assert informer.list_keys() == ["ns/a"] and reports.keys() == ["ns/b"]
    finally:
        factory.stop()
