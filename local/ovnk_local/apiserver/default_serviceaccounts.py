"""Every namespace has a ``default`` ServiceAccount (kube-controller-manager's serviceaccounts
controller).

Clients expect it: a pod without ``serviceAccountName`` runs as ``default``,
and tools create tokens for it.  A namespace gets it when it is created (and
every namespace at server start), and gets it back when it is deleted; a
namespace being deleted does not (its content is going).  Store events only
queue the namespace's name; a worker creates what is missing, as the server
itself.  The account is a plain one: it holds no rights beyond those of
``system:serviceaccounts`` and ``system:authenticated``, and its tokens
(``TokenRequest``) are bound to its uid, so a deleted and re-created
``default`` does not accept the old account's tokens.
"""

from __future__ import annotations

import logging
import threading

from ovnk_local.apiserver.errors import ApiStatusError
from ovnk_local.apiserver.gc import NAMESPACES
from ovnk_local.apiserver.resources import ResourceRegistry
from ovnk_local.apiserver.rest import Api, WriteOptions
from ovnk_local.apiserver.store import DELETED, Event, Store

log = logging.getLogger(__name__)
SERVICE_ACCOUNTS = "/serviceaccounts"
DEFAULT = "default"


class DefaultServiceAccounts:
    """Keeps ``default`` in every active namespace; ``start()``/``stop()`` its worker."""

    def __init__(self, store: Store, api: Api, registry: ResourceRegistry) -> None:
        self.store = store
        self.api = api
        self.registry = registry
        self._pending: set[str] = set()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="default-serviceaccounts",
                                        daemon=True)
        store.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        """Called under the store lock: queue the namespace concerned, nothing more."""
        if event.storage == NAMESPACES and event.type != DELETED:
            self._queue(str(event.obj["metadata"].get("name") or ""))
        elif event.storage == SERVICE_ACCOUNTS and event.type == DELETED \
                and event.obj["metadata"].get("name") == DEFAULT:
            self._queue(event.namespace)

    def _queue(self, namespace: str) -> None:
        with self._cond:
            self._pending.add(namespace)
            self._cond.notify()

    def start(self) -> None:
        """Give every existing namespace its account, then follow the store."""
        for namespace in self.store.objects(NAMESPACES)[0]:
            self._queue(str(namespace["metadata"]["name"]))
        self._drain()
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
            self._drain()

    def _drain(self) -> None:
        while True:
            with self._cond:
                if not self._pending:
                    return
                namespace = self._pending.pop()
            try:
                self.ensure(namespace)
            except Exception:  # one namespace must not stop the others; its next event retries
                log.exception("default service account of namespace %s", namespace)

    def ensure(self, namespace: str) -> bool:
        """Create ``default`` in ``namespace`` when it is missing and the namespace is active;
        returns whether it was created."""
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None or ns["metadata"].get("deletionTimestamp") \
                or self.store.get(SERVICE_ACCOUNTS, namespace, DEFAULT) is not None:
            return False
        rt = self.registry.storage_type(SERVICE_ACCOUNTS)
        if rt is None:
            return False
        try:
            self.api.create(rt, namespace, {"metadata": {"name": DEFAULT}}, WriteOptions())
        except ApiStatusError as exc:  # created meanwhile, or the namespace started going
            log.info("default service account of namespace %s: %s", namespace, exc.message)
            return False
        return True


__all__ = ["DefaultServiceAccounts"]
