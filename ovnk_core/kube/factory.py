"""One informer per resource per process, shared by every controller that needs it.

Several controllers watch pods, namespaces or NADs; each watching on its own
would multiply API traffic and memory.  The factory hands out the same
informer for the same (resource, namespace, selectors) and starts them
together; indexes requested by different controllers are all added to it.
"""

from __future__ import annotations

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.informer import IndexFunc, Informer
from ovnk_core.kube.resources import Resource


class InformerFactory:
    def __init__(self, client: KubeClient, resync_period: float = 300.0) -> None:
        self.client = client
        self.resync_period = resync_period
        self._informers: dict[tuple[Resource, str | None, str | None, str | None], Informer] = {}
        self._started = False

    def get(self, resource: Resource, namespace: str | None = None,
            label_selector: str | None = None, field_selector: str | None = None,
            indexers: dict[str, IndexFunc] | None = None) -> Informer:
        key = (resource, namespace, label_selector, field_selector)
        informer = self._informers.get(key)
        if informer is None:
            informer = Informer(self.client, resource, namespace=namespace,
                                label_selector=label_selector, field_selector=field_selector,
                                resync_period=self.resync_period)
            self._informers[key] = informer
            if self._started:
                informer.start()
        for name, func in (indexers or {}).items():
            informer.add_indexer(name, func)
        return informer

    def start(self) -> None:
        self._started = True
        for informer in self._informers.values():
            informer.start()

    def stop(self) -> None:
        for informer in self._informers.values():
            informer.stop()

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())
