"""Informers against the local API server, through a proxy that injects failures.

Every test ends by checking the cache against a fresh list from the server:
whatever the network did, the informer converges and no change is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for, ssl_context_for

from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.informer import ADDED, DELETED, MODIFIED, Informer, index_by_namespace
from ovnk_core.kube.resources import CONFIGMAPS, NAMESPACES, object_key
from ovnk_core.testing.fault_proxy import FaultProxy
from ovnk_core.testing.waiting import wait_until


@pytest.fixture
def proxy(kube_apiserver: ServerHandle) -> Iterator[FaultProxy]:
    fault_proxy = FaultProxy(kube_apiserver.url, ssl_context_for(kube_apiserver)).start()
    yield fault_proxy
    fault_proxy.stop()


@pytest.fixture
def direct(kube_apiserver: ServerHandle) -> KubeClient:
    """A client that talks to the server without faults (the test's hands)."""
    return KubeClient(client_for(kube_apiserver))


@pytest.fixture
def proxied(proxy: FaultProxy) -> KubeClient:
    from kubernetes import client

    configuration = client.Configuration()
    configuration.host = proxy.url
    return KubeClient(client.ApiClient(configuration))


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, event: str, old: JSON | None, new: JSON | None) -> None:
        with self.lock:
            self.events.append((event, object_key(new or old or {})))

    def seen(self, event: str, key: str) -> bool:
        with self.lock:
            return (event, key) in self.events


def configmap(name: str, value: str = "1", namespace: str = "default") -> JSON:
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"v": value}}


def cache_matches_server(informer: Informer, direct: KubeClient) -> bool:
    listed = direct.list(informer.resource)["items"]
    server = {object_key(o): o["metadata"]["resourceVersion"] for o in listed}
    cached = {object_key(o): o["metadata"]["resourceVersion"] for o in informer.items()}
    return server == cached


def start(client: KubeClient, **kwargs) -> Informer:  # type: ignore[no-untyped-def]
    informer = Informer(client, CONFIGMAPS, min_backoff=0.05, max_backoff=0.2, **kwargs)
    return informer


def test_list_then_watch_delivers_add_update_delete(proxied: KubeClient,
                                                    direct: KubeClient) -> None:
    direct.create(CONFIGMAPS, configmap("before"))
    informer = start(proxied, indexers={"namespace": index_by_namespace})
    recorder = Recorder()
    informer.add_handler(recorder)
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        assert recorder.seen(ADDED, "default/before")
        direct.create(CONFIGMAPS, configmap("after"))
        direct.patch(CONFIGMAPS, "before", {"data": {"v": "2"}}, "default")
        direct.delete(CONFIGMAPS, "after", "default")
        wait_until(lambda: recorder.seen(DELETED, "default/after"))
        assert recorder.seen(ADDED, "default/after")
        assert recorder.seen(MODIFIED, "default/before")
        assert informer.get("default/before")["data"] == {"v": "2"}  # type: ignore[index]
        assert [o["metadata"]["name"] for o in informer.by_index("namespace", "default")] \
            == ["before"]
        assert cache_matches_server(informer, direct)
    finally:
        informer.stop()


def test_dropped_stream_resumes_without_losing_events(proxy: FaultProxy, proxied: KubeClient,
                                                      direct: KubeClient) -> None:
    informer = start(proxied)
    recorder = Recorder()
    informer.add_handler(recorder)
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        for round_ in range(3):
            wait_until(lambda: proxy.open_watches() == 1)
            before = informer.stats.watches
            assert proxy.drop_watches() == 1
            # Changes made while the stream is down are delivered after the resume.
            direct.create(CONFIGMAPS, configmap(f"while-down-{round_}"))
            name = f"default/while-down-{round_}"
            wait_until(lambda name=name: recorder.seen(ADDED, name))  # type: ignore[misc]
            wait_until(lambda before=before: informer.stats.watches > before)  # type: ignore[misc]
        assert informer.stats.lists == 1  # resumed from resourceVersion, no relist needed
        wait_until(lambda: cache_matches_server(informer, direct))
    finally:
        informer.stop()


def test_410_gone_relists_and_reports_the_difference(proxy: FaultProxy, proxied: KubeClient,
                                                     direct: KubeClient) -> None:
    direct.create(CONFIGMAPS, configmap("stays"))
    direct.create(CONFIGMAPS, configmap("goes"))
    informer = start(proxied)
    recorder = Recorder()
    informer.add_handler(recorder)
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        # Cut the stream and keep the informer away from the server while the world changes,
        # then let its next watch meet 410 Gone: the changes can only arrive by relisting.
        wait_until(lambda: proxy.open_watches() == 1)
        proxy.fail_next(500, count=10_000, match="GET /api/v1/configmaps")
        assert proxy.drop_watches() == 1
        direct.delete(CONFIGMAPS, "goes", "default")
        direct.patch(CONFIGMAPS, "stays", {"data": {"v": "changed"}}, "default")
        wait_until(lambda: informer.stats.errors >= 2)
        assert not recorder.seen(DELETED, "default/goes")
        proxy.clear_faults()
        proxy.gone_next_watch()
        wait_until(lambda: informer.stats.relists_after_gone >= 1)
        wait_until(lambda: recorder.seen(DELETED, "default/goes"))
        wait_until(lambda: recorder.seen(MODIFIED, "default/stays"))
        assert informer.stats.lists >= 2
        wait_until(lambda: cache_matches_server(informer, direct))
    finally:
        informer.stop()


def test_api_errors_on_list_are_retried_until_sync(proxy: FaultProxy,
                                                   proxied: KubeClient,
                                                   direct: KubeClient) -> None:
    direct.create(CONFIGMAPS, configmap("a"))
    proxy.fail_next(500, count=3, match="GET /api/v1/configmaps")
    proxy.fail_next(409, count=1, match="GET /api/v1/configmaps", reason="Conflict")
    informer = start(proxied)
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        assert informer.stats.errors >= 4
        assert informer.list_keys() == ["default/a"]
    finally:
        informer.stop()


def test_server_side_watch_timeout_rewatches(kube_apiserver: ServerHandle,
                                             direct: KubeClient) -> None:
    informer = Informer(direct, CONFIGMAPS, watch_timeout=1)
    recorder = Recorder()
    informer.add_handler(recorder)
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        wait_until(lambda: informer.stats.watches >= 3, timeout=10)
        direct.create(CONFIGMAPS, configmap("late"))
        wait_until(lambda: recorder.seen(ADDED, "default/late"))
        assert informer.stats.lists == 1
    finally:
        informer.stop()


def test_bookmarks_advance_the_resume_point(kube_apiserver: ServerHandle,
                                            direct: KubeClient) -> None:
    informer = Informer(direct, NAMESPACES)
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        direct.create(CONFIGMAPS, configmap("elsewhere"))  # bumps the global resourceVersion
        wait_until(lambda: informer.stats.bookmarks >= 1, timeout=10)
        listed_rv = int(direct.list(NAMESPACES)["metadata"]["resourceVersion"])
        wait_until(lambda: int(informer.resource_version) >= listed_rv, timeout=10)
    finally:
        informer.stop()


def test_periodic_resync_reannounces_every_object(direct: KubeClient) -> None:
    direct.create(CONFIGMAPS, configmap("a"))
    informer = Informer(direct, CONFIGMAPS, resync_period=0.3, watch_timeout=1)
    recorder = Recorder()
    informer.add_handler(recorder)
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        wait_until(lambda: recorder.seen(MODIFIED, "default/a"), timeout=10)
    finally:
        informer.stop()


def test_handler_errors_do_not_stop_delivery(direct: KubeClient) -> None:
    informer = Informer(direct, CONFIGMAPS)
    recorder = Recorder()

    def broken(_event: str, _old: JSON | None, _new: JSON | None) -> None:
        raise RuntimeError("handler bug")

    informer.add_handler(broken)
    informer.add_handler(recorder)
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        direct.create(CONFIGMAPS, configmap("x"))
        wait_until(lambda: recorder.seen(ADDED, "default/x"))
    finally:
        informer.stop()
    with pytest.raises(NotFound):
        direct.get(CONFIGMAPS, "missing", "default")


def test_peek_all_and_index_values_read_the_cache_without_copies(direct: KubeClient) -> None:
    direct.create(CONFIGMAPS, configmap("p", "red"))
    direct.create(CONFIGMAPS, configmap("q", "blue"))
    informer = Informer(direct, CONFIGMAPS,
                        indexers={"colour": lambda obj: [obj["data"]["v"]]})
    informer.start()
    try:
        assert informer.wait_for_sync(10)
        wait_until(lambda: len(informer.peek_all()) >= 2)
        peeked = {object_key(o): o for o in informer.peek_all()}
        assert peeked["default/p"] is informer.peek("default/p")  # the cached object itself
        assert {"red", "blue"} <= set(informer.index_values("colour"))
        direct.delete(CONFIGMAPS, "q", "default")
        wait_until(lambda: "blue" not in informer.index_values("colour"))  # emptied: gone
        with pytest.raises(KeyError):
            informer.index_values("shape")
    finally:
        informer.stop()
