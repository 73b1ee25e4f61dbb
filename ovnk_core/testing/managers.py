"""Cluster managers started by tests, each stopped when the test ends."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.config import Config
from ovnk_core.kube.client import KubeClient
from ovnk_core.plugins import PluginHost


def managers(client: KubeClient, config: Config) -> Iterator[Callable[[], ClusterManager]]:
    """Yields ``start()``: a fresh cluster manager of ``config`` with its controllers
    running; every one started is stopped when the generator closes (a fixture's
    ``yield from``)."""
    running: list[ClusterManager] = []

    def start() -> ClusterManager:
        manager = ClusterManager(config, client, PluginHost.load(config), identity="t")
        manager.start_controllers()
        running.append(manager)
        return manager

    yield start
    for manager in running:
        manager.stop_controllers()
