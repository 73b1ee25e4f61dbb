"""The cluster manager's NAD controller: networks from NADs, and their network IDs.

Keys are network names.  For one network the controller parses every NAD
that names it (through the topology plugins, so third-party topologies work
the same way), keeps the agreeing ones in the registry, and writes the
network's identity onto each of them: ``k8s.ovn.org/network-id``,
``k8s.ovn.org/network-name`` and ``k8s.ovn.org/tunnel-keys``.

IDs are never recomputed: before the workers start, every ID already
annotated on a NAD is reserved again (the initial sync), so a restart gives
each network the ID it had.  The controller is also the allocators'
``NetworkCatalog``: it is synced once every network of the NAD informer's
first list has been reconciled, and a network exists while a NAD that is not
being deleted names it.  A NAD that cannot be parsed, or that disagrees
with the network's other NADs, gets a Warning event and is left out; it never
blocks other NADs, other networks or startup.  A primary NAD in a namespace
that already has another network's primary NAD is refused, and a NAD that
names no network because its config is broken is reported too
(``nad_checks``).  An ID is released when no NAD
names its network any more — not when the plugin of its topology is left out
or uninstalled: a network whose accepted NADs name a topology no loaded plugin
provides keeps its ID, with a Warning ``NetworkNotRendered`` on its NADs, until
they are deleted (``unrendered_networks``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Protocol

from ovnk_core.allocators.tunnel_keys import TunnelKeyAllocator
from ovnk_core.annotations.network_id import (
    NETWORK_ID_ANNOTATION,
    NETWORK_NAME_ANNOTATION,
    annotated_id,
)
from ovnk_core.annotations.network_id import build as network_id_annotations
from ovnk_core.annotations.tunnel_keys import TUNNEL_KEYS_ANNOTATION, annotated_tunnel_keys
from ovnk_core.annotations.tunnel_keys import serialize as serialize_tunnel_keys
from ovnk_core.clustermanager.nad_checks import (
    PRIMARY_CONFLICT_REASON,
    UnnamedNadReporter,
    primary_conflict,
    primary_network_of,
    primary_networks_in_namespace,
)
from ovnk_core.clustermanager.unrendered_networks import (
    held_nads,
    owned_by_udn,
    unrendered_message,
)
from ovnk_core.errors import NetworkConfigError, NotReady, PermanentError, TopologyNotSupported
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.informer import index_by_namespace
from ovnk_core.kube.resources import NADS, object_key
from ovnk_core.networks import definition
from ovnk_core.networks.nad_config import nad_network_name
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.registry import NetworkEntry, NetworkRegistry, comparable
from ovnk_core.networks.rendering import REASON as NOT_RENDERED_REASON
from ovnk_core.plugins import PluginHost

log = logging.getLogger(__name__)


class NetworkIds(Protocol):
    """The allocator interface this controller needs (``ovnk_core.allocators.ids``)."""

    def allocate(self, owner: str) -> int: ...

    def reserve(self, owner: str, value: int) -> None: ...

    def release(self, owner: str) -> int | None: ...

    def get(self, owner: str) -> int | None: ...


class NadController:
    def __init__(self, client: KubeClient, informers: InformerFactory, host: PluginHost,
                 recorder: EventRecorder, registry: NetworkRegistry, ids: NetworkIds,
                 tunnel_keys: TunnelKeyAllocator) -> None:
        self.client = client
        self.host = host
        self.recorder = recorder
        self.registry = registry
        self.ids = ids
        self.tunnel_keys = tunnel_keys
        self.nads = informers.get(NADS, indexers={"network": nad_network_name,
                                                  "namespace": index_by_namespace})
        self.controller = Controller("cluster-manager-nad-controller", self.reconcile,
                                     initial_sync=self.sync)
        self.controller.watch(self.nads, key_func=self._keys_of_nad)
        self.unnamed = UnnamedNadReporter(self.nads, recorder, nad_network_name)
        self._reported: dict[str, str] = {}
        self.listeners: list[Callable[[str], None]] = []  # called with a network that changed
        self._existing: set[str] = set()  # networks a live NAD named at their last reconcile
        self._unsynced: set[str] = set()  # networks of the first list not reconciled yet
        self._synced = threading.Event()
        self._sync_lock = threading.Lock()

    # -- the allocators' NetworkCatalog ------------------------------------------------------
    def wait_synced(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def networks_left(self) -> int:
        with self._sync_lock:
            return len(self._unsynced)

    def network_exists(self, network: str) -> bool:
        return any(not nad["metadata"].get("deletionTimestamp")
                   for nad in self.nads.peek_by_index("network", network))

    def _reconciled_once(self, network: str) -> None:
        with self._sync_lock:
            self._unsynced.discard(network)
            if not self._unsynced and not self._synced.is_set():
                self._synced.set()
                log.info("NAD controller: every existing network registered")

    def sync(self) -> None:
        """Reserve every network ID already written on NADs (before any allocation).

        The oldest NAD carrying a network's ID gives it (as ``networks.definition`` orders
        them): a newer NAD with a forged or stale ID cannot take the network's ID away.
        """
        nads = [nad for nad in (self.nads.peek(key) for key in self.nads.list_keys())
                if nad is not None]
        for nad in sorted(nads, key=definition.age):
            names = nad_network_name(nad)
            network_id = definition.accepted_id(nad, names[0]) if names else None
            if not names or network_id is None or self.ids.get(names[0]) is not None:
                continue
            try:
                self.ids.reserve(names[0], network_id)
                self.tunnel_keys.reserve(names[0], annotated_tunnel_keys(nad))
            except ValueError as exc:
                log.warning("NAD %s: annotated network ID %d not reused: %s",
                            object_key(nad), network_id, exc)
        existing = {n for nad in nads for n in nad_network_name(nad)}
        with self._sync_lock:
            self._unsynced = set(existing)
        for name in existing:
            self.controller.queue.add(name)
        if not existing:
            self._reconciled_once("")

    def _parse(self, nad: JSON) -> NetInfo | None:
        """The NAD's network, or ``None`` (reported on the NAD) when it is invalid.

        :raises TopologyNotSupported: no loaded plugin provides its topology; the caller
            decides what to report (``unrendered_networks``).
        """
        key = object_key(nad)
        try:
            netinfo = self.host.parse_netconf(nad["spec"]["config"])
        except TopologyNotSupported:
            raise
        except NetworkConfigError as exc:
            self._report(nad, exc.reason, f"NAD {key} is invalid: {exc}")
            return None
        if netinfo.nad_key and netinfo.nad_key != key:
            self._report(nad, "InvalidNetworkConfig", f"NAD {key}: netAttachDefName "
                                                      f"{netinfo.nad_key} does not match")
            return None
        return netinfo

    def _report(self, nad: JSON, reason: str, message: str) -> None:
        key = object_key(nad)
        if self._reported.get(key) == message:
            return
        self._reported[key] = message
        log.warning("%s", message)
        self.recorder.event(nad, WARNING, reason, message)

    def reconcile(self, network: str) -> None:
        before = self._snapshot(network)
        try:
            self._reconcile(network)
        finally:
            exists = self.network_exists(network)
            existence_changed = exists != (network in self._existing)
            if exists:
                self._existing.add(network)
            else:
                self._existing.discard(network)
            # listeners also hear of networks the registry never described (invalid NADs)
            # appearing or going away: allocators keep or free their slices on that
            if existence_changed or self._snapshot(network) != before:
                for listener in self.listeners:
                    listener(network)
            self._reconciled_once(network)

    def _snapshot(self, network: str) -> tuple[object, ...] | None:
        entry = self.registry.get(network)
        return None if entry is None else (entry.netinfo, entry.network_id,
                                           frozenset(entry.nads))

    def _reconcile(self, network: str) -> None:
        nads = sorted(self.nads.by_index("network", network), key=object_key)
        previous = self.registry.get(network)
        candidates: list[tuple[JSON, NetInfo]] = []
        unloaded: list[tuple[JSON, TopologyNotSupported]] = []  # no plugin for its topology
        for nad in nads:
            if nad["metadata"].get("deletionTimestamp"):
                continue
            try:
                netinfo = self._parse(nad)
            except TopologyNotSupported as exc:
                unloaded.append((nad, exc))
                continue
            if netinfo is not None and netinfo.is_primary:
                conflict = primary_conflict(
                    nad, network, self.nads.peek_by_index("namespace", nad["metadata"][
                        "namespace"]), self._established)
                if conflict:
                    self._report(nad, PRIMARY_CONFLICT_REASON, conflict)
                    netinfo = None
            if netinfo is not None:
                candidates.append((nad, netinfo))
        # One definition wins, by the rule every component applies (networks.definition).
        decision = definition.decide(
            network, candidates, lambda a, b: comparable(a) == comparable(b),
            holding=previous.netinfo if previous is not None else None)
        accepted = [(nad, netinfo) for nad, netinfo in candidates
                    if object_key(nad) in decision.accepted]
        self._register(network, previous, accepted)
        for nad, _ in candidates:
            if object_key(nad) in decision.conflicting:
                self._report(nad, definition.CONFLICT_REASON,
                             definition.conflict_message(object_key(nad), network))
                self._strip(nad, network)
        for nad, _ in accepted:
            self._reported.pop(object_key(nad), None)
        held = held_nads(network, unloaded) if not accepted else []
        for nad, unsupported in unloaded:
            if not any(nad is other for other, _ in held):
                self._report(nad, unsupported.reason,
                             f"NAD {object_key(nad)} is invalid: {unsupported}")
        if held and self._hold(network, held):
            return
        if not accepted:
            if self.ids.get(network) is not None:
                self.ids.release(network)
                self.tunnel_keys.release(network)
                log.info("network %s: no NAD left, network ID released", network)
            return
        network_id = self._network_id(network, [nad for nad, _ in accepted])
        if accepted[0][1].is_primary:
            self._check_masquerade_room(network, network_id, [nad for nad, _ in accepted])
        entry = self.registry.get(network)
        if entry is not None:
            entry.network_id = network_id
        keys = self.tunnel_keys.annotation_keys(accepted[0][1], network_id)
        wanted = {**network_id_annotations(network_id, network),
                  TUNNEL_KEYS_ANNOTATION: serialize_tunnel_keys(keys)}
        for nad, _ in accepted:
            self._annotate(nad, wanted)

    def _hold(self, network: str, held: list[tuple[JSON, TopologyNotSupported]]) -> bool:
        """Keep the ID of a network whose accepted NADs name a topology no loaded plugin
        provides (``held``, oldest first) and say why it is not rendered; False when its ID
        cannot be kept (another network was given it meanwhile: reported on the NADs)."""
        defining, exc = held[0]
        if self.ids.get(network) is None:
            network_id = definition.accepted_id(defining, network)
            assert network_id is not None  # held NADs carry the network's ID
            try:
                self.ids.reserve(network, network_id)
                self.tunnel_keys.reserve(network, annotated_tunnel_keys(defining))
            except ValueError as error:
                for nad, _ in held:
                    self._report(nad, exc.reason, f"NAD {object_key(nad)} is invalid: {exc}; "
                                                  f"its network ID is lost: {error}")
                return False
        message = unrendered_message(network, exc.topology, self.host.topologies)
        for nad, _ in held:
            if owned_by_udn(nad):
                self._reported.pop(object_key(nad), None)  # its UDN/CUDN's controller says it
            else:
                self._report(nad, NOT_RENDERED_REASON, message)
        log.debug("network %s: topology %r not loaded; network ID %s kept until its NADs "
                  "are deleted", network, exc.topology, self.ids.get(network))
        return True

    def _register(self, network: str, previous: NetworkEntry | None,
                  accepted: list[tuple[JSON, NetInfo]]) -> None:
        """Make the registry describe ``network`` by its accepted NADs only."""
        keep = {object_key(nad) for nad, _ in accepted}
        if previous is not None and accepted and \
                comparable(previous.netinfo) != comparable(accepted[0][1]):
            keep = set()  # a new definition: it replaces the old one whole
        for key in (previous.nads if previous else set()) - keep:
            self.registry.remove_nad(key)
        for nad, netinfo in accepted:
            self.registry.set_nad(object_key(nad), netinfo)

    def _strip(self, nad: JSON, network: str) -> None:
        """Remove the network's identity from a NAD it does not accept (written when it was
        accepted before, or by someone else): the zone and the nodes read it as acceptance."""
        annotations = nad["metadata"].get("annotations") or {}
        if not any(key in annotations for key in (NETWORK_ID_ANNOTATION, NETWORK_NAME_ANNOTATION,
                                                  TUNNEL_KEYS_ANNOTATION)):
            return
        if self._patch_annotations(nad, {NETWORK_ID_ANNOTATION: None,
                                         NETWORK_NAME_ANNOTATION: None,
                                         TUNNEL_KEYS_ANNOTATION: None}):
            log.info("NAD %s: not part of network %s, its network ID annotations removed",
                     object_key(nad), network)

    def _patch_annotations(self, nad: JSON, annotations: dict[str, str | None]) -> bool:
        """Merge ``annotations`` (None removes) into the NAD as of the version read; False
        when it is gone.  A NAD changed meanwhile is retried soon with its new version."""
        meta = nad["metadata"]
        patch = {"metadata": {"annotations": annotations,
                              "resourceVersion": meta.get("resourceVersion")}}
        try:
            self.client.patch(NADS, meta["name"], patch, meta["namespace"])
        except NotFound:
            return False
        except Conflict:
            raise NotReady(f"NAD {object_key(nad)} changed meanwhile", delay=0.1) from None
        return True

    def _network_id(self, network: str, nads: list[JSON]) -> int:
        current = self.ids.get(network)
        if current is not None:
            return current
        for nad in nads:
            candidate = annotated_id(nad)
            if candidate is None:
                continue
            try:
                self.ids.reserve(network, candidate)
                return candidate
            except ValueError:
                continue  # taken by another network meanwhile: allocate a fresh one
        try:
            return self.ids.allocate(network)
        except ValueError as exc:
            for nad in nads:
                self._report(nad, "NetworkIDAllocationFailed", str(exc))
            raise PermanentError(f"network {network}: {exc}") from None

    def _check_masquerade_room(self, network: str, network_id: int, nads: list[JSON]) -> None:
        """A primary network needs two masquerade IPs derived from its ID."""
        config = self.host.config
        for version in sorted(config.ip_families):
            capacity = config.masquerade_network_capacity(version)
            if network_id > capacity:
                subnet = config.masquerade_subnet(version)
                message = (f"network {network}: network ID {network_id} does not fit the "
                           f"masquerade subnet {subnet}, which has room for {capacity} "
                           f"networks; use a larger --gateway-v{version}-masquerade-subnet")
                for nad in nads:
                    self._report(nad, "NetworkIDAllocationFailed", message)
                raise PermanentError(message)

    def _annotate(self, nad: JSON, wanted: dict[str, str]) -> None:
        current = nad["metadata"].get("annotations") or {}
        if all(current.get(k) == v for k, v in wanted.items()):
            return
        if self._patch_annotations(nad, dict(wanted)):
            log.info("NAD %s: network %s has ID %s", object_key(nad),
                     wanted[NETWORK_NAME_ANNOTATION], wanted[NETWORK_ID_ANNOTATION])

    def _keys_of_nad(self, nad: JSON) -> list[str]:
        """A NAD's network, and for a primary NAD the networks of its namespace's other
        primary NADs (one of them may have waited for this one to go)."""
        keys = nad_network_name(nad)
        if keys and primary_network_of(nad) is not None:
            keys += primary_networks_in_namespace(self.nads.peek_by_index(
                "namespace", nad["metadata"]["namespace"]))
        return keys

    def _established(self, nad: JSON) -> bool:
        """Whether a NAD holds its place: accepted, or annotated with the network ID it was
        given (before a restart; IDs are written on accepted NADs only)."""
        return self.registry.network_of_nad(object_key(nad)) is not None or \
            annotated_id(nad) is not None

    def start(self) -> None:
        self.controller.start()
        self.unnamed.start()

    def stop(self) -> None:
        self.unnamed.stop()
        self.controller.stop()
