"""Pytest fixtures for the local API server: a fresh server per test and a client for it.

``kube_apiserver`` is a running ``ServerHandle`` on 127.0.0.1 with fresh state
(and a short bookmark interval, so bookmark behaviour is testable);
``kube_client`` is an official ``kubernetes.client.ApiClient`` configured for
it; ``kube_apiserver_factory`` starts servers with custom options or a data
file (stopped at teardown), for history, persistence and restart tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

from ovnk_core.apiserver.server import ServerHandle, ServerOptions, serve
from ovnk_core.kube.client import KubeClient

ServerFactory = Callable[..., ServerHandle]


def with_crds(handle: ServerHandle) -> KubeClient:
    """A ``KubeClient`` of ``handle`` once the project's CRDs are served there."""
    from ovnk_core.kube.resources import CRDS, NADS
    from ovnk_core.manifests.crds import build_crds
    from ovnk_core.testing.waiting import wait_until

    api = KubeClient(client_for(handle))
    for crd in build_crds():
        api.create(CRDS, crd)
    wait_until(lambda: api.list(NADS) is not None)
    return api


def client_for(handle: ServerHandle) -> client.ApiClient:
    """An official-client ``ApiClient`` talking to ``handle`` (plain HTTP, no auth)."""
    configuration = client.Configuration()
    configuration.host = handle.url
    return client.ApiClient(configuration)


@pytest.fixture
def kube_apiserver_factory() -> Iterator[ServerFactory]:
    """``factory(options=None, data_file=None, port=0)`` -> a started server."""
    handles: list[ServerHandle] = []

    def start(options: ServerOptions | None = None, data_file: Path | str | None = None,
              port: int = 0) -> ServerHandle:
        handle = serve("127.0.0.1", port, data_file,
                       options or ServerOptions(bookmark_interval=1.0))
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        if handle.thread.is_alive():
            handle.stop()


@pytest.fixture
def kube_apiserver(kube_apiserver_factory: ServerFactory) -> ServerHandle:
    """A running local API server with fresh state (bookmarks every second)."""
    return kube_apiserver_factory()


@pytest.fixture
def kube_client(kube_apiserver: ServerHandle) -> Iterator[client.ApiClient]:
    """A ``kubernetes.client.ApiClient`` configured for ``kube_apiserver``."""
    api_client = client_for(kube_apiserver)
    yield api_client
    cast(Any, api_client).close()
