"""``k8s.ovn.org/open-default-ports``: the default-network ports a primary-UDN pod opens.

A pod whose default network is ``infrastructure-locked`` may still accept
some traffic on its default-network interface: the annotation lists them as
YAML (or JSON, which is YAML) ``[{protocol, port}]``, e.g.::

    k8s.ovn.org/open-default-ports: |
      - protocol: tcp
        port: 80
      - protocol: icmp

Parsed and checked as upstream does (``UnmarshalUDNOpenPortsAnnotation``):
the same rules, in the same order, with the same messages.  YAML is decoded
as sigs.k8s.io/yaml does (to JSON first), so a value of the wrong type is
worded as Go's JSON decoder words it; the YAML parser's own messages are
PyYAML's.  Both the zone (ACLs) and the node (nftables) read it through here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from ovnk_core.go_json_errors import unmarshal_kind

ANNOTATION = "k8s.ovn.org/open-default-ports"
PROTOCOLS = ("tcp", "udp", "sctp", "icmp")
ICMP = "icmp"


class OpenPortsError(ValueError):
    """The annotation cannot be used; the message is upstream's."""


@dataclass(frozen=True)
class OpenPort:
    protocol: str  # tcp, udp, sctp or icmp
    port: int | None = None  # None for icmp


# libyaml's parser when PyYAML was built with it: the same documents, several times faster
# (a node's start-up sync reads every isolated pod's annotation)
_FAST_LOADER: Any = getattr(yaml, "CSafeLoader", None)


def _load_yaml(raw: str) -> Any:
    """``yaml.safe_load``, through libyaml when available; a document libyaml refuses is
    parsed again by the pure-Python parser, so that errors are always worded the same."""
    if _FAST_LOADER is not None:
        try:
            return yaml.load(raw, Loader=_FAST_LOADER)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(raw)


def _decode(raw: str) -> list[tuple[Any, Any]]:
    """The (protocol, port) pairs as decoded, before the rules (a missing key is None)."""
    try:
        document = _load_yaml(raw)
    except yaml.YAMLError as exc:
        raise OpenPortsError(
            f"failed to unmarshal UDN open ports annotation {raw}: {exc}") from None
    if document is None:
        return []
    if not isinstance(document, list):
        raise OpenPortsError(
            f"failed to unmarshal UDN open ports annotation {raw}: json: cannot unmarshal "
            f"{unmarshal_kind(document)} into Go value of type []*util.OpenPort")
    pairs: list[tuple[Any, Any]] = []
    for item in document:
        if item is None:
            pairs.append((None, None))
            continue
        if not isinstance(item, dict):
            raise OpenPortsError(
                f"failed to unmarshal UDN open ports annotation {raw}: json: cannot "
                f"unmarshal {unmarshal_kind(item)} into Go value of type util.OpenPort")
        protocol, port = item.get("protocol"), item.get("port")
        if protocol is not None and not isinstance(protocol, str):
            raise OpenPortsError(
                f"failed to unmarshal UDN open ports annotation {raw}: json: cannot "
                f"unmarshal {unmarshal_kind(protocol)} into Go struct field "
                "OpenPort.protocol of type string")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
            raise OpenPortsError(
                f"failed to unmarshal UDN open ports annotation {raw}: json: cannot "
                f"unmarshal {unmarshal_kind(port)} into Go struct field OpenPort.port of "
                "type int")
        pairs.append((protocol, port))
    return pairs


def parse_open_ports(annotations: Mapping[str, str] | None) -> list[OpenPort]:
    """The pod's open ports; ``[]`` without the annotation.

    :raises OpenPortsError: with upstream's message (the first rule broken).
    """
    raw = (annotations or {}).get(ANNOTATION)
    if raw is None:
        return []
    ports = []
    for protocol, port in _decode(str(raw)):
        protocol = protocol or ""
        if protocol not in PROTOCOLS:
            raise OpenPortsError(f"invalid protocol {protocol}")
        if protocol == ICMP:
            if port is not None:
                raise OpenPortsError(f"invalid port {port} for icmp protocol, should be empty")
        elif port is None:
            raise OpenPortsError(f"port is required for {protocol} protocol")
        if port is not None and not 0 <= port <= 65535:
            raise OpenPortsError(f"invalid port {port}")
        ports.append(OpenPort(protocol, port))
    return ports


def ingress_match(port_name: str, ports: list[OpenPort]) -> str:
    """The OpenPort ACL's to-lport match (``allow-related``): ARP/ND and the open ports."""
    opened = " || ".join(ICMP if p.protocol == ICMP else f"{p.protocol}.dst == {p.port}"
                         for p in ports)
    return f'outport == "{port_name}" && (arp || nd || ({opened}))'


def egress_match(port_name: str) -> str:
    """The OpenPort ACL's from-lport match (``allow``): ARP/ND only."""
    return f'inport == "{port_name}" && (arp || nd)'


__all__ = ["ANNOTATION", "OpenPort", "OpenPortsError", "egress_match", "ingress_match",
           "parse_open_ports"]
