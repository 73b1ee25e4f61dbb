"""The network registry: which networks exist, built from NetworkAttachmentDefinitions.

Several NADs may describe one network (a CUDN renders one per namespace);
they must agree.  The registry keeps, per network name, the agreed
``NetInfo``, the NADs that carry it, and the primary network of each
namespace.  It is pure bookkeeping, fed by the NAD controller and read by
every other controller.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace

from ovnk_core.networks.netinfo import NetInfo


@dataclass
class NetworkEntry:
    netinfo: NetInfo
    nads: set[str] = field(default_factory=set)
    network_id: int | None = None


class ConflictingNetworkError(ValueError):
    """A NAD describes an already known network differently."""


def comparable(netinfo: NetInfo) -> NetInfo:
    """The parts that must be equal across the NADs of one network."""
    return replace(netinfo, nad_key="")


def _namespace_of(nad_key: str) -> str:
    return nad_key.split("/", 1)[0]


class NetworkRegistry:
    def __init__(self) -> None:
        self._networks: dict[str, NetworkEntry] = {}
        self._nad_network: dict[str, str] = {}
        self._nads_by_namespace: dict[str, set[str]] = {}  # index: pod events ask per namespace
        self._lock = threading.RLock()

    def set_nad(self, nad_key: str, netinfo: NetInfo) -> NetworkEntry:
        """Record that ``nad_key`` describes ``netinfo``.

        :raises ConflictingNetworkError: another NAD already describes this network
            differently (upstream's message).
        """
        with self._lock:
            previous = self._nad_network.get(nad_key)
            entry = self._networks.get(netinfo.name)
            if entry is not None and comparable(entry.netinfo) != comparable(netinfo):
                others = entry.nads - {nad_key}
                if others:
                    raise ConflictingNetworkError(
                        f"NAD {nad_key} CNI config does not match that of network "
                        f"{netinfo.name}")
                entry.netinfo = netinfo
            if previous is not None and previous != netinfo.name:
                self.remove_nad(nad_key)
            if entry is None:
                entry = self._networks[netinfo.name] = NetworkEntry(netinfo)
            entry.nads.add(nad_key)
            self._nad_network[nad_key] = netinfo.name
            self._nads_by_namespace.setdefault(_namespace_of(nad_key), set()).add(nad_key)
            return entry

    def remove_nad(self, nad_key: str) -> str | None:
        """Forget ``nad_key``; returns the network name if that was its last NAD."""
        with self._lock:
            name = self._nad_network.pop(nad_key, None)
            if name is None:
                return None
            in_namespace = self._nads_by_namespace.get(_namespace_of(nad_key))
            if in_namespace is not None:
                in_namespace.discard(nad_key)
                if not in_namespace:
                    del self._nads_by_namespace[_namespace_of(nad_key)]
            entry = self._networks.get(name)
            if entry is None:
                return None
            entry.nads.discard(nad_key)
            if not entry.nads:
                del self._networks[name]
                return name
            return None

    def get(self, network_name: str) -> NetworkEntry | None:
        with self._lock:
            return self._networks.get(network_name)

    def nads_of(self, network_name: str) -> frozenset[str]:
        """The NADs that describe ``network_name`` (empty when it is not known)."""
        with self._lock:
            entry = self._networks.get(network_name)
            return frozenset(entry.nads) if entry is not None else frozenset()

    def network_of_nad(self, nad_key: str) -> str | None:
        with self._lock:
            return self._nad_network.get(nad_key)

    def networks(self) -> dict[str, NetworkEntry]:
        with self._lock:
            return dict(self._networks)

    def primary_nad_for_namespace(self, namespace: str) -> str | None:
        """The namespace's NAD of a primary network (its own NADs only: an index, no scan)."""
        with self._lock:
            for nad_key in sorted(self._nads_by_namespace.get(namespace, ())):
                entry = self._networks.get(self._nad_network[nad_key])
                if entry is not None and entry.netinfo.is_primary:
                    return nad_key
        return None
