"""The ``flat`` section of UDNs and CUDNs: ``spec[.network].flat``.

A secondary network with one or two subnets (one per IP family) and an optional MTU,
immutable as a whole.  It renders ``subnets`` (comma-separated, as every NAD carries
them) into the NAD; the core adds the common keys.  Written with the building blocks
``ovnk_core`` offers every section (``manifests.crd_schemas``, ``udn.section_checks``).
"""

from __future__ import annotations

from typing import Any

from ovnk_core.admission.field_errors import required
from ovnk_core.config import Config
from ovnk_core.manifests.crd_schemas import dual_stack_cidrs, immutable, mtu, role
from ovnk_core.udn.section_checks import (
    check_cidr_list,
    check_role,
    immutable_errors,
    mtu_errors,
    parsed_nets,
)
from ovnk_core.udn_section import SECONDARY, FieldError, UdnSection

JSON = dict[str, Any]
IMMUTABLE = "Flat is immutable"


class FlatSection(UdnSection):
    topology = "Flat"
    key = "flat"

    def schema(self) -> JSON:
        return immutable({"type": "object", "required": ["role", "subnets"], "properties": {
            "role": role([SECONDARY]), "subnets": dual_stack_cidrs(), "mtu": mtu()}},
            IMMUTABLE)

    def validate(self, section: JSON, old: JSON | None, path: str) -> list[FieldError]:
        errors = check_role(section, path, (SECONDARY,))
        if "subnets" not in section:
            errors.append(required(f"{path}.subnets"))
        else:
            errors += check_cidr_list(section["subnets"], f"{path}.subnets", 1, 2,
                                      dual_stack=True)
        errors += mtu_errors(section, path, "MTU should be greater than or equal to 1280 "
                             "when an IPv6 subnet is used", parsed_nets(section.get("subnets")))
        return errors + immutable_errors(section, old, path, IMMUTABLE)

    def render(self, section: JSON, role: str, config: Config) -> JSON:
        return {"subnets": ",".join(section["subnets"])}
