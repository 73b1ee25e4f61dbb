"""The EndpointSlice mirror controller: one mirror per default slice, kept exact.

Keys are source slices (``namespace/name`` of a default slice).  Every event
that could change a mirror enqueues its source's key: the source itself, a
mirror (under the source it names), a pod whose addresses changed (under
every source that lists it), and a change of the set of networks (every
source, so a namespace that gains its primary UDN gets its mirrors).  The
reconcile reads the caches and converges: create, update or delete one
mirror, collapse duplicates, remove mirrors whose source is gone or became
FQDN.  The first pass over all sources, before the workers start, is the
startup repair.

A pod endpoint whose primary-network address is not known yet fails the
reconcile; it is retried with growing delays and, after ``MAX_RETRIES``
attempts, reported as a Warning event on the source slice (and retried slowly
from then on).  Nothing is ever published with a wrong address.
"""

from __future__ import annotations

import logging
import threading

from ovnk_core.annotations import pod_networks
from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.errors import NotReady, TemporaryError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.events import WARNING
from ovnk_core.kube.resources import ENDPOINTSLICES, PODS, split_key
from ovnk_core.kube.writes import RecentWrites
from ovnk_mirror import mirror

log = logging.getLogger(__name__)

CONTROLLER_NAME = "endpointslice-mirror-controller"
MAX_RETRIES = 10
FAILED_REASON = "EndpointSliceMirrorFailed"
MIRROR_SOURCE_INDEX = "mirror-source"
TARGET_POD_INDEX = "target-pod"


def index_mirror_source(slice_: JSON) -> list[str]:
    """Mirrors, by the key of the source they name."""
    key = mirror.source_key(slice_)
    return [key] if key is not None and mirror.is_mirror(slice_) else []


def index_target_pods(slice_: JSON) -> list[str]:
    """Default slices, by the ``namespace/name`` of every pod they list."""
    if not mirror.is_source(slice_):
        return []
    namespace = slice_.get("metadata", {}).get("namespace")
    pods = set()
    for endpoint in slice_.get("endpoints") or []:
        target = endpoint.get("targetRef") or {}
        if target.get("kind") == "Pod" and target.get("name"):
            pods.add(f"{target.get('namespace') or namespace}/{target['name']}")
    return sorted(pods)


def pod_addresses(pod: JSON | None) -> tuple[object, ...] | None:
    """What of a pod a mirror depends on."""
    if pod is None:
        return None
    annotations = pod.get("metadata", {}).get("annotations") or {}
    status = pod.get("status") or {}
    return (annotations.get(pod_networks.POD_NETWORKS_ANNOTATION), bool(
        (pod.get("spec") or {}).get("hostNetwork")), repr(status.get("podIPs")))


class PodAddressCache:
    """Each pod's mirror address per (NAD, family), parsed once per pod version.

    A large service's reconcile looks up every endpoint's pod; parsing the same
    annotations again for every change of the slice would dominate its cost.
    """

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str, dict[tuple[str, bool], str]]] = {}
        self._lock = threading.Lock()

    def address(self, pod_key: str, pod: JSON, nad_key: str, ipv6: bool) -> str:
        version = str(pod.get("metadata", {}).get("resourceVersion", ""))
        with self._lock:
            entry = self._entries.get(pod_key)
            if entry is None or entry[0] != version:
                entry = self._entries[pod_key] = (version, {})
            found = entry[1].get((nad_key, ipv6))
        if found is None:
            found = mirror.pod_address(pod, nad_key, ipv6)
            with self._lock:
                entry[1][(nad_key, ipv6)] = found
        return found

    def forget(self, _event: str, old: JSON | None, new: JSON | None) -> None:
        """Informer handler: drop deleted pods."""
        if new is None and old is not None:
            meta = old.get("metadata", {})
            with self._lock:
                self._entries.pop(f"{meta.get('namespace')}/{meta.get('name')}", None)


class EndpointSliceMirror:
    """Keeps one mirrored EndpointSlice per default slice in primary-UDN namespaces."""

    def __init__(self, context: ClusterManagerContext, workers: int = 2) -> None:
        self.context = context
        self.client = context.client
        self.slices = context.informers.get(ENDPOINTSLICES, indexers={
            MIRROR_SOURCE_INDEX: index_mirror_source, TARGET_POD_INDEX: index_target_pods})
        self.pods = context.informers.get(PODS)
        self.writes = RecentWrites()
        self._addresses = PodAddressCache()
        self.controller = Controller(CONTROLLER_NAME, self.reconcile, workers=workers,
                                     max_failures=MAX_RETRIES, on_error=self._report,
                                     initial_sync=self.enqueue_all)
        self.slices.add_handler(self.writes.observe)
        self.pods.add_handler(self._addresses.forget)
        self.controller.watch(self.slices, key_func=self._keys_of_slice)
        self.controller.watch(self.pods, key_func=self._keys_of_pod,
                              relevant=lambda old, new: pod_addresses(old) != pod_addresses(new))
        context.on_networks_changed(lambda _network: self.enqueue_all())

    # -- what to reconcile -------------------------------------------------------------------
    @staticmethod
    def _keys_of_slice(slice_: JSON) -> list[str]:
        key = mirror.source_key(slice_)
        return [key] if key is not None else []

    def _keys_of_pod(self, pod: JSON) -> list[str]:
        meta = pod.get("metadata", {})
        return self.slices.keys_by_index(TARGET_POD_INDEX,
                                         f"{meta.get('namespace')}/{meta.get('name')}")

    def enqueue_all(self) -> None:
        """Every source and every mirror's source: the startup repair, and network changes."""
        for cached in self.slices.list_keys():
            slice_ = self.slices.peek(cached)
            for key in self._keys_of_slice(slice_) if slice_ is not None else []:
                self.controller.queue.add(key)

    # -- reconcile ---------------------------------------------------------------------------
    def mirrors_of(self, key: str) -> list[JSON]:
        """The mirrors of source ``key``: the cache, with this controller's own recent writes.

        Cached objects are shared, not copied: read them only.
        """
        return self.writes.overlay(
            self.slices.peek_by_index(MIRROR_SOURCE_INDEX, key),
            belongs=lambda obj: mirror.is_mirror(obj) and mirror.source_key(obj) == key,
            lookup=self.slices.peek)

    def reconcile(self, key: str) -> None:
        namespace, _name = split_key(key)
        assert namespace is not None
        primary = self.context.primary_network_of_namespace(namespace)
        if primary is None:
            return  # default network: its slices are the right ones; mirrors are left alone
        nad_key, netinfo = primary
        source = self.slices.peek(key)  # read-only from here on
        if source is not None and not mirror.is_source(source):
            source = None
        mirrors = self.mirrors_of(key)
        if len(mirrors) > 1:
            for extra in mirrors:
                self._delete(extra)
            raise TemporaryError(
                f"found and removed {len(mirrors)} mirrored EndpointSlices for {key}")
        existing = mirrors[0] if mirrors else None
        if source is None or source.get("addressType") == "FQDN":
            if existing is not None:
                log.info("mirror %s/%s: source %s is %s; deleting it", namespace,
                         existing["metadata"]["name"], key,
                         "gone" if source is None else "of type FQDN")
                self._delete(existing)
            return
        if existing is not None and mirror.is_current(existing, source, netinfo.name):
            return
        try:
            desired = mirror.build_mirror(
                source, existing, netinfo.name,
                lambda target, ipv6: self._address(target, namespace, nad_key, ipv6))
        except mirror.EndpointAddressError as exc:
            raise TemporaryError(f"EndpointSlice {key}: {exc}") from None
        if existing is None:
            if not desired["endpoints"]:
                return  # an empty mirror is not created (an existing one is emptied)
            created = self.client.create(ENDPOINTSLICES, desired, namespace)
            self.writes.wrote(created)
            log.info("mirror %s/%s created for %s in network %s", namespace,
                     created["metadata"]["name"], key, netinfo.name)
            return
        if mirror.mirrored_content(desired) == mirror.mirrored_content(existing):
            return
        try:
            updated = self.client.update(ENDPOINTSLICES, desired)
        except (Conflict, NotFound):
            raise NotReady(f"mirror of {key} changed meanwhile", delay=0.1) from None
        self.writes.wrote(updated)
        log.info("mirror %s/%s updated for %s (source version %s)", namespace,
                 updated["metadata"]["name"], key, source["metadata"].get("resourceVersion"))

    def _address(self, target: JSON, namespace: str, nad_key: str, ipv6: bool) -> str:
        pod_key = f"{target.get('namespace') or namespace}/{target.get('name')}"
        pod = self.pods.peek(pod_key)
        if pod is None:
            raise mirror.EndpointAddressError(f"pod {pod_key} not found")
        return self._addresses.address(pod_key, pod, nad_key, ipv6)

    def _delete(self, slice_: JSON) -> None:
        meta = slice_["metadata"]
        self.client.delete_if_exists(ENDPOINTSLICES, meta["name"], meta.get("namespace"))
        self.writes.deleted(slice_)

    def _report(self, key: str, error: BaseException, _kind: str) -> None:
        source = self.slices.peek(key)
        if source is not None:
            self.context.recorder.event(source, WARNING, FAILED_REASON,
                                        f"mirroring into the primary network failed: {error}")
