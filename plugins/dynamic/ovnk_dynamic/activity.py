"""Dynamic UDN node allocation (OKEP-5552): a UDN is active only where it is used.

A network defined only by NADs that a UserDefinedNetwork or ClusterUserDefinedNetwork
owns (``nadRequiresDynamicFiltering`` upstream) is active on a node while an object there
references one of its NADs (the core's ``NadReferences``: pods now); a network with any
standalone NAD, and the default network, are active everywhere.  A node that stops using
a network keeps it for ``--udn-deletion-grace-period`` (a new reference in that time
cancels the removal); with a grace of 0 it goes at once.  What a component found rendered
when it started (``assume_active``) is kept for a grace period too, so a restart neither
loses nor leaks a node's parts.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ovnk_core.kube.client import JSON
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import NADS, PODS, object_key
from ovnk_core.networks.activity import ActivityListener
from ovnk_core.networks.nad_config import nad_network_name, network_name
from ovnk_core.pods.nad_references import NadReferences, PodNadReferences

log = logging.getLogger(__name__)

OWNER_KINDS = frozenset({"UserDefinedNetwork", "ClusterUserDefinedNetwork"})
Timer = Callable[[float, Callable[[], None]], Any]  # (delay, function) -> started timer


def requires_filtering(nad: JSON) -> bool:
    """Whether a NAD belongs to a UDN/CUDN (its controller owner), so its network is
    rendered only where used."""
    return any(ref.get("controller") and ref.get("kind") in OWNER_KINDS
               for ref in (nad.get("metadata") or {}).get("ownerReferences") or [])


def _start_timer(delay: float, function: Callable[[], None]) -> threading.Timer:
    timer = threading.Timer(delay, function)
    timer.daemon = True
    timer.start()
    return timer


class DynamicActivity:
    """``NetworkActivity`` of dynamic allocation, over the process's informers."""

    def __init__(self, informers: InformerFactory, grace_period: float,
                 timer: Timer = _start_timer) -> None:
        self.grace = grace_period
        self._timer = timer
        self.nads = informers.get(NADS)
        self.nads.add_indexer("network", nad_network_name)
        self.references = NadReferences()
        self.pods = PodNadReferences(informers.get(PODS), self.nads, self.references)
        self.references.add_listener(self._on_reference)
        self.nads.add_handler(self._on_nad)
        self._lock = threading.Lock()
        self._active: dict[str, set[str]] = {}  # network → nodes (in grace included)
        self._leaving: dict[tuple[str, str], Any] = {}  # (network, node) → its timer
        self._listeners: list[ActivityListener] = []

    # -- NetworkActivity ---------------------------------------------------------------------
    def is_active(self, network: str, node: str) -> bool:
        if not self._filtered(network):
            return True
        with self._lock:
            return node in self._active.get(network, ())

    def active_nodes(self, network: str) -> frozenset[str] | None:
        if not self._filtered(network):
            return None
        with self._lock:
            return frozenset(self._active.get(network, ()))

    def add_listener(self, listener: ActivityListener) -> None:
        self._listeners.append(listener)

    def assume_active(self, network: str, node: str) -> None:
        with self._lock:
            if node in self._active.get(network, ()):
                return
            self._active.setdefault(network, set()).add(node)
        self._reevaluate(network, node)  # unused: it leaves after the grace period

    def start(self) -> None:
        self.pods.resync()

    def stop(self) -> None:
        with self._lock:
            timers = list(self._leaving.values())
            self._leaving.clear()
        for timer in timers:
            timer.cancel()

    # -- what is used where ------------------------------------------------------------------
    def _filtered(self, network: str) -> bool:
        nads = self.nads.peek_by_index("network", network)
        return bool(nads) and all(requires_filtering(nad) for nad in nads)

    def _used(self, network: str, node: str) -> bool:
        return any(self.references.referenced(node, object_key(nad))
                   for nad in self.nads.peek_by_index("network", network))

    def _on_reference(self, node: str, nad_key: str, _referenced: bool) -> None:
        nad = self.nads.peek(nad_key)
        network = network_name(nad) if nad is not None else None
        if network:
            self._reevaluate(network, node)

    def _on_nad(self, _event: str, old: JSON | None, new: JSON | None) -> None:
        nads: list[JSON] = [nad for nad in (old, new) if nad is not None]
        for nad in nads:
            network = network_name(nad)
            if not network:
                continue
            for node in self.references.nodes_of(object_key(nad)):
                self._reevaluate(network, node)
            self._tell(network, "")  # its filtering may have changed

    def _reevaluate(self, network: str, node: str) -> None:
        used = self._used(network, node)
        changed = False
        with self._lock:
            active = self._active.setdefault(network, set())
            leaving = self._leaving.pop((network, node), None)
            if used:
                if node not in active:
                    active.add(node)
                    changed = True
            elif node in active:
                if self.grace <= 0:
                    active.discard(node)
                    changed = True
                else:  # (re)start its grace period
                    self._leaving[(network, node)] = self._timer(
                        self.grace, lambda: self._expire(network, node))
            if not active:
                self._active.pop(network, None)
        if leaving is not None:
            leaving.cancel()
        if changed:
            log.info("network %s %s on node %s", network,
                     "activated" if used else "deactivated", node)
            self._tell(network, node)

    def _expire(self, network: str, node: str) -> None:
        with self._lock:
            if (network, node) not in self._leaving:
                return  # cancelled meanwhile
            del self._leaving[(network, node)]
        if self._used(network, node):
            return
        with self._lock:
            nodes = self._active.get(network)
            if nodes is None or node not in nodes:
                return
            nodes.discard(node)
            if not nodes:
                del self._active[network]
        log.info("network %s deactivated on node %s (grace period over)", network, node)
        self._tell(network, node)

    def _tell(self, network: str, node: str) -> None:
        for listener in list(self._listeners):
            listener(network, node)
