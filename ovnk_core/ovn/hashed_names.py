"""Names upstream derives from a row's primary id: ``a`` + decimal FNV-1a-64 of it.

OVN-Kubernetes names port groups and address sets this way (``HashForOVN``): the name is
a valid OVN identifier whatever the id contains, and the same id always gives the same name,
so a match such as ``inport == @a8747502060113802905`` is stable across restarts and
implementations.
"""

from __future__ import annotations

FNV64_OFFSET = 0xcbf29ce484222325
FNV64_PRIME = 0x100000001b3
MASK64 = (1 << 64) - 1


def fnv1a_64(data: bytes) -> int:
    value = FNV64_OFFSET
    for byte in data:
        value = ((value ^ byte) * FNV64_PRIME) & MASK64
    return value


def hash_for_ovn(text: str) -> str:
    """The OVN name upstream derives from ``text`` (a primary id)."""
    return f"a{fnv1a_64(text.encode())}"
