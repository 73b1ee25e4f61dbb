"""Pytest fixtures for the local API server: a fresh server per test and a client for it.

``kube_apiserver`` is a running ``ServerHandle`` on 127.0.0.1 with fresh state
(and a short bookmark interval, so bookmark behaviour is testable), serving
HTTPS with the test session's CA (``cluster_pki``) and authenticating every
request as the real server would; ``kube_client`` is an official
``kubernetes.client.ApiClient`` for it that authenticates as the cluster admin
(``client_for(handle, user, groups)`` gives any other identity);
``kube_apiserver_factory`` starts servers with custom options or a data file
(stopped at teardown), for history, persistence and restart tests.
"""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

from ovnk_core.kube.client import KubeClient, api_client_from_config
from ovnk_local.apiserver.authn import MASTERS
from ovnk_local.apiserver.security import ADMIN_USER, SecurityOptions
from ovnk_local.apiserver.server import ServerHandle, ServerOptions, serve, with_security

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


def _groups(user: str | None, groups: tuple[str, ...] | None) -> tuple[str, ...]:
    """The admin is in ``system:masters``; anyone else only in the groups named."""
    if groups is not None:
        return groups
    return (MASTERS,) if user == ADMIN_USER else ()


def client_for(handle: ServerHandle, user: str = ADMIN_USER,
               groups: tuple[str, ...] | None = None) -> client.ApiClient:
    """An official-client ``ApiClient`` for ``handle`` that authenticates as ``user`` with a
    client certificate (default: the cluster admin, in ``system:masters``)."""
    return api_client_from_config(handle.kubeconfig(user, _groups(user, groups)))


def ssl_context_for(handle: ServerHandle, user: str | None = ADMIN_USER,
                    groups: tuple[str, ...] | None = None) -> ssl.SSLContext:
    """A client TLS context trusting ``handle``'s CA, presenting ``user``'s certificate
    (``user=None``: no client certificate) — for raw HTTP tests."""
    security = handle.security
    context = ssl.create_default_context(cafile=str(security.options.client_ca_file))
    if user is not None:
        pair = security.certificate_authority().issue_client(user, _groups(user, groups))
        folder = Path(security.options.client_ca_file).parent / "clients"
        stem = uuid.uuid4().hex
        cert, key = folder / f"{stem}.crt", folder / f"{stem}.key"
        pair.write(cert, key)
        context.load_cert_chain(cert, key)
    return context


def component_client(handle: ServerHandle, user: str,
                     groups: tuple[str, ...] = ()) -> KubeClient:
    """A client that authenticates as one of ovnk's processes (``ovnk_core.identities``),
    once the RBAC that ships for them (``manifests/rbac``) and the roles of the plugins the
    default configuration enables (NetworkPolicy's) are applied: a permission the code
    needs and its role lacks fails the test as it would fail in a cluster."""
    from ovnk_core.config import load_config
    from ovnk_core.identities import OVN_NAMESPACE
    from ovnk_core.kube.apply import apply_documents
    from ovnk_core.kube.errors import AlreadyExists
    from ovnk_core.kube.resources import NAMESPACES
    from ovnk_core.manifests.rbac import ovnk_rbac_documents

    admin = KubeClient(client_for(handle))
    try:
        admin.create(NAMESPACES, {"metadata": {"name": OVN_NAMESPACE}})
    except AlreadyExists:
        pass
    apply_documents(admin, ovnk_rbac_documents(load_config({}, env={})))
    return KubeClient(client_for(handle, user, groups))


@pytest.fixture(scope="session")
def cluster_pki(tmp_path_factory: pytest.TempPathFactory) -> SecurityOptions:
    """The test session's cluster CA, serving certificate and service-account key."""
    return SecurityOptions.in_directory(tmp_path_factory.mktemp("pki"))


@pytest.fixture
def kube_apiserver_factory(cluster_pki: SecurityOptions) -> Iterator[ServerFactory]:
    """``factory(options=None, data_file=None, port=0)`` -> a started server (HTTPS, the
    session CA; options without ``security`` get it)."""
    handles: list[ServerHandle] = []

    def start(options: ServerOptions | None = None, data_file: Path | str | None = None,
              port: int = 0) -> ServerHandle:
        handle = serve("127.0.0.1", port, data_file, with_security(
            options or ServerOptions(bookmark_interval=1.0), cluster_pki))
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
