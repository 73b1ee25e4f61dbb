"""``k8s.ovn.org/node-transit-switch-port-ifaddr``: a node's addresses on the transit switches.

Why this exists: with one zone per node (interconnect), each zone's cluster
router reaches the other zones through a transit switch, on which every node
has one port addressed from the cluster's transit switch subnets
(``--cluster-manager-v4-transit-subnet`` 100.88.0.0/16,
``--cluster-manager-v6-transit-subnet`` fd97::/64): the subnet's base + the
node's ID.  The cluster manager writes it (upstream's node allocation
controller); every zone reads it, for its own nodes' ``rtots-`` ports and for
the remote ports and routes of the others.  The value is upstream's: a JSON
object with ``ipv4`` and/or ``ipv6``, each an address with its prefix length,
e.g. ``{"ipv4":"100.88.0.2/16","ipv6":"fd97::2/64"}``.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable

from ovnk_core.annotations import AnnotationError, load_json_of
from ovnk_core.config.values import IPNetwork

TRANSIT_PORT_ADDRESSES_ANNOTATION = "k8s.ovn.org/node-transit-switch-port-ifaddr"
_KEYS = {4: "ipv4", 6: "ipv6"}

TransitAddress = ipaddress.IPv4Interface | ipaddress.IPv6Interface


class TransitAddressesError(AnnotationError):
    """``k8s.ovn.org/node-transit-switch-port-ifaddr`` is not what the cluster manager
    writes."""


def addresses_of(transit_subnets: Iterable[IPNetwork], node_id: int) -> tuple[TransitAddress, ...]:
    """The node's transit addresses: each subnet's base + ``node_id``, with the subnet's
    prefix length (upstream's ``ipgenerator.GenerateIP``), IPv4 first.

    :raises ValueError: the node ID does not fit in a subnet.
    """
    found = []
    for subnet in sorted(transit_subnets, key=lambda s: s.version):
        if node_id >= subnet.num_addresses:
            raise ValueError(f"node ID {node_id} does not fit in transit subnet {subnet}")
        found.append(ipaddress.ip_interface(f"{subnet.network_address + node_id}/"
                                            f"{subnet.prefixlen}"))
    return tuple(found)


def serialize(addresses: Iterable[TransitAddress]) -> str:
    """The annotation's value (Go's ``json.Marshal`` of upstream's ``primaryIfAddrAnnotation``:
    ``ipv4`` then ``ipv6``, no spaces)."""
    document = {_KEYS[address.version]: str(address)
                for address in sorted(addresses, key=lambda a: a.version)}
    return json.dumps(document, separators=(",", ":"))


def parse(raw: str) -> tuple[TransitAddress, ...]:
    """The node's transit addresses, IPv4 first.

    :raises TransitAddressesError: not a JSON object, an unknown key, an entry that is not
        an address with a prefix length of its family, or no address at all.
    """
    document = load_json_of(raw, TRANSIT_PORT_ADDRESSES_ANNOTATION, TransitAddressesError,
                            dict, "object")
    found: list[TransitAddress] = []
    for version, key in _KEYS.items():
        value = document.pop(key, None)
        if value is None:
            continue
        try:
            if not isinstance(value, str) or "/" not in value:
                raise ValueError
            address = ipaddress.ip_interface(value)
        except ValueError:
            raise TransitAddressesError(
                f"{TRANSIT_PORT_ADDRESSES_ANNOTATION}: {key} {json.dumps(value)} is not an "
                "address with a prefix length") from None
        if address.version != version:
            raise TransitAddressesError(f"{TRANSIT_PORT_ADDRESSES_ANNOTATION}: {key} "
                                        f"{value!r} is not an IPv{version} address")
        found.append(address)
    if document:
        raise TransitAddressesError(f"{TRANSIT_PORT_ADDRESSES_ANNOTATION}: unknown key(s) "
                                    + ", ".join(sorted(map(json.dumps, document))))
    if not found:
        raise TransitAddressesError(f"{TRANSIT_PORT_ADDRESSES_ANNOTATION} has no address")
    return tuple(found)


__all__ = ["TRANSIT_PORT_ADDRESSES_ANNOTATION", "TransitAddress", "TransitAddressesError",
           "addresses_of", "parse", "serialize"]
