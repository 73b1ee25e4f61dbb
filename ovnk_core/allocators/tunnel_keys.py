"""Datapath tunnel keys of user-defined networks (zone interconnect).

A network's interconnect switch uses ``BASE + networkID``; a topology that
needs more keys declares how many (``NetworkNeeds.extra_tunnel_keys``) and
gets them from the range above the per-network block.  As upstream, the NAD's
``k8s.ovn.org/tunnel-keys`` (``ovnk_core.annotations.tunnel_keys``) then lists
every key of the network, ``BASE + networkID`` first (a network asking for
one extra key: ``[16711683+ID, <that key>]``); a network without extra keys
gets an empty list.
"""

from __future__ import annotations

from ovnk_core.allocators.ids import IdAllocator
from ovnk_core.annotations.network_id import MAX_NETWORKS
from ovnk_core.annotations.tunnel_keys import MAX_TUNNEL_KEY
from ovnk_core.networks.netinfo import NetInfo

BASE_TRANSIT_SWITCH_TUNNEL_KEY = 16711683
EXTRA_KEYS_START = BASE_TRANSIT_SWITCH_TUNNEL_KEY + MAX_NETWORKS


def network_tunnel_key(network_id: int) -> int:
    return BASE_TRANSIT_SWITCH_TUNNEL_KEY + network_id


def extra_keys_needed(netinfo: NetInfo) -> int:
    """How many keys besides ``BASE + networkID`` the network's topology asks for."""
    return netinfo.needs.extra_tunnel_keys


class TunnelKeyAllocator:
    """Extra tunnel keys per network from ``EXTRA_KEYS_START`` up to 2^24-1."""

    def __init__(self) -> None:
        self._ids = IdAllocator("TunnelKeys", MAX_TUNNEL_KEY - EXTRA_KEYS_START + 1,
                                reserved=())

    def keys_for(self, netinfo: NetInfo) -> list[int]:
        """The network's extra keys (allocated once, stable afterwards)."""
        return [EXTRA_KEYS_START + self._ids.allocate(f"{netinfo.name}/{index}")
                for index in range(extra_keys_needed(netinfo))]

    def annotation_keys(self, netinfo: NetInfo, network_id: int) -> list[int]:
        """What the NAD's ``k8s.ovn.org/tunnel-keys`` lists: ``BASE + networkID`` then the
        extra keys, or nothing for a network without extra keys."""
        extra = self.keys_for(netinfo)
        return [network_tunnel_key(network_id), *extra] if extra else []

    def reserve(self, network: str, keys: list[int]) -> None:
        """Reserve the extra keys of an annotation read back (``BASE + networkID`` is the
        network ID's, not allocated here)."""
        extra = [key for key in keys if key >= EXTRA_KEYS_START]
        for index, key in enumerate(extra):
            self._ids.reserve(f"{network}/{index}", key - EXTRA_KEYS_START)

    def release(self, network: str) -> None:
        for owner in list(self._ids.allocated()):
            if owner.rsplit("/", 1)[0] == network:
                self._ids.release(owner)
