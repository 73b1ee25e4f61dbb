"""Checks that several topologies' UDN/CUDN sections share, with upstream's messages.

Building blocks for ``UdnSection.validate`` (``ovnk_core.udn_section``): each
returns ``FieldError`` values (``admission.field_errors``) worded as kube-apiserver
words the CEL rule or schema keyword it stands for.  They know fields, never a
topology: the caller passes its path and, where upstream's wording differs
between sections, the message.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ovnk_core.admission.field_errors import (
    FieldError,
    integer_errors,
    list_errors,
    required,
    too_few_properties,
    unsupported,
    wrong_type,
)
from ovnk_core.networks.join_subnets import join_subnet_problems
from ovnk_core.udn_section import PRIMARY

JSON = dict[str, Any]
IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_net(text: Any) -> IPNet | None:
    """``text`` as a network (host bits allowed), ``None`` when it is not one."""
    try:
        return ipaddress.ip_network(str(text), strict=False)
    except ValueError:
        return None


def parse_strict_net(value: Any) -> IPNet | None:
    """``value`` as a network without host bits, ``None`` otherwise."""
    try:
        return ipaddress.ip_network(str(value), strict=True)
    except ValueError:
        return None


def parse_ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """``text`` as an address, ``None`` when it is not one."""
    try:
        return ipaddress.ip_address(str(text))
    except ValueError:
        return None


def contains(outer: IPNet, inner: IPNet) -> bool:
    """CEL's ``cidr(outer).containsCIDR(inner)`` (false across IP families)."""
    return outer.version == inner.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def parsed_nets(values: Any) -> list[IPNet]:
    """The entries of a CIDR list that parse (none of an absent list or a scalar)."""
    if not isinstance(values, list | tuple | str | dict):
        return []
    return [net for net in (parse_net(value) for value in values) if net is not None]


def check_cidr_list(values: Any, path: str, min_items: int, max_items: int,
                    dual_stack: bool = False) -> list[FieldError]:
    """A list of CIDR strings (``items: cidr()``) of ``min_items``..``max_items``; with
    ``dual_stack``, two entries must be of different families."""
    if not isinstance(values, list):
        return [wrong_type(path, values, "array")]
    errors = list_errors(path, values, min_items, max_items)
    nets = []
    for index, value in enumerate(values):
        net = parse_net(value)
        if not isinstance(value, str):
            errors.append(wrong_type(f"{path}[{index}]", value, "string"))
        elif net is None or "/" not in value:
            errors.append(FieldError(f"{path}[{index}]", "CIDR is invalid", value))
        else:
            nets.append(net)
    if dual_stack and len(nets) == 2 and nets[0].version == nets[1].version:
        errors.append(FieldError(path, "When 2 CIDRs are set, they must be from different IP "
                                       "families"))
    return errors


def mtu_errors(config: JSON, path: str, v6_message: str, subnets: list[IPNet]) -> list[
        FieldError]:
    """``mtu`` (576..65536), and at least 1280 with an IPv6 subnet (``v6_message``)."""
    errors = []
    mtu = config.get("mtu")
    if mtu is not None:
        errors += integer_errors(f"{path}.mtu", mtu, 576, 65536)
        if not errors and any(net.version == 6 for net in subnets) and mtu < 1280:
            errors.append(FieldError(path, v6_message))
    return errors


def check_role(config: JSON, path: str, allowed: tuple[str, ...]) -> list[FieldError]:
    """The required ``role``, one of ``allowed``."""
    role = config.get("role")
    if role is None:
        return [required(f"{path}.role")]
    if not isinstance(role, str):
        return [wrong_type(f"{path}.role", role, "string")]
    if role not in allowed:
        return [unsupported(f"{path}.role", role, allowed)]
    return []


def join_errors(config: JSON, path: str, role: Any, subnets: list[IPNet]) -> list[
        FieldError]:
    """Upstream's joinSubnets rules, then ovnk's: a join CIDR of every family of the
    subnets, each large enough for every node's gateway router (``join_subnets``)."""
    if "joinSubnets" not in config:
        return []
    joins = config["joinSubnets"]
    errors = check_cidr_list(joins, f"{path}.joinSubnets", 1, 2, True)
    if role != PRIMARY:
        errors.append(FieldError(path, "JoinSubnets is only supported for Primary network"))
    elif not errors:
        nets = [net for net in (parse_net(j) for j in joins) if net is not None]
        errors += [FieldError(f"{path}.joinSubnets", problem) for problem in
                   join_subnet_problems("joinSubnets", nets, {s.version for s in subnets})]
    return errors


def ipam_mode(config: JSON) -> Any:
    """``ipam.mode`` of a section (``None`` when unset or ``ipam`` is not an object)."""
    ipam = config.get("ipam")
    return ipam.get("mode") if isinstance(ipam, dict) else None


def check_ipam_subnets(config: JSON, path: str, message: str) -> list[FieldError]:
    """The ``ipam`` object (``crd_schemas.ipam``) and ``subnets`` being required unless
    ``ipam.mode`` is ``Disabled`` (``message``: the section's wording of that rule)."""
    ipam = config.get("ipam")
    errors = []
    mode = None
    if ipam is not None:
        if not isinstance(ipam, dict):
            return [wrong_type(f"{path}.ipam", ipam, "object")]
        if not ipam:
            return [too_few_properties(f"{path}.ipam", 0, 1)]
        mode = ipam.get("mode")
        if mode not in (None, "Enabled", "Disabled"):
            errors.append(unsupported(f"{path}.ipam.mode", mode, ("Enabled", "Disabled")))
        lifecycle = ipam.get("lifecycle")
        if lifecycle not in (None, "Persistent"):
            errors.append(unsupported(f"{path}.ipam.lifecycle", lifecycle, ("Persistent",)))
        if lifecycle == "Persistent" and mode not in (None, "Enabled"):
            errors.append(FieldError(f"{path}.ipam", "lifecycle Persistent is only supported "
                                                     "when ipam.mode is Enabled"))
    enabled = mode in (None, "Enabled")
    if enabled and "subnets" not in config:
        errors.append(FieldError(path, message))
    return errors


def immutable_errors(config: JSON, old: JSON | None, path: str, message: str) -> list[
        FieldError]:
    """A section immutable as a whole (``crd_schemas.immutable``): ``message`` on change."""
    if old is not None and config != old:
        return [FieldError(path, message)]
    return []
