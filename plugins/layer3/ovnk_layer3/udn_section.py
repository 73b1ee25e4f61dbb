"""The ``layer3`` section of UDNs and CUDNs: its schema, its rules, its NAD keys.

Upstream's ``Layer3Config``: a role, per-field immutability, up to 400
subnets each with an optional ``hostSubnet`` (the prefix length of every
node's slice), and join subnets for a primary network.  Rendered as the NAD's
``subnets`` (``CIDR[/HOSTPREFIX]`` entries).
"""

from __future__ import annotations

from typing import Any

from ovnk_core.admission.field_errors import integer_errors, list_errors, required, wrong_type
from ovnk_core.config import Config
from ovnk_core.manifests.crd_schemas import cel, cidr, dual_stack_cidrs, mtu, role
from ovnk_core.networks.addressing import v4_host_prefix_problem
from ovnk_core.udn.section_checks import (
    IPNet,
    check_role,
    contains,
    join_errors,
    mtu_errors,
    parse_net,
)
from ovnk_core.udn_section import (
    EVPN,
    IP_VRF,
    MAC_VRF,
    NO_OVERLAY,
    PRIMARY,
    SECONDARY,
    FieldError,
    UdnSection,
)

JSON = dict[str, Any]


class Layer3Section(UdnSection):
    """``spec[.network].layer3``, for UDNs and CUDNs."""

    topology = "Layer3"
    key = "layer3"
    transports = frozenset({NO_OVERLAY, EVPN})
    evpn_vrfs = ((IP_VRF, True), (MAC_VRF, False))
    crd_position = 10

    def schema(self) -> JSON:
        subnet = {"type": "object", "required": ["cidr"], "properties": {
            "cidr": cidr(),
            "hostSubnet": {"type": "integer", "format": "int32", "minimum": 1,
                           "maximum": 127}},
            "x-kubernetes-validations": [
                cel("!has(self.hostSubnet) || !isCIDR(self.cidr) || "
                    "self.hostSubnet > cidr(self.cidr).prefixLength()",
                    "HostSubnet must be smaller than CIDR subnet"),
                cel("!has(self.hostSubnet) || !isCIDR(self.cidr) || "
                    "(cidr(self.cidr).ip().family() != 4 || self.hostSubnet < 32)",
                    "HostSubnet must < 32 for ipv4 CIDR")]}
        return {
            "type": "object", "required": ["role", "subnets"],
            "properties": {
                "role": role([PRIMARY, SECONDARY]) | {"x-kubernetes-validations": [
                    cel("self == oldSelf", "role is immutable")]},
                "mtu": mtu() | {"x-kubernetes-validations": [
                    cel("self == oldSelf", "mtu is immutable")]},
                "subnets": {"type": "array", "minItems": 1, "maxItems": 400, "items": subnet},
                "joinSubnets": dual_stack_cidrs() | {"x-kubernetes-validations": [
                    cel("self == oldSelf", "joinSubnets is immutable")]},
            },
            "x-kubernetes-validations": [
                cel("self.role != 'Secondary' || !has(oldSelf.subnets) || "
                    "self.subnets == oldSelf.subnets",
                    "Subnets is immutable for Secondary role"),
                cel("self.role != 'Secondary' || size(self.subnets) <= 2",
                    "Secondary networks may define at most 2 subnets"),
                cel("self.role != 'Secondary' || size(self.subnets) != 2 || "
                    "cidr(self.subnets[0].cidr).ip().family() != "
                    "cidr(self.subnets[1].cidr).ip().family()",
                    "When 2 CIDRs are set for Secondary networks, they must be from different "
                    "IP families"),
                cel("!has(self.joinSubnets) || self.role == 'Primary'",
                    "JoinSubnets is only supported for Primary network"),
                cel("!has(self.mtu) || !self.subnets.exists(i, isCIDR(i.cidr) && "
                    "cidr(i.cidr).ip().family() == 6) || self.mtu >= 1280",
                    "MTU should be greater than or equal to 1280 when IPv6 subnet is used"),
                cel("oldSelf.subnets.all(o, self.subnets.exists(n, n.cidr == o.cidr))",
                    "Removing existing subnets is not allowed"),
                cel("self.subnets.all(a, self.subnets.all(b, a.cidr == b.cidr || "
                    "!cidr(a.cidr).containsCIDR(b.cidr)))",
                    "Subnets must not overlap or contain each other"),
                cel("self.subnets.all(a, self.subnets.exists_one(b, a.cidr == b.cidr))",
                    "Subnets with same CIDR are not allowed"),
            ],
        }

    def validate(self, section: JSON, old: JSON | None, path: str) -> list[FieldError]:
        errors = check_role(section, path, (PRIMARY, SECONDARY))
        subnets = section.get("subnets")
        if subnets is None:
            errors.append(required(f"{path}.subnets"))
        else:
            errors += list_errors(f"{path}.subnets", subnets, 1, 400)
        if not isinstance(subnets, list):
            subnets = []
        parsed: list[tuple[IPNet, int | None, str]] = []
        for index, subnet in enumerate(subnets):
            item = f"{path}.subnets[{index}]"
            if not isinstance(subnet, dict):
                errors.append(wrong_type(item, subnet, "object"))
                continue
            text = subnet.get("cidr")
            net = parse_net(text)
            if not isinstance(text, str):
                errors.append(required(f"{item}.cidr") if text is None else
                              wrong_type(f"{item}.cidr", text, "string"))
                continue
            if net is None or "/" not in text:
                errors.append(FieldError(f"{item}.cidr", "CIDR is invalid", text))
                continue
            host = subnet.get("hostSubnet")
            if host is not None:
                if host_errors := integer_errors(f"{item}.hostSubnet", host, 1, 127):
                    errors += host_errors
                    host = None
                else:
                    if host <= net.prefixlen:
                        errors.append(FieldError(item, "HostSubnet must be smaller than CIDR "
                                                       "subnet"))
                    if net.version == 4 and host >= 32:
                        errors.append(FieldError(item, "HostSubnet must < 32 for ipv4 CIDR"))
                    elif net.version == 4 and (problem := v4_host_prefix_problem(host)):
                        errors.append(FieldError(item, problem))
            parsed.append((net, host, str(text)))
        network_role = section.get("role")
        nets = [net for net, _, _ in parsed]
        if network_role == SECONDARY:
            if len(subnets) > 2:
                errors.append(FieldError(path, "Secondary networks may define at most 2 "
                                               "subnets"))
            elif len(nets) == 2 and nets[0].version == nets[1].version:
                errors.append(FieldError(path, "When 2 CIDRs are set for Secondary networks, "
                                               "they must be from different IP families"))
        errors += join_errors(section, path, network_role, nets)
        errors += mtu_errors(section, path, "MTU should be greater than or equal to 1280 when "
                                            "IPv6 subnet is used", nets)
        texts = [text for _, _, text in parsed]
        if len(set(texts)) != len(texts):  # rules of Layer3Config: "object" at the section
            errors.append(FieldError(path, "Subnets with same CIDR are not allowed"))
        elif any(a is not b and contains(a, b) for a in nets for b in nets):
            errors.append(FieldError(path, "Subnets must not overlap or contain each other"))
        for version in (4, 6):
            hosts = {host for net, host, _ in parsed if net.version == version}
            if len(hosts) > 1:
                errors.append(FieldError(path, "Subnets from the same IP family must use the "
                                               "same hostSubnet value"))
        if old:
            errors += _update_errors(section, old, path)
        return errors

    def render(self, section: JSON, role: str, config: Config) -> JSON:
        return {"subnets": ",".join(
            f"{s['cidr']}/{s['hostSubnet']}" if s.get("hostSubnet") else str(s["cidr"])
            for s in section.get("subnets") or [])}


def _update_errors(config: JSON, old: JSON, path: str) -> list[FieldError]:
    errors = []
    if config.get("role") != old.get("role"):
        errors.append(FieldError(f"{path}.role", "role is immutable", config.get("role")))
    if config.get("mtu") != old.get("mtu"):
        errors.append(FieldError(f"{path}.mtu", "mtu is immutable", config.get("mtu")))
    if config.get("joinSubnets") != old.get("joinSubnets"):
        errors.append(FieldError(f"{path}.joinSubnets", "joinSubnets is immutable"))
    new_subnets = {s.get("cidr"): s.get("hostSubnet") for s in config.get("subnets") or []
                   if isinstance(s, dict)}
    old_subnets = {s.get("cidr"): s.get("hostSubnet") for s in old.get("subnets") or []
                   if isinstance(s, dict)}
    if config.get("role") == SECONDARY and config.get("subnets") != old.get("subnets"):
        errors.append(FieldError(path, "Subnets is immutable for Secondary role"))
    if any(text not in new_subnets for text in old_subnets):
        errors.append(FieldError(path, "Removing existing subnets is not allowed"))
    if any(text in new_subnets and new_subnets[text] != host
           for text, host in old_subnets.items()):
        errors.append(FieldError(path, "hostSubnet is immutable"))
    return errors
