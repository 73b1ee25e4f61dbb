"""The ``localnet`` section of CUDNs: its schema, its rules, its NAD keys.

Upstream's ``LocalnetConfig``, for ClusterUserDefinedNetworks only and
immutable as a whole: a secondary role, the physical network's name, subnets
(required unless ``ipam.mode`` is ``Disabled``) with excluded ranges,
persistent IPs, an MTU and an access VLAN.  Its NAD always carries an
``mtu``: the section's, else the cluster MTU + 100 (no overlay to pay for).
"""

from __future__ import annotations

from typing import Any

from ovnk_core.admission.field_errors import (
    integer_errors,
    required,
    too_long,
    too_short,
    wrong_type,
)
from ovnk_core.config import Config
from ovnk_core.manifests.crd_schemas import (
    IPV6_MTU_RULE,
    cel,
    cidr,
    dual_stack_cidrs,
    immutable,
    ipam,
    mtu,
    role,
)
from ovnk_core.udn.nad import persistent_ips
from ovnk_core.udn.section_checks import (
    IPNet,
    check_cidr_list,
    check_ipam_subnets,
    check_role,
    immutable_errors,
    ipam_mode,
    mtu_errors,
    parsed_nets,
)
from ovnk_core.udn_section import SECONDARY, FieldError, UdnSection

JSON = dict[str, Any]

MTU_OVER_CLUSTER = 100
"""A localnet network's default MTU is the cluster MTU plus this (no encapsulation)."""

SUBNETS_RULE = "Subnets is required with ipam.mode is Enabled or unset, and forbidden otherwise"


def localnet_default_mtu(config: Config) -> int:
    """The MTU of a localnet network that sets none."""
    return config.mtu + MTU_OVER_CLUSTER


class LocalnetSection(UdnSection):
    """``spec.network.localnet``, for CUDNs only."""

    topology = "Localnet"
    key = "localnet"
    namespaced = False
    crd_position = 30

    def schema(self) -> JSON:
        return immutable({
            "type": "object", "required": ["role", "physicalNetworkName"],
            "properties": {
                "role": role([SECONDARY]),
                "physicalNetworkName": {
                    "type": "string", "minLength": 1, "maxLength": 253,
                    "x-kubernetes-validations": [cel(
                        "self.matches('^[^,:]+$')",
                        "physicalNetworkName cannot contain `,` or `:` characters")]},
                "subnets": dual_stack_cidrs(),
                "excludeSubnets": {"type": "array", "minItems": 1, "maxItems": 25,
                                   "items": cidr()},
                "ipam": ipam(),
                "mtu": mtu(),
                "vlan": {"type": "object", "required": ["mode"], "properties": {
                    "mode": {"type": "string", "enum": ["Access"]},
                    "access": {"type": "object", "required": ["id"], "properties": {
                        "id": {"type": "integer", "format": "int32", "minimum": 1,
                               "maximum": 4094}}}},
                    "x-kubernetes-validations": [cel(
                        "has(self.mode) && self.mode == 'Access' ? has(self.access): "
                        "!has(self.access)",
                        "vlan access config is required when vlan mode is 'Access', and "
                        "forbidden otherwise")]},
            },
            "x-kubernetes-validations": [
                cel("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode == 'Enabled' ? "
                    "has(self.subnets) : !has(self.subnets)", SUBNETS_RULE),
                cel("!has(self.excludeSubnets) || has(self.subnets)",
                    "excludeSubnets must be unset when subnets is unset"),
                cel(IPV6_MTU_RULE.replace("exists_one", "exists"),
                    "MTU should be greater than or equal to 1280 when an IPv6 subnet is used"),
            ],
        }, "Localnet is immutable")

    def validate(self, section: JSON, old: JSON | None, path: str) -> list[FieldError]:
        errors = check_role(section, path, (SECONDARY,))
        physical = section.get("physicalNetworkName")
        name_path = f"{path}.physicalNetworkName"
        if physical is None:
            errors.append(required(name_path))
        elif not isinstance(physical, str):
            errors.append(wrong_type(name_path, physical, "string"))
        elif len(physical) > 253:
            errors.append(too_long(name_path, 253))
        elif not physical:  # minLength fails, and so does the rule's matches('^[^,:]+$')
            errors += [too_short(name_path, physical, 1),
                       FieldError(name_path, "physicalNetworkName cannot contain `,` or `:` "
                                  "characters", physical)]
        elif any(ch in physical for ch in ",:"):
            errors.append(FieldError(name_path, "physicalNetworkName cannot contain `,` or `:` "
                                     "characters", physical))
        errors += check_ipam_subnets(section, path, SUBNETS_RULE)
        if ipam_mode(section) == "Disabled" and "subnets" in section:
            errors.append(FieldError(path, SUBNETS_RULE))
        subnets: list[IPNet] = []
        if "subnets" in section:
            errors += check_cidr_list(section["subnets"], f"{path}.subnets", 1, 2, True)
            subnets = parsed_nets(section.get("subnets"))
        if "excludeSubnets" in section:
            errors += check_cidr_list(section["excludeSubnets"], f"{path}.excludeSubnets", 1,
                                      25)
            if "subnets" not in section:
                errors.append(FieldError(path, "excludeSubnets must be unset when subnets is "
                                               "unset"))
        errors += mtu_errors(section, path, "MTU should be greater than or equal to 1280 when "
                                            "an IPv6 subnet is used", subnets)
        errors += _vlan_errors(section.get("vlan"), f"{path}.vlan")
        errors += immutable_errors(section, old, path, "Localnet is immutable")
        return errors

    def default_mtu(self, config: Config) -> int:
        return localnet_default_mtu(config)

    def render(self, section: JSON, role: str, config: Config) -> JSON:
        keys: JSON = {}
        if section.get("subnets"):
            keys["subnets"] = ",".join(section["subnets"])
        if persistent_ips(section, config):
            keys["allowPersistentIPs"] = True
        keys["physicalNetworkName"] = section.get("physicalNetworkName", "")
        if section.get("excludeSubnets"):
            keys["excludeSubnets"] = ",".join(section["excludeSubnets"])
        vlan = section.get("vlan") or {}
        if vlan.get("mode") == "Access":
            keys["vlanID"] = int((vlan.get("access") or {}).get("id", 0))
        return keys


def _vlan_errors(vlan: Any, path: str) -> list[FieldError]:
    if vlan is None:
        return []
    errors = []
    vlan_mode = vlan.get("mode") if isinstance(vlan, dict) else None
    has_access = isinstance(vlan, dict) and "access" in vlan
    if (vlan_mode == "Access") != has_access:
        errors.append(FieldError(path, "vlan access config is required when vlan mode is "
                                       "'Access', and forbidden otherwise"))
    vid = ((vlan or {}).get("access") or {}).get("id") if has_access else None
    if has_access:
        errors += [required(f"{path}.access.id")] if vid is None else \
            integer_errors(f"{path}.access.id", vid, 1, 4094)
    return errors
