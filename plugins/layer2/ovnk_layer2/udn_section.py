"""The ``layer2`` section of UDNs and CUDNs: its schema, its rules, its NAD keys.

Upstream's ``Layer2Config``, immutable as a whole: a role, plain subnets
(optional when ``ipam.mode`` is ``Disabled``), join subnets for a primary
network, persistent IPs, and a primary network's preconfigured addresses
(``reservedSubnets``, ``infrastructureSubnets``, ``defaultGatewayIPs``).  A
primary network's NAD also gets a ``transitSubnet`` for its transit router.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ovnk_core.admission.field_errors import list_errors
from ovnk_core.config import Config
from ovnk_core.manifests.crd_schemas import (
    IPV6_MTU_RULE,
    cel,
    cidr,
    dual_stack_cidrs,
    dual_stack_ips,
    immutable,
    ipam,
    mtu,
    role,
)
from ovnk_core.udn.nad import persistent_ips, transit_subnets
from ovnk_core.udn.section_checks import (
    IPNet,
    check_cidr_list,
    check_ipam_subnets,
    check_role,
    contains,
    immutable_errors,
    ipam_mode,
    join_errors,
    mtu_errors,
    parse_ip,
    parse_net,
    parse_strict_net,
    parsed_nets,
)
from ovnk_core.udn_section import (
    EVPN,
    MAC_VRF,
    PRIMARY,
    SECONDARY,
    FieldError,
    UdnSection,
)

JSON = dict[str, Any]

PRECONFIGURED_KEYS = ("reservedSubnets", "infrastructureSubnets", "defaultGatewayIPs")
"""Rendered only with ``--enable-preconfigured-udn-addresses``."""


class Layer2Section(UdnSection):
    """``spec[.network].layer2``, for UDNs and CUDNs."""

    topology = "Layer2"
    key = "layer2"
    transports = frozenset({EVPN})
    evpn_vrfs = ((MAC_VRF, True),)
    crd_position = 20

    def schema(self) -> JSON:
        return immutable({
            "type": "object", "required": ["role"],
            "properties": {
                "role": role([PRIMARY, SECONDARY]),
                "mtu": mtu(),
                "subnets": dual_stack_cidrs(),
                "reservedSubnets": {"type": "array", "minItems": 1, "maxItems": 25,
                                    "items": cidr()},
                "infrastructureSubnets": {"type": "array", "minItems": 1, "maxItems": 4,
                                          "items": cidr()},
                "defaultGatewayIPs": dual_stack_ips(),
                "joinSubnets": dual_stack_cidrs(),
                "ipam": ipam(),
            },
            "x-kubernetes-validations": [
                cel("has(self.ipam) && has(self.ipam.mode) && self.ipam.mode != 'Enabled' || "
                    "has(self.subnets)",
                    "Subnets is required with ipam.mode is Enabled or unset"),
                cel("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' "
                    "|| !has(self.subnets)", "Subnets must be unset when ipam.mode is Disabled"),
                cel("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' "
                    "|| self.role == 'Secondary'",
                    "Disabled ipam.mode is only supported for Secondary network"),
                cel("!has(self.joinSubnets) || self.role == 'Primary'",
                    "JoinSubnets is only supported for Primary network"),
                cel(IPV6_MTU_RULE.replace("exists_one", "exists"),
                    "MTU should be greater than or equal to 1280 when IPv6 subnet is used"),
                cel("!has(self.defaultGatewayIPs) || self.role == 'Primary'",
                    "defaultGatewayIPs is only supported for Primary network"),
                cel("!has(self.defaultGatewayIPs) || self.defaultGatewayIPs.all(ip, "
                    "self.subnets.exists(s, cidr(s).containsIP(ip)))",
                    "defaultGatewayIPs must belong to one of the subnets specified in the "
                    "subnets field"),
                cel("!has(self.defaultGatewayIPs) || size(self.defaultGatewayIPs) == "
                    "size(self.subnets)",
                    "defaultGatewayIPs must be specified for all IP families"),
                cel("!has(self.reservedSubnets) || has(self.subnets)",
                    "reservedSubnets must be unset when subnets is unset"),
                cel("!has(self.reservedSubnets) || self.role == 'Primary'",
                    "reservedSubnets is only supported for Primary network"),
                cel("!has(self.infrastructureSubnets) || has(self.subnets)",
                    "infrastructureSubnets must be unset when subnets is unset"),
                cel("!has(self.infrastructureSubnets) || self.role == 'Primary'",
                    "infrastructureSubnets is only supported for Primary network"),
                cel("!has(self.defaultGatewayIPs) || !has(self.infrastructureSubnets) || "
                    "self.defaultGatewayIPs.all(ip, self.infrastructureSubnets.exists(s, "
                    "cidr(s).containsIP(ip)))",
                    "defaultGatewayIPs have to belong to infrastructureSubnets"),
                cel("!has(self.reservedSubnets) || self.reservedSubnets.all(r, "
                    "self.subnets.exists(s, cidr(s).containsCIDR(r)))",
                    "reservedSubnets must be subnetworks of the networks specified in the "
                    "subnets field", ".reservedSubnets"),
                cel("!has(self.infrastructureSubnets) || self.infrastructureSubnets.all(r, "
                    "self.subnets.exists(s, cidr(s).containsCIDR(r)))",
                    "infrastructureSubnets must be subnetworks of the networks specified in "
                    "the subnets field", ".infrastructureSubnets"),
                cel("!has(self.infrastructureSubnets) || !has(self.reservedSubnets) || "
                    "self.infrastructureSubnets.all(i, self.reservedSubnets.all(r, "
                    "!cidr(i).containsCIDR(r) && !cidr(r).containsCIDR(i)))",
                    "infrastructureSubnets and reservedSubnets must not overlap"),
                cel("!has(self.infrastructureSubnets) || self.infrastructureSubnets.all(s, "
                    "cidr(s).masked() == cidr(s))",
                    "infrastructureSubnets must be a masked network address (no host bits "
                    "set)"),
                cel("!has(self.reservedSubnets) || self.reservedSubnets.all(s, "
                    "cidr(s).masked() == cidr(s))",
                    "reservedSubnets must be a masked network address (no host bits set)"),
            ],
        }, "Layer2 is immutable")

    def validate(self, section: JSON, old: JSON | None, path: str) -> list[FieldError]:
        errors = check_role(section, path, (PRIMARY, SECONDARY))
        network_role = section.get("role")
        errors += check_ipam_subnets(section, path, "Subnets is required with ipam.mode is "
                                                    "Enabled or unset")
        if ipam_mode(section) == "Disabled":
            if "subnets" in section:
                errors.append(FieldError(path, "Subnets must be unset when ipam.mode is "
                                               "Disabled"))
            if network_role != SECONDARY:
                errors.append(FieldError(path, "Disabled ipam.mode is only supported for "
                                               "Secondary network"))
        subnets: list[IPNet] = []
        if "subnets" in section:
            errors += check_cidr_list(section["subnets"], f"{path}.subnets", 1, 2, True)
            subnets = parsed_nets(section.get("subnets"))
        errors += join_errors(section, path, network_role, subnets)
        errors += mtu_errors(section, path, "MTU should be greater than or equal to 1280 when "
                                            "IPv6 subnet is used", subnets)
        errors += _address_errors(section, path, network_role, subnets)
        errors += immutable_errors(section, old, path, "Layer2 is immutable")
        return errors

    def render(self, section: JSON, role: str, config: Config) -> JSON:
        keys: JSON = {}
        if section.get("subnets"):
            keys["subnets"] = ",".join(section["subnets"])
        if role == "primary":
            keys["transitSubnet"] = transit_subnets(list(section.get("subnets") or []))
        if persistent_ips(section, config):
            keys["allowPersistentIPs"] = True
        if config.enable_preconfigured_udn_addresses:
            for key in PRECONFIGURED_KEYS:
                if section.get(key):
                    keys[key] = ",".join(section[key])
        return keys

    def ignored_fields(self, section: JSON, config: Config) -> str | None:
        """The preconfigured addresses, without ``--enable-preconfigured-udn-addresses``:
        upstream renders the NAD without them and says nothing."""
        given = [key for key in PRECONFIGURED_KEYS if section.get(key)]
        if not given or config.enable_preconfigured_udn_addresses:
            return None
        return (f"{', '.join(given)} {'is' if len(given) == 1 else 'are'} ignored: "
                "preconfigured UDN addresses are disabled (--enable-preconfigured-udn-"
                "addresses); pods may get any address of the subnets, and the gateway and "
                "management addresses are the subnets' first two")


def _address_errors(config: JSON, path: str, network_role: Any,
                    subnets: list[IPNet]) -> list[FieldError]:
    """The rules of the preconfigured addresses of a primary network."""
    errors: list[FieldError] = []
    gateways = config.get("defaultGatewayIPs")
    reserved = config.get("reservedSubnets")
    infra = config.get("infrastructureSubnets")
    if gateways is not None:
        ips = [parse_ip(g) for g in gateways] if isinstance(gateways, list) else []
        if network_role != PRIMARY:
            errors.append(FieldError(path, "defaultGatewayIPs is only supported for Primary "
                                           "network"))
        errors += list_errors(f"{path}.defaultGatewayIPs", gateways, 1, 2)
        errors += [FieldError(f"{path}.defaultGatewayIPs[{index}]", "IP is invalid",
                              gateways[index]) for index, ip in enumerate(ips) if ip is None]
        ips_ok = [ip for ip in ips if ip is not None]
        if not all(any(ip in net for net in subnets) for ip in ips_ok):
            errors.append(FieldError(path, "defaultGatewayIPs must belong to one of the subnets "
                                           "specified in the subnets field"))
        if len(ips) != len(subnets):
            errors.append(FieldError(path, "defaultGatewayIPs must be specified for all IP "
                                           "families"))
        if infra is not None:
            infra_nets = parsed_nets(infra)
            if not all(any(ip in net for net in infra_nets) for ip in ips_ok):
                errors.append(FieldError(path, "defaultGatewayIPs have to belong to "
                                               "infrastructureSubnets"))
    for name, values, max_items in (("reservedSubnets", reserved, 25),
                                    ("infrastructureSubnets", infra, 4)):
        if values is None:
            continue
        errors += check_cidr_list(values, f"{path}.{name}", 1, max_items)
        if "subnets" not in config:
            errors.append(FieldError(path, f"{name} must be unset when subnets is unset"))
        if network_role != PRIMARY:
            errors.append(FieldError(path, f"{name} is only supported for Primary network"))
        nets = [(v, parse_net(v)) for v in values] if isinstance(values, list) else []
        if not all(n is not None and any(contains(s, n) for s in subnets) for _, n in nets):
            errors.append(FieldError(f"{path}.{name}", f"{name} must be subnetworks of the "
                                     "networks specified in the subnets field"))  # fieldPath
        if any(n is not None and ipaddress.ip_network(str(v), strict=False) != parse_strict_net(v)
               for v, n in nets):
            errors.append(FieldError(path, f"{name} must be a masked network address (no host "
                                           "bits set)"))
    if reserved is not None and infra is not None:
        pairs = [(parse_net(a), parse_net(b)) for a in infra for b in reserved]
        if any(a is not None and b is not None and a.version == b.version and a.overlaps(b)
               for a, b in pairs):
            errors.append(FieldError(path, "infrastructureSubnets and reservedSubnets must not "
                                           "overlap"))
    return errors
