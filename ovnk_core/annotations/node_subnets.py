"""``k8s.ovn.org/node-subnets``: a node's host subnets, per network.

Why this exists: the cluster manager allocates each node a slice of every network
whose topology asks for node subnets, and writes them on the Node; the zone
renders the node's switches from them, the pod IPAM takes pods' addresses from
them, and the node agent its management ports.  All of them read the value
here, the same way.

The value is a JSON object keyed by network name; each value a list of CIDRs
(one per IP family), or upstream's legacy single-CIDR string.  ``parse`` is
strict; ``read`` reports each bad network on its own and keeps the others (a
node is still rendered on its good networks); ``parse_node_subnets`` is the
lenient reader of a Node object for the allocators, which allocate again
whatever they cannot read.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ovnk_core.annotations import AnnotationError, load_json_of
from ovnk_core.config.values import IPNetwork

NODE_SUBNETS_ANNOTATION = "k8s.ovn.org/node-subnets"


class NodeSubnetsError(AnnotationError):
    """``k8s.ovn.org/node-subnets`` (or one of its networks) is malformed."""


def _document(raw: str) -> dict[str, Any]:
    document: dict[str, Any] = load_json_of(raw, NODE_SUBNETS_ANNOTATION, NodeSubnetsError,
                                            dict, "object")
    return document


def parse_entry(network: str, value: Any) -> tuple[IPNetwork, ...]:
    """One network's subnets: a CIDR or a list of CIDRs, each a network address
    (``10.244.1.0/24``, not ``10.244.1.3/24``).

    :raises NodeSubnetsError: naming the network and what is wrong.
    """
    cidrs = [value] if isinstance(value, str) else value
    if not isinstance(cidrs, list) or not all(isinstance(c, str) for c in cidrs):
        raise NodeSubnetsError(f"{NODE_SUBNETS_ANNOTATION}[{network}]: must be a CIDR or a "
                               f"list of CIDRs, got {json.dumps(value)}")
    try:
        return tuple(ipaddress.ip_network(cidr) for cidr in cidrs)
    except ValueError as exc:
        raise NodeSubnetsError(f"{NODE_SUBNETS_ANNOTATION}[{network}]: {exc}") from None


def read(raw: str | None) -> tuple[dict[str, tuple[IPNetwork, ...]], list[str]]:
    """Every network that can be read, and a message for each problem (a document that is
    not a JSON object is one problem and no networks; a bad network is one problem and the
    others are read).  Absent or empty: no networks, no problems."""
    if not raw:
        return {}, []
    try:
        document = _document(raw)
    except NodeSubnetsError as exc:
        return {}, [str(exc)]
    subnets: dict[str, tuple[IPNetwork, ...]] = {}
    problems: list[str] = []
    for network, value in document.items():
        try:
            subnets[network] = parse_entry(network, value)
        except NodeSubnetsError as exc:
            problems.append(str(exc))
    return subnets, problems


def parse(raw: str) -> dict[str, tuple[IPNetwork, ...]]:
    """The annotation as network → subnets.

    :raises NodeSubnetsError: the first thing wrong with it.
    """
    return {network: parse_entry(network, value) for network, value in _document(raw).items()}


def serialize(subnets: Mapping[str, Sequence[str]]) -> str:
    """The annotation's value, as the cluster manager writes it (keys sorted, compact)."""
    return json.dumps({network: list(cidrs) for network, cidrs in subnets.items()},
                      sort_keys=True, separators=(",", ":"))


def parse_node_subnets(node: Mapping[str, Any]) -> dict[str, list[str]]:
    """A Node's annotation as network → CIDRs, as written (the legacy single string as a
    one-element list); a malformed document is no networks, a malformed network is left
    out.  For callers that allocate, or wait for, what they cannot read."""
    raw = ((node.get("metadata") or {}).get("annotations") or {}).get(NODE_SUBNETS_ANNOTATION)
    if not raw:
        return {}
    try:
        document = _document(raw)
    except NodeSubnetsError:
        return {}
    result: dict[str, list[str]] = {}
    for network, value in document.items():
        try:
            parse_entry(network, value)
        except NodeSubnetsError:
            continue
        result[network] = [value] if isinstance(value, str) else list(value)
    return result


__all__ = ["NODE_SUBNETS_ANNOTATION", "NodeSubnetsError", "parse", "parse_entry",
           "parse_node_subnets", "read", "serialize"]
