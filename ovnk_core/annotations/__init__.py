"""The annotation contracts: one module per annotation ovnk writes on a Kubernetes object.

The annotations are the control plane's state, passed between components that
run apart: the cluster manager writes a node's ``node-id`` and ``node-subnets``,
a NAD's ``network-id``/``network-name`` and ``tunnel-keys``, a pod's
``pod-networks``; a node agent writes its node's gateway facts
(``l3-gateway-config``, ``node-chassis-id``, ``node-primary-ifaddr``); the zone
controller, the node agents, admission and plugins read them.  Each contract
has exactly one module here holding its name(s), its typed value, how it is
written (``serialize``/``build``) and how it is read (``parse``: strict, a
malformed value is an ``AnnotationError`` naming what is wrong), so a writer
and its readers cannot drift apart and no reader is more lenient than another
by accident.  Where a caller must keep going on a malformed value (an
allocator that would rather allocate again, a reader of many objects), the
module also has a lenient reader of the whole object, built on ``parse``.

These modules sit below everything that uses them: they import only the
standard library, ``embedded_json``, ``errors`` and ``config.values`` — never a
controller, a client, or the ``networks`` package (which imports them).

* ``node_subnets`` — ``k8s.ovn.org/node-subnets`` (Node; cluster manager)
* ``node_id`` — ``k8s.ovn.org/node-id`` (Node; cluster manager)
* ``network_id`` — ``k8s.ovn.org/network-id`` and ``network-name`` (NAD; cluster manager)
* ``tunnel_keys`` — ``k8s.ovn.org/tunnel-keys`` (NAD; cluster manager)
* ``node_gateway`` — ``k8s.ovn.org/l3-gateway-config``, ``node-chassis-id`` and
  ``node-primary-ifaddr`` (Node; node agent)
* ``node_transit`` — ``k8s.ovn.org/node-transit-switch-port-ifaddr`` (Node; cluster manager)
* ``node_zone`` — ``k8s.ovn.org/zone-name`` (Node; the node's identity, ``ovnk local``)
* ``node_encap_ips`` — ``k8s.ovn.org/node-encap-ips`` (Node; node side, upstream's format,
  written by ``ovnk local``)
* ``pod_networks`` — ``k8s.ovn.org/pod-networks`` (Pod; cluster manager)
* ``endpointslices`` — EndpointSlice labels and annotations, a user-defined network's
  included (names only)
"""

from __future__ import annotations

from typing import Any

from ovnk_core import embedded_json
from ovnk_core.errors import OvnkError


class AnnotationError(OvnkError, ValueError):
    """An annotation's value is malformed: not one its writer could have written.

    A ``ValueError`` too, so "cannot read this value" handlers catch it.
    """


def load_json(raw: str, annotation: str, error: type[AnnotationError]) -> Any:
    """The annotation's JSON document (depth-limited, valid Unicode: ``embedded_json``).

    :raises error: ``<annotation> is not valid JSON: <why>``.
    """
    try:
        return embedded_json.loads(raw)  # too deep, or a lone surrogate: a ValueError too
    except ValueError as exc:
        raise error(f"{annotation} is not valid JSON: {exc}") from None


def load_json_of(raw: str, annotation: str, error: type[AnnotationError], kind: type,
                 kind_name: str) -> Any:
    """``load_json``, and the document must be a ``kind`` (``dict``, ``list``).

    :raises error: ``<annotation> must be a JSON <kind_name>, got <type>`` too.
    """
    document = load_json(raw, annotation, error)
    if not isinstance(document, kind):
        raise error(f"{annotation} must be a JSON {kind_name}, got {type(document).__name__}")
    return document


__all__ = ["AnnotationError", "load_json", "load_json_of"]
