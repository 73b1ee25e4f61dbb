"""``k8s.ovn.org/tunnel-keys``: the extra datapath tunnel keys of a NAD's network.

Why this exists: a topology may need datapath tunnel keys besides the one every
network gets from its ID (``NetworkNeeds.extra_tunnel_keys``).  The cluster
manager allocates them (``allocators.tunnel_keys``) and records them on each
NAD it accepts, next to the network ID, so that a restart reserves the same
keys again.  A NAD is writable by its namespace's users: a value that is not a
list of datapath keys is no keys (the network gets fresh ones).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ovnk_core.annotations import AnnotationError, load_json_of

TUNNEL_KEYS_ANNOTATION = "k8s.ovn.org/tunnel-keys"
MAX_TUNNEL_KEY = 2 ** 24 - 1  # datapath tunnel keys are 24 bits wide


class TunnelKeysError(AnnotationError):
    """``k8s.ovn.org/tunnel-keys`` is not a list of datapath tunnel keys."""


def parse(raw: str) -> list[int]:
    """The keys, in order: a JSON list of integers from 0 to ``MAX_TUNNEL_KEY``.

    :raises TunnelKeysError: naming what is wrong.
    """
    keys: list[Any] = load_json_of(raw, TUNNEL_KEYS_ANNOTATION, TunnelKeysError, list, "list")
    for key in keys:
        if not isinstance(key, int) or isinstance(key, bool):
            raise TunnelKeysError(f"{TUNNEL_KEYS_ANNOTATION}: {json.dumps(key)} is not an "
                                  "integer")
        if not 0 <= key <= MAX_TUNNEL_KEY:
            raise TunnelKeysError(f"{TUNNEL_KEYS_ANNOTATION}: {key} is out of range "
                                  f"0..{MAX_TUNNEL_KEY}")
    if len(set(keys)) != len(keys):
        raise TunnelKeysError(f"{TUNNEL_KEYS_ANNOTATION}: {json.dumps(keys)} has duplicates")
    return keys


def serialize(keys: Sequence[int]) -> str:
    """The annotation's value, as the cluster manager writes it (compact)."""
    return json.dumps(list(keys), separators=(",", ":"))


def annotated_tunnel_keys(nad: Mapping[str, Any]) -> list[int]:
    """The keys written on ``nad`` (none when absent or malformed)."""
    annotations = (nad.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(TUNNEL_KEYS_ANNOTATION)
    if not raw:
        return []
    try:
        return parse(raw)
    except TunnelKeysError:
        return []


__all__ = ["MAX_TUNNEL_KEY", "TUNNEL_KEYS_ANNOTATION", "TunnelKeysError",
           "annotated_tunnel_keys", "parse", "serialize"]
