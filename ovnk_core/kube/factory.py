"""One informer per resource per process, shared by every controller that needs it.

Several controllers watch pods, namespaces or NADs; each watching on its own
would multiply API traffic and memory.  The factory hands out the same
informer for the same (resource, namespace, selectors) and starts them
together; indexes requested by different controllers are all added to it.
"""

from __future__ import annotations

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.informer import (
    IndexFunc,
    Informer,
    UndecodableReporter,
    wait_for_informers,
)
from ovnk_core.kube.resources import Resource


class InformerFactory:
    """Shared informers of one process.

    :param resync_period: seconds between re-announcements of every cached object; 0 (the
        default, as upstream's informer factory) never: controllers are level-driven and
        retry by themselves, and a periodic resync costs work in proportion to the cluster
        (every network on every node, every pod) at once.
    :param on_undecodable: how every informer reports an object it cannot decode
        (``events.undecodable_reporter``: a Warning event on it); default: a log line.
    """

    def __init__(self, client: KubeClient, resync_period: float = 0.0,
                 on_undecodable: UndecodableReporter | None = None) -> None:
        self.client = client
        self.resync_period = resync_period
        self.on_undecodable = on_undecodable
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
                                resync_period=self.resync_period,
                                on_undecodable=self.on_undecodable)
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

    def wait_for_sync(self, timeout: float) -> None:
        """Block until every informer has synced.

        :raises InformersNotSynced: some did not within ``timeout`` seconds (the message
            names them and their last error): a process should exit, so that its
            supervisor restarts it, rather than run controllers that never start.
        """
        wait_for_informers(self._informers.values(), timeout)

    @property
    def informers(self) -> list[Informer]:
        return list(self._informers.values())
