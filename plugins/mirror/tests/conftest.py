"""Fixtures: a local API server and a mirror controller built on it (started on demand)."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for
from ovnk_mirror.controller import EndpointSliceMirror
from ovnk_mirror.testing import CONFIG, MirrorEnv

from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.kube.backoff import Backoff
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.networks.registry import NetworkRegistry


@pytest.fixture
def mirror_env(kube_apiserver: ServerHandle) -> Iterator[MirrorEnv]:
    """A mirror environment whose controller is started by ``start_mirror``."""
    client = KubeClient(client_for(kube_apiserver))
    informers = InformerFactory(client)
    context = ClusterManagerContext(CONFIG, client, informers,
                                    EventRecorder(client, "ovnkube-cluster-manager", "test"),
                                    NetworkRegistry())
    env = MirrorEnv(client, context)
    yield env
    if env.mirror is not None:
        env.mirror.controller.stop()
    informers.stop()


@pytest.fixture
def start_mirror(mirror_env: MirrorEnv) -> Callable[..., EndpointSliceMirror]:
    """``start_mirror()`` builds and starts the controller (fast retries for tests)."""
    def start(backoff: Backoff | None = None) -> EndpointSliceMirror:
        controller = EndpointSliceMirror(mirror_env.context)
        if backoff is not None:
            controller.controller.backoff = backoff
        mirror_env.mirror = controller
        mirror_env.context.informers.start()
        controller.controller.start()
        return controller
    return start
