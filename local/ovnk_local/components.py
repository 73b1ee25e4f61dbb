"""The restartable components of the local cluster and how each one runs.

``ovnk local component NAME`` runs one of them in the foreground until
SIGTERM.  It writes ``DIR/run/NAME.ready`` once its informers have synced
and it has started working, which is what ``ovnk local up`` waits for.
Later work adds the ovnk control-plane components to ``COMPONENTS``.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_local.endpointslices import EndpointSliceController
from ovnk_local.kubelet import Kubelet
from ovnk_local.runtime import Sandboxes
from ovnk_local.scheduler import Scheduler
from ovnk_local.state import ClusterState

log = logging.getLogger(__name__)


class Runnable(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


def cni_dir(cluster_dir: Path) -> Path | None:
    """Where the node agents' CNI sockets are, when the cluster runs a real dataplane;
    without one there are no agents, and a pod is Running once it is annotated."""
    state = ClusterState.load(cluster_dir / "cluster.json")
    return cluster_dir / "run" / "cni" if state.dataplane else None


def kubelet(client: KubeClient, cluster_dir: Path) -> Kubelet:
    """With a real dataplane: the node agents' CNI sockets, and the pods' and nodes'
    namespaces and cgroups, where it runs containers and probes."""
    sockets = cni_dir(cluster_dir)
    return Kubelet(client, cni_dir=sockets,
                   sandboxes=Sandboxes.of_cluster(cluster_dir) if sockets else None)


COMPONENTS: dict[str, Callable[[KubeClient, Path], Runnable]] = {
    "scheduler": lambda client, _dir: Scheduler(client),
    "kubelet": kubelet,
    "endpointslice-controller": lambda client, _dir: EndpointSliceController(client),
}


def run_component(name: str, kubeconfig: str, ready_file: Path | None,
                  cluster_dir: Path) -> int:
    factory = COMPONENTS.get(name)
    if factory is None:
        raise KeyError(f"unknown component {name!r} (known: {', '.join(COMPONENTS)})")
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    component = factory(KubeClient(api_client_from_kubeconfig(kubeconfig)), cluster_dir)
    component.start()
    log.info("component %s: running", name)
    if ready_file is not None:
        ready_file.parent.mkdir(parents=True, exist_ok=True)
        ready_file.write_text("ready\n")
    stop.wait()
    log.info("component %s: stopping", name)
    if ready_file is not None:
        ready_file.unlink(missing_ok=True)
    component.stop()
    return 0
