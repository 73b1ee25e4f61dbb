"""``k8s.ovn.org/network-id`` and ``k8s.ovn.org/network-name``: a NAD's accepted network.

Why this exists: the cluster manager decides which NADs define a network
(``networks.definition``) and writes its decision on each NAD it accepts — the
network's ID and name — and removes both from a NAD it refuses.  The zone
controller and the node agents read the decision from there, and the cluster
manager reserves the IDs again after a restart.  A NAD is writable by its
namespace's users, so a value may be forged: it is read strictly, and an ID
outside the allocator's range is no ID.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ovnk_core.annotations import AnnotationError

NETWORK_ID_ANNOTATION = "k8s.ovn.org/network-id"
NETWORK_NAME_ANNOTATION = "k8s.ovn.org/network-name"
MAX_NETWORKS = 4096  # network IDs are below this (the cluster manager's network ID allocator)
DEFAULT_NETWORK_ID = 0  # the default network's; never on a NAD
_DECIMAL = re.compile(r"[0-9]+")


class NetworkIdError(AnnotationError):
    """``k8s.ovn.org/network-id`` is not a network ID the cluster manager could have
    written."""


def parse(raw: str) -> int:
    """A user-defined network's ID: a decimal integer from 1 to ``MAX_NETWORKS - 1``.

    :raises NetworkIdError: it is not an integer, or out of that range.
    """
    if not isinstance(raw, str) or not _DECIMAL.fullmatch(raw):
        raise NetworkIdError(f"{NETWORK_ID_ANNOTATION} {raw!r} is not an integer")
    network_id = int(raw)
    if not DEFAULT_NETWORK_ID < network_id < MAX_NETWORKS:
        raise NetworkIdError(f"{NETWORK_ID_ANNOTATION} {raw!r} is out of range "
                             f"{DEFAULT_NETWORK_ID + 1}..{MAX_NETWORKS - 1}")
    return network_id


def build(network_id: int, network: str) -> dict[str, str]:
    """The annotations the cluster manager writes on a NAD it accepts for ``network``."""
    return {NETWORK_ID_ANNOTATION: str(network_id), NETWORK_NAME_ANNOTATION: network}


def _annotations(nad: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = (nad.get("metadata") or {}).get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


def annotated_id(nad: Mapping[str, Any]) -> int | None:
    """The network ID written on ``nad``, whatever network it names (``None``: none, or
    malformed)."""
    raw = _annotations(nad).get(NETWORK_ID_ANNOTATION)
    if raw is None:
        return None
    try:
        return parse(raw)
    except NetworkIdError:
        return None


def accepted_id(nad: Mapping[str, Any], network: str) -> int | None:
    """The network ID the cluster manager wrote on ``nad`` for ``network`` (``None``: it
    has not accepted the NAD for that network, as far as the NAD says)."""
    named = _annotations(nad).get(NETWORK_NAME_ANNOTATION)
    if named is not None and named != network:
        return None
    return annotated_id(nad)


__all__ = ["DEFAULT_NETWORK_ID", "MAX_NETWORKS", "NETWORK_ID_ANNOTATION",
           "NETWORK_NAME_ANNOTATION", "NetworkIdError", "accepted_id", "annotated_id", "build",
           "parse"]
