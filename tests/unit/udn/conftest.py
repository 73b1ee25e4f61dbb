"""A local API server with the project's CRDs and two nodes, and cluster managers on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import with_crds

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NODES
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.managers import managers

UDN_CONFIG = udn_config()


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    """A client of a server that serves the CRDs and has nodes ovn-worker and ovn-worker2."""
    api = with_crds(kube_apiserver)
    for name in ("ovn-worker", "ovn-worker2"):
        api.create(NODES, {"metadata": {"name": name}})
    return api


@pytest.fixture
def start_manager(client: KubeClient) -> Iterator[Callable[[], ClusterManager]]:
    """``start_manager()`` runs a fresh cluster manager's controllers (stopped at teardown)."""
    yield from managers(client, UDN_CONFIG)


@pytest.fixture
def manager(start_manager: Callable[[], ClusterManager]) -> ClusterManager:
    return start_manager()
