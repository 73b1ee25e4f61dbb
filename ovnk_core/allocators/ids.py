"""Integer IDs handed out to named owners: network IDs, node IDs, tunnel IDs.

Allocation is round-robin over ``0..max_id-1`` (upstream's ``IDAllocator``):
the next search starts after the last ID handed out, so a released ID is not
reused at once — an object deleted and recreated does not inherit the
previous owner's ID while stale state may still name it.  ``reserve`` claims
a specific ID (after a restart, from an annotation); an owner always gets its
own ID back.  ``reserve_limit`` lets IDs beyond the allocation range be kept (upstream's
allocator reserves any ID it is given: node IDs an older release handed out stay).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable


class IdAllocationError(ValueError):
    """The ID is taken by another owner, out of range, or none is left."""


class IdAllocator:
    def __init__(self, name: str, max_id: int, reserved: Iterable[int] = (0,),
                 reserve_limit: int | None = None) -> None:
        """:param max_id: IDs are handed out from ``0..max_id-1``.
        :param reserve_limit: ``reserve`` accepts IDs below it (default ``max_id``)."""
        if max_id < 1:
            raise ValueError("max_id must be positive")
        self.name = name
        self.max_id = max_id
        self.reserve_limit = max(max_id, reserve_limit or max_id)
        self._reserved = frozenset(reserved)
        self._by_owner: dict[str, int] = {}
        self._by_id: dict[int, str] = {}
        self._next = 0
        self._lock = threading.Lock()

    def get(self, owner: str) -> int | None:
        with self._lock:
            return self._by_owner.get(owner)

    def owner_of(self, value: int) -> str | None:
        with self._lock:
            return self._by_id.get(value)

    def reserve(self, owner: str, value: int) -> None:
        """Claim ``value`` for ``owner`` (idempotent for the same pair)."""
        with self._lock:
            if not 0 <= value < self.reserve_limit or value in self._reserved:
                raise IdAllocationError(
                    f"{self.name}: ID {value} is not allocatable (range "
                    f"0..{self.reserve_limit - 1}, reserved {sorted(self._reserved)})")
            holder = self._by_id.get(value)
            if holder is not None and holder != owner:
                raise IdAllocationError(
                    f"{self.name}: ID {value} requested by {owner} is already allocated to "
                    f"{holder}")
            current = self._by_owner.get(owner)
            if current is not None and current != value:
                raise IdAllocationError(
                    f"{self.name}: {owner} already holds ID {current}, cannot also take {value}")
            self._by_owner[owner] = value
            self._by_id[value] = owner

    def allocate(self, owner: str) -> int:
        """The owner's ID, allocating the next free one if it has none."""
        with self._lock:
            current = self._by_owner.get(owner)
            if current is not None:
                return current
            for step in range(self.max_id):
                value = (self._next + step) % self.max_id
                if value in self._reserved or value in self._by_id:
                    continue
                self._by_owner[owner] = value
                self._by_id[value] = owner
                self._next = (value + 1) % self.max_id
                return value
        raise IdAllocationError(f"{self.name}: no ID left for {owner} (all "
                                f"{self.max_id - len(self._reserved)} allocated)")

    def release(self, owner: str) -> int | None:
        with self._lock:
            value = self._by_owner.pop(owner, None)
            if value is not None:
                self._by_id.pop(value, None)
            return value

    def allocated(self) -> dict[str, int]:
        with self._lock:
            return dict(self._by_owner)
