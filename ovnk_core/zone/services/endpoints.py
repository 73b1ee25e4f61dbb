"""The endpoints of one service port, as its EndpointSlices list them.

EndpointSlices are user input (anyone who may write them can, for a service
without a selector): every field is checked, and an entry that cannot be
used — an address that is not an IP of the slice's family, a port out of
range — is left out rather than failing the service.  Which endpoints carry
traffic follows upstream (and kube-proxy): the ready ones (all of them with
``publishNotReadyAddresses``); when none is ready, the serving ones that are
terminating, so that a rollout does not drop connections; the same choice is
made again among one node's endpoints for traffic policy ``Local``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

ADDRESS_FAMILIES = {"IPv4": 4, "IPv6": 6}


@dataclass(frozen=True, order=True)
class Endpoint:
    """One address behind a service port.

    :ivar ip: the address (normalised text).
    :ivar port: the target port.
    :ivar node: the node the endpoint runs on (``nodeName``; empty when not given).
    """

    ip: str
    port: int
    node: str = ""
    ready: bool = True
    serving: bool = True
    terminating: bool = False

    @property
    def version(self) -> int:
        return 6 if ":" in self.ip else 4


def _condition(conditions: Mapping[str, Any], name: str, default: bool) -> bool:
    value = conditions.get(name)
    return value if isinstance(value, bool) else default


def _port_of(slice_port: Any) -> int | None:
    port = slice_port.get("port") if isinstance(slice_port, Mapping) else None
    if isinstance(port, int) and not isinstance(port, bool) and 0 < port <= 65535:
        return port
    return None


def port_endpoints(slices: Iterable[Mapping[str, Any]], port_name: str, protocol: str
                   ) -> tuple[Endpoint, ...]:
    """Every usable endpoint of the service port named ``port_name`` (``""`` for an unnamed
    port) with ``protocol``, over all ``slices``; an address listed twice counts once."""
    found: dict[tuple[str, int], Endpoint] = {}
    for slice_ in slices:
        if not isinstance(slice_, Mapping):
            continue
        version = ADDRESS_FAMILIES.get(str(slice_.get("addressType", "")))
        if version is None:
            continue  # FQDN slices carry no addresses OVN can balance to
        ports = slice_.get("ports")
        if not isinstance(ports, list):
            continue
        target = None
        for slice_port in ports:
            if not isinstance(slice_port, Mapping):
                continue
            if str(slice_port.get("name") or "") == port_name and \
                    str(slice_port.get("protocol") or "TCP") == protocol:
                target = _port_of(slice_port)
                break
        if target is None:
            continue
        endpoints = slice_.get("endpoints")
        for endpoint in endpoints if isinstance(endpoints, list) else ():
            if not isinstance(endpoint, Mapping):
                continue
            conditions = endpoint.get("conditions")
            conditions = conditions if isinstance(conditions, Mapping) else {}
            ready = _condition(conditions, "ready", True)
            serving = _condition(conditions, "serving", ready)
            terminating = _condition(conditions, "terminating", False)
            node = endpoint.get("nodeName")
            addresses = endpoint.get("addresses")
            for address in addresses if isinstance(addresses, list) else ():
                try:
                    ip = ipaddress.ip_address(str(address))
                except ValueError:
                    continue
                if ip.version != version:
                    continue
                key = (str(ip), target)
                if key not in found:
                    found[key] = Endpoint(str(ip), target, node if isinstance(node, str) else "",
                                          ready, serving, terminating)
    return tuple(sorted(found.values()))


def eligible(endpoints: Iterable[Endpoint], publish_not_ready: bool) -> tuple[Endpoint, ...]:
    """The endpoints that carry traffic: ready ones (all with ``publishNotReadyAddresses``),
    else the serving, terminating ones."""
    endpoints = tuple(endpoints)
    if publish_not_ready:
        return endpoints
    ready = tuple(e for e in endpoints if e.ready)
    if ready:
        return ready
    return tuple(e for e in endpoints if e.serving and e.terminating)
