"""The control plane the e2e tests share: a local API server with the CRDs and two nodes
(``client``, the admin's), and ``plane``, which starts cluster managers and zone controllers as
their own identities and stops them at teardown (``ovnk_local.testing.control_plane``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.control_plane import ControlPlane, cluster_with_nodes

from ovnk_core.kube.client import KubeClient
from ovnk_core.testing.configs import udn_config


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    """The admin's client of a server that serves the CRDs and has two nodes."""
    return cluster_with_nodes(kube_apiserver)


@pytest.fixture
def plane(client: KubeClient, kube_apiserver: ServerHandle) -> Iterator[ControlPlane]:
    """Components started on ``kube_apiserver`` with the UDN test configuration."""
    running = ControlPlane(kube_apiserver, udn_config())
    yield running
    running.stop()
