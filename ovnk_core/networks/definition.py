"""Which NADs define a network: one rule, applied alike by every component.

Several NADs may name one network (a CUDN renders one per namespace), and
anyone who may create NADs may name an existing network in theirs, with
other subnets.  Exactly one definition wins and the NADs that disagree with
it are refused; the cluster manager, the zone controller and the node agent
must pick the same one — a zone that re-rendered a network's routes from a
NAD the cluster manager had refused, because it happened to see that NAD
first, is the bug this module exists to prevent.

The cluster manager decides, and writes its decision on the NADs it
accepts: ``k8s.ovn.org/network-id`` (with ``network-name``; read and written
by ``ovnk_core.annotations.network_id``), never on the others, and it
removes them from a NAD that conflicts.  Its order: the definition it
already holds, while some NAD still carries it; then NADs that
carry the network's ID (accepted before a restart); then the oldest
(``creationTimestamp``); then namespace/name.  The zone controller and the
node agent only read: they consider only NADs carrying the network's ID and
order those the same way (oldest first), so a forged or stale annotation on
a newer NAD never wins, even before the cluster manager has removed it.

``decide`` is pure: callers parse the NADs (each its own way, reporting its
own errors) and give it the parsed candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ovnk_core.annotations.network_id import accepted_id

T = TypeVar("T")

CONFLICT_REASON = "ConflictingNetworkConfig"
_NEWEST = "9999"  # sorts after every RFC 3339 timestamp: a NAD without one is not older


def _key(nad: Mapping[str, Any]) -> str:
    meta = nad.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def age(nad: Mapping[str, Any]) -> tuple[str, str]:
    """Sort key: the oldest NAD first (``creationTimestamp``, then namespace/name)."""
    created = (nad.get("metadata") or {}).get("creationTimestamp")
    return (created if isinstance(created, str) and created else _NEWEST, _key(nad))


def precedence(nad: Mapping[str, Any], network: str) -> tuple[int, str, str]:
    """Sort key: NADs carrying the network's ID first, then the oldest, then by key."""
    return (0 if accepted_id(nad, network) is not None else 1, *age(nad))


def conflict_message(nad_key: str, network: str) -> str:
    """Upstream's words for a NAD that disagrees with its network's definition."""
    return f"NAD {nad_key} CNI config does not match that of network {network}"


@dataclass(frozen=True)
class Decision(Generic[T]):
    """What defines ``network``: the winning config, and which NADs carry it."""

    network: str
    definition: T | None = None
    network_id: int | None = None  # the defining NAD's accepted ID (None: not annotated)
    accepted: tuple[str, ...] = ()  # NAD keys, sorted
    conflicting: tuple[str, ...] = ()


def decide(network: str, candidates: Sequence[tuple[Mapping[str, Any], T]],
           same: Callable[[T, T], bool], *, holding: T | None = None,
           accepted_only: bool = False) -> Decision[T]:
    """Choose the definition of ``network`` among parsed ``candidates`` (NAD, config).

    :param same: whether two configs define the same network.
    :param holding: the definition the caller holds now (the cluster manager's): it stays
        while a candidate still carries it.
    :param accepted_only: consider only NADs carrying the network's ID, and accept only
        those with the defining NAD's ID (the zone controller's and node agent's view).
    """
    pool = [(nad, config) for nad, config in candidates
            if not accepted_only or accepted_id(nad, network) is not None]
    if not pool:
        return Decision(network)

    def order(candidate: tuple[Mapping[str, Any], T]) -> tuple[int, tuple[int, str, str]]:
        held = holding is not None and same(candidate[1], holding)
        return (0 if held else 1, precedence(candidate[0], network))

    pool.sort(key=order)
    defining, definition = pool[0]
    network_id = accepted_id(defining, network)
    accepted, conflicting = [], []
    for nad, config in pool:
        if not same(config, definition):
            conflicting.append(_key(nad))
        elif not accepted_only or accepted_id(nad, network) == network_id:
            accepted.append(_key(nad))
    return Decision(network, definition, network_id, tuple(sorted(accepted)),
                    tuple(sorted(conflicting)))


# accepted_id (ovnk_core.annotations.network_id) is part of the rule: which NADs carry the ID
__all__ = ["CONFLICT_REASON", "Decision", "accepted_id", "age", "conflict_message", "decide",
           "precedence"]
