"""``k8s.ovn.org/node-encap-ips``: the addresses a node's chassis terminates tunnels on.

Why this exists: upstream's node side publishes the encapsulation (geneve)
IPs of its node, and upstream's zone controllers build the remote chassis of
other zones from them (``zone_interconnect/chassis_handler.go``); without it
they cannot add the node.  The value is upstream's: a JSON list of IP
strings, sorted (it is written from a set).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable

from ovnk_core.annotations import AnnotationError, load_json_of

NODE_ENCAP_IPS_ANNOTATION = "k8s.ovn.org/node-encap-ips"


class NodeEncapIpsError(AnnotationError):
    """``k8s.ovn.org/node-encap-ips`` is not a list of IP addresses."""


def serialize(ips: Iterable[str]) -> str:
    """The annotation's value for ``ips`` (upstream's ``SetNodeEncapIPs``: a sorted set)."""
    return json.dumps(sorted(set(ips)), separators=(",", ":"))


def parse(raw: str) -> list[str]:
    """The encap IPs, each an IPv4 or IPv6 address.

    :raises NodeEncapIpsError: not a JSON list, or an entry that is not an IP address.
    """
    ips = load_json_of(raw, NODE_ENCAP_IPS_ANNOTATION, NodeEncapIpsError, list, "list")
    for ip in ips:
        try:
            ipaddress.ip_address(ip if isinstance(ip, str) else "")
        except ValueError:
            raise NodeEncapIpsError(f"{NODE_ENCAP_IPS_ANNOTATION}: {json.dumps(ip)} is not an "
                                    "IP address") from None
    return list(ips)


__all__ = ["NODE_ENCAP_IPS_ANNOTATION", "NodeEncapIpsError", "parse", "serialize"]
