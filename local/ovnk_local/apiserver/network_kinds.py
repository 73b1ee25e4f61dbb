"""NetworkPolicies and Endpoints: their defaults and the checks kube-apiserver makes.

Stored and served for the clients that watch them (upstream's ovnkube
watches NetworkPolicies; Endpoints are the pre-EndpointSlice view of a
Service); nothing here enforces a policy nor fills Endpoints from pods.
Defaults are ``SetDefaults_NetworkPolicy`` (``policyTypes``, port protocol)
and ``SetDefaults_EndpointPort``; the checks are the networking and core
validation of ports, peers, ``ipBlock`` CIDRs, policy types and endpoint
addresses, with their messages.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ovnk_core.kube.names import name_errors
from ovnk_core.kube.selectors import selector_problem
from ovnk_local.apiserver.errors import JSON, OMIT, FieldError

PROTOCOLS = ("SCTP", "TCP", "UDP")
POLICY_TYPES = ("Ingress", "Egress")
PORT_RANGE = "must be between 1 and 65535, inclusive"
IP_FORMAT = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
CIDR_FORMAT = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def default_network_policy(obj: JSON) -> None:
    """Ingress is implied; Egress too when there are egress rules; ports are TCP."""
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule or {}).get("ports") or []:
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"


def default_endpoints(obj: JSON) -> None:
    """Endpoint ports are TCP unless they say otherwise."""
    for subset in obj.get("subsets") or []:
        for port in (subset or {}).get("ports") or []:
            if isinstance(port, dict) and not port.get("protocol"):
                port["protocol"] = "TCP"


def port_name_errors(name: str) -> list[str]:
    """apimachinery's ``IsValidPortName``."""
    problems = ["must be no more than 15 characters"] if len(name) > 15 else []
    if not name or not all(c.isascii() and (c.islower() or c.isdigit() or c == "-")
                           for c in name):
        problems.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens "
                        "(-)")
    if not any(c.isascii() and c.isalpha() for c in name):
        problems.append("must contain at least one letter (a-z)")
    if "--" in name:
        problems.append("must not contain consecutive hyphens (--)")
    if name.startswith("-") or name.endswith("-"):
        problems.append("must not begin or end with a hyphen (-)")
    return problems


def _port_errors(port: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in PROTOCOLS:
        errors.append(FieldError("NotSupported", f"{path}.protocol", protocol,
                                 supported=("TCP", "UDP", "SCTP")))
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, int):
        if not 1 <= number <= 65535:
            errors.append(FieldError("Invalid", f"{path}.port", number, PORT_RANGE))
        if end is not None:
            if end < number:
                errors.append(FieldError("Invalid", f"{path}.endPort", number,
                                         "must be greater than or equal to `port`"))
            if not 1 <= end <= 65535:
                errors.append(FieldError("Invalid", f"{path}.endPort", end, PORT_RANGE))
    elif number is not None:
        if end is not None:
            errors.append(FieldError("Invalid", f"{path}.endPort", end,
                                     "may not be specified when `port` is non-numeric"))
        errors += [FieldError("Invalid", f"{path}.port", number, problem)
                   for problem in port_name_errors(str(number))]
    elif end is not None:
        errors.append(FieldError("Invalid", f"{path}.endPort", end,
                                 "may not be specified when `port` is not specified"))
    return errors


def _network(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(text, strict=False) if "/" in text else None
    except ValueError:
        return None


def _ip_block_errors(block: JSON, path: str) -> list[FieldError]:
    cidr = block.get("cidr") or ""
    if not cidr:
        return [FieldError("Required", f"{path}.cidr", OMIT)]
    network = _network(cidr)
    if network is None:
        return [FieldError("Invalid", f"{path}.cidr", cidr, CIDR_FORMAT)]
    errors: list[FieldError] = []
    for index, text in enumerate(block.get("except") or []):
        except_path = f"{path}.except[{index}]"
        inner = _network(str(text))
        if inner is None:
            errors.append(FieldError("Invalid", except_path, text, CIDR_FORMAT))
        elif inner.version != network.version or inner.network_address not in network \
                or inner.prefixlen <= network.prefixlen:
            errors.append(FieldError("Invalid", except_path, text,
                                     "must be a strict subset of `cidr`"))
    return errors


def _selector_errors(selector: Any, path: str) -> list[FieldError]:
    problem = selector_problem(selector) if isinstance(selector, dict) else None
    return [FieldError("Invalid", path, selector, problem)] if problem else []


def _peer_errors(peer: JSON, path: str) -> list[FieldError]:
    errors: list[FieldError] = []
    chosen = [key for key in ("podSelector", "namespaceSelector", "ipBlock")
              if peer.get(key) is not None]
    for key in ("podSelector", "namespaceSelector"):
        errors += _selector_errors(peer.get(key), f"{path}.{key}")
    if peer.get("ipBlock") is not None:
        errors += _ip_block_errors(peer["ipBlock"], f"{path}.ipBlock")
    if not chosen:
        errors.append(FieldError("Required", path, OMIT, "must specify a peer"))
    elif len(chosen) > 1 and "ipBlock" in chosen:
        errors.append(FieldError("Forbidden", path, OMIT,
                                 "may not specify both ipBlock and another peer"))
    return errors


def validate_network_policy(obj: JSON, _old: JSON | None) -> list[FieldError]:
    """``ValidateNetworkPolicySpec``."""
    spec = obj.get("spec") or {}
    errors = _selector_errors(spec.get("podSelector"), "spec.podSelector")
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for index, rule in enumerate(spec.get(direction) or []):
            path = f"spec.{direction}[{index}]"
            for number, port in enumerate(rule.get("ports") or []):
                errors += _port_errors(port, f"{path}.ports[{number}]")
            for number, peer in enumerate(rule.get(peers) or []):
                errors += _peer_errors(peer, f"{path}.{peers}[{number}]")
    types = spec.get("policyTypes") or []
    if len(types) > len(POLICY_TYPES):
        return [*errors, FieldError("Invalid", "spec.policyTypes", types,
                                    "may not specify more than two policyTypes")]
    errors += [FieldError("NotSupported", f"spec.policyTypes[{index}]", kind,
                          supported=POLICY_TYPES)
               for index, kind in enumerate(types) if kind not in POLICY_TYPES]
    return errors


def _address_errors(address: JSON, path: str) -> list[FieldError]:
    text = address.get("ip") or ""
    try:
        ip = ipaddress.ip_address(text)
    except ValueError:
        return [FieldError("Invalid", f"{path}.ip", text, IP_FORMAT)]
    for bad, message in ((ip.is_unspecified, "may not be unspecified (0.0.0.0)"),
                         (ip.is_loopback, "may not be in the loopback range (127.0.0.0/8, "
                                          "::1/128)"),
                         (ip.is_link_local, "may not be in the link-local range "
                                            "(169.254.0.0/16, fe80::/10)")):
        if bad:
            return [FieldError("Invalid", f"{path}.ip", text, message)]
    hostname = address.get("hostname")
    if hostname:
        return [FieldError("Invalid", f"{path}.hostname", hostname, problem)
                for problem in name_errors(str(hostname), "label")]
    return []


def validate_endpoints(obj: JSON, _old: JSON | None) -> list[FieldError]:
    """``ValidateEndpoints``' subset checks."""
    errors: list[FieldError] = []
    for index, subset in enumerate(obj.get("subsets") or []):
        path = f"subsets[{index}]"
        if not subset.get("addresses") and not subset.get("notReadyAddresses"):
            errors.append(FieldError("Required", path, OMIT,
                                     "must specify `addresses` or `notReadyAddresses`"))
        for key in ("addresses", "notReadyAddresses"):
            for number, address in enumerate(subset.get(key) or []):
                errors += _address_errors(address, f"{path}.{key}[{number}]")
        ports = subset.get("ports") or []
        for number, port in enumerate(ports):
            port_path = f"{path}.ports[{number}]"
            if len(ports) > 1 and not port.get("name"):
                errors.append(FieldError("Required", f"{port_path}.name", OMIT))
            elif port.get("name"):
                errors += [FieldError("Invalid", f"{port_path}.name", port["name"], problem)
                           for problem in name_errors(str(port["name"]), "label")]
            if not 1 <= int(port.get("port") or 0) <= 65535:
                errors.append(FieldError("Invalid", f"{port_path}.port", port.get("port"),
                                         PORT_RANGE))
            if port.get("protocol") not in PROTOCOLS:
                errors.append(FieldError("NotSupported", f"{port_path}.protocol",
                                         port.get("protocol"),
                                         supported=("TCP", "UDP", "SCTP")))
    return errors
