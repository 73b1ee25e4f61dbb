"""The control plane the e2e tests share: a local API server with the CRDs and two nodes
(``client``, the admin's), and ``plane``, which starts cluster managers and zone controllers as
their own identities and stops them at teardown (``ovnk_local.testing.control_plane``); and
the ``ovnk local`` cluster the dataplane modules of ``SHARED_MODULES`` share, and the one
without a dataplane that ``CONTROL_PLANE_MODULES`` share, each reset between its modules
(``ovnk_local.testing.shared_cluster``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.cluster import LocalCluster
from ovnk_local.settings import ComponentSettings
from ovnk_local.testing.control_plane import ControlPlane, cluster_with_nodes
from ovnk_local.testing.dataplane import require_dataplane
from ovnk_local.testing.shared_cluster import (
    SHARED_SETTINGS,
    down_leaves_nothing,
    reset,
    snapshot,
)

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


@pytest.fixture(scope="session")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One 2-node ``ovnk local`` cluster with a real dataplane for this pytest process (one
    xdist worker runs the modules of ``SHARED_MODULES``); at the end, ``down`` with a pod
    running must leave nothing behind."""
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("shared-dataplane") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=True,
             settings=ComponentSettings(given=dict(SHARED_SETTINGS)))
    yield local
    down_leaves_nothing(local)


@pytest.fixture(scope="session")
def shared_control_plane_cluster(tmp_path_factory: pytest.TempPathFactory
                                 ) -> Iterator[LocalCluster]:
    """One 2-node ``ovnk local`` cluster without a dataplane for this pytest process (one
    xdist worker runs the modules of ``CONTROL_PLANE_MODULES``)."""
    local = LocalCluster(tmp_path_factory.mktemp("shared-control-plane") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=False)
    yield local
    local.down()


@pytest.fixture(scope="module")
def shared_control_plane(shared_control_plane_cluster: LocalCluster
                         ) -> Iterator[LocalCluster]:
    """The shared cluster without a dataplane for one module (listed in
    ``CONTROL_PLANE_MODULES``), reset after it as ``shared_dataplane`` is."""
    before = snapshot(shared_control_plane_cluster)
    yield shared_control_plane_cluster
    reset(shared_control_plane_cluster, before)


@pytest.fixture(scope="module")
def shared_dataplane(shared_cluster: LocalCluster) -> Iterator[LocalCluster]:
    """The shared cluster for one module (listed in ``SHARED_MODULES``): afterwards
    what it made is deleted and nothing of it may be left (``shared_cluster.reset``)."""
    before = snapshot(shared_cluster)
    yield shared_cluster
    reset(shared_cluster, before)
