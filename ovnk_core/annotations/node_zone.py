"""``k8s.ovn.org/zone-name``: the OVN zone (interconnect) a node belongs to.

Why this exists: with one zone per node, each zone controller renders its own
nodes fully and every other node as a remote one (a port on the transit
switch, routes, a remote chassis); it must know which nodes are its own.  The
node's identity writes the annotation (``ovnk local`` for its nodes, as it
writes the chassis and encap annotations); upstream's admission lets a node
set it only to its own name, and upstream's HEAD takes a node's name as its
zone without reading it.  ovnk reads it, so several nodes may share a zone as
older upstream releases allowed.  A value that is no zone name (empty, or not
a lower-case RFC 1123 subdomain, as node names are) is an error: such a node
is rendered in no zone.
"""

from __future__ import annotations

from ovnk_core.annotations import AnnotationError
from ovnk_core.config.values import MAX_ZONE_NAME, parse_zone

ZONE_ANNOTATION = "k8s.ovn.org/zone-name"


class NodeZoneError(AnnotationError):
    """``k8s.ovn.org/zone-name`` is missing or not a zone name."""


def check_zone_name(name: str) -> str:
    """``name`` if it is a zone name (a lower-case RFC 1123 subdomain, as a node's name).

    :raises NodeZoneError: it is not.
    """
    try:
        valid = isinstance(name, str) and name == name.strip() and bool(parse_zone(name))
    except ValueError:
        valid = False
    if not valid:
        raise NodeZoneError(f"{ZONE_ANNOTATION} {name!r} is not a zone name (a lower-case "
                            "RFC 1123 subdomain, as a node's name)")
    return name


def parse(raw: str | None) -> str:
    """The node's zone.

    :raises NodeZoneError: the annotation is missing, or no zone name.
    """
    if raw is None:
        raise NodeZoneError(f"{ZONE_ANNOTATION} is not set: the node is in no zone")
    return check_zone_name(raw)


def serialize(zone: str) -> str:
    """The annotation's value for ``zone`` (checked)."""
    return check_zone_name(zone)


__all__ = ["MAX_ZONE_NAME", "ZONE_ANNOTATION", "NodeZoneError", "check_zone_name", "parse",
           "serialize"]
