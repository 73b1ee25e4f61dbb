"""``k8s.ovn.org/node-id``: a node's cluster-wide ID.

Why this exists: the cluster manager gives every node an ID, once, and writes
it on the Node; the zone derives the node's join and transit addresses from it
(``base + node ID``), so an ID outside the allocator's range would give a
gateway router an address outside its subnet, or the cluster router's own.
The allocator (``clustermanager.node_allocator``) and every reader use the
range defined here.
"""

from __future__ import annotations

import re

from ovnk_core.annotations import AnnotationError

NODE_ID_ANNOTATION = "k8s.ovn.org/node-id"
MAX_NODE_ID = 65535  # node IDs are below this: what a node may carry (and is kept)
# new IDs are handed out up to upstream's maxNodeIDs (5000; an older ovnk release went up
# to MAX_NODE_ID - 1, and the nodes it numbered keep their IDs)
HIGHEST_ALLOCATED_NODE_ID = 5000
RESERVED_NODE_IDS = (0, 1)  # never handed out: base + 1 is the cluster router's join address
FIRST_NODE_ID = max(RESERVED_NODE_IDS) + 1
_DECIMAL = re.compile(r"[0-9]+")


class NodeIdError(AnnotationError):
    """``k8s.ovn.org/node-id`` is not a node ID the cluster manager could have written."""


def parse(raw: str) -> int:
    """The node ID: a decimal integer from ``FIRST_NODE_ID`` to ``MAX_NODE_ID - 1``.

    :raises NodeIdError: it is not an integer, or out of that range.
    """
    if not isinstance(raw, str) or not _DECIMAL.fullmatch(raw):
        raise NodeIdError(f"{NODE_ID_ANNOTATION} {raw!r} is not an integer")
    node_id = int(raw)
    if not FIRST_NODE_ID <= node_id < MAX_NODE_ID:
        raise NodeIdError(f"{NODE_ID_ANNOTATION} {raw!r} is out of range "
                          f"{FIRST_NODE_ID}..{MAX_NODE_ID - 1}")
    return node_id


def serialize(node_id: int) -> str:
    """The annotation's value for ``node_id``."""
    return str(node_id)


__all__ = ["FIRST_NODE_ID", "HIGHEST_ALLOCATED_NODE_ID", "MAX_NODE_ID", "NODE_ID_ANNOTATION",
           "RESERVED_NODE_IDS", "NodeIdError", "parse", "serialize"]
