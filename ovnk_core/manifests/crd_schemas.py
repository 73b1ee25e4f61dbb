"""OpenAPI v3 schemas of the UDN API, with upstream's CEL rules and messages.

The CRDs must be right for a real cluster, so the schemas carry the same
``x-kubernetes-validations`` (CEL) rules and messages as upstream's
generated CRDs.  The local API server does not evaluate CEL; the same rules
are implemented in Python in ``ovnk_core.udn.validation`` and registered as
admission hooks there.

The topology sections (``spec[.network].<key>``) are the topology plugins'
(``UdnSection.schema``, ``ovnk_core.udn_section``): ``udn_spec`` and
``network_spec`` take the loaded ``UdnSections`` and build the ``topology``
enum, the properties and the rules that name topologies from them.  The
other functions here are building blocks for those sections' schemas.
"""

from __future__ import annotations

from typing import Any

from ovnk_core.udn.evpn import EVPN_RULES, ROUTE_TARGET_RULES
from ovnk_core.udn.sections import UdnSections
from ovnk_core.udn.validation import evpn_vrf_message, transport_support_message
from ovnk_core.udn_section import EVPN, NO_OVERLAY, PRIMARY, TRANSPORTS

JSON = dict[str, Any]


def cel(rule: str, message: str, field_path: str | None = None) -> JSON:
    entry = {"rule": rule, "message": message}
    if field_path:
        entry["fieldPath"] = field_path
    return entry


def cidr() -> JSON:
    return {"type": "string", "maxLength": 43,
            "x-kubernetes-validations": [cel("isCIDR(self)", "CIDR is invalid")]}


def dual_stack_cidrs() -> JSON:
    return {"type": "array", "minItems": 1, "maxItems": 2, "items": cidr(),
            "x-kubernetes-validations": [cel(
                "size(self) != 2 || !isCIDR(self[0]) || !isCIDR(self[1]) || "
                "cidr(self[0]).ip().family() != cidr(self[1]).ip().family()",
                "When 2 CIDRs are set, they must be from different IP families")]}


def dual_stack_ips() -> JSON:
    return {"type": "array", "minItems": 1, "maxItems": 2,
            "items": {"type": "string", "x-kubernetes-validations": [
                cel("isIP(self)", "IP is invalid")]},
            "x-kubernetes-validations": [cel(
                "size(self) != 2 || !isIP(self[0]) || !isIP(self[1]) || "
                "ip(self[0]).family() != ip(self[1]).family()",
                "When 2 IPs are set, they must be from different IP families")]}


def role(values: list[str]) -> JSON:
    return {"type": "string", "enum": values,
            "description": "Role describes the network role in the pod."}


def mtu() -> JSON:
    return {"type": "integer", "format": "int32", "minimum": 576, "maximum": 65536}


def ipam() -> JSON:
    return {"type": "object", "minProperties": 1, "properties": {
        "mode": {"type": "string", "enum": ["Enabled", "Disabled"]},
        "lifecycle": {"type": "string", "enum": ["Persistent"]}},
        "x-kubernetes-validations": [cel(
            "!has(self.lifecycle) || self.lifecycle != 'Persistent' || !has(self.mode) || "
            "self.mode == 'Enabled'",
            "lifecycle Persistent is only supported when ipam.mode is Enabled")]}


IPV6_MTU_RULE = ("!has(self.subnets) || !has(self.mtu) || "
                 "!self.subnets.exists_one(i, isCIDR(i) && cidr(i).ip().family() == 6) || "
                 "self.mtu >= 1280")


def topology_rules(sections: UdnSections) -> list[JSON]:
    """Each section required when ``topology`` selects it and forbidden otherwise."""
    return [cel(f"has(self.topology) && self.topology == '{s.topology}' ? has(self.{s.key}) "
                f": !has(self.{s.key})",
                f"spec.{s.key} is required when topology is {s.topology} and forbidden "
                "otherwise") for s in sections]


def topology_property(sections: UdnSections) -> JSON:
    """``topology``: one of the sections' values, immutable."""
    return {"type": "string", "enum": list(sections.values()),
            "x-kubernetes-validations": [cel("self == oldSelf", "Topology is immutable")]}


def immutable(schema: JSON, message: str) -> JSON:
    rules = list(schema.get("x-kubernetes-validations", []))
    rules.append(cel("self == oldSelf", message))
    return schema | {"x-kubernetes-validations": rules}


def udn_spec(sections: UdnSections) -> JSON:
    """A UserDefinedNetwork's ``spec``: the sections a namespaced network may use."""
    allowed = sections.namespaced()
    return {
        "type": "object", "required": ["topology"],
        "properties": {
            "topology": topology_property(allowed),
            **{section.key: section.schema() for section in allowed},
        },
        "x-kubernetes-validations": topology_rules(allowed),
    }


def route_target() -> JSON:
    return {"type": "string", "maxLength": 21,
            "x-kubernetes-validations": [cel(rule, message)
                                         for rule, message in ROUTE_TARGET_RULES]}


def vrf() -> JSON:
    return {"type": "object", "required": ["vni"], "properties": {
        "vni": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 16777215},
        "routeTarget": route_target()}}


def transport_rule(transport: str, sections: UdnSections) -> JSON:
    """Only the primary networks of the topologies whose ``transports`` include it may use
    ``transport``."""
    allowed = [f"(self.topology == '{s.topology}' && self.{s.key}.role == '{PRIMARY}')"
               for s in sections if transport in s.transports]
    return cel(" || ".join([f"!has(self.transport) || self.transport != '{transport}'",
                            *allowed]), transport_support_message(transport, sections))


def evpn_vrf_rules(sections: UdnSections) -> list[JSON]:
    """Each topology's VRF requirements of an EVPN network (``evpn_vrfs``), by topology."""
    return [cel(f"!has(self.evpn) || self.topology != '{s.topology}' || "
                f"{'' if needed else '!'}has(self.evpn.{vrf})",
                evpn_vrf_message(s, vrf, needed))
            for s in sections.by_value() for vrf, needed in s.evpn_vrfs]


def network_spec(sections: UdnSections) -> JSON:
    """A ClusterUserDefinedNetwork's ``spec.network``: every section, and the transports."""
    rules = [
        *topology_rules(sections),
        transport_rule(NO_OVERLAY, sections),
        cel("!has(self.transport) || self.transport != 'NoOverlay' || has(self.noOverlay)",
            "spec.noOverlay is required when type transport is 'NoOverlay'"),
        cel("!has(self.noOverlay) || (has(self.transport) && self.transport == 'NoOverlay')",
            "spec.noOverlay is forbidden when transport type is not 'NoOverlay'"),
        transport_rule(EVPN, sections),
        cel("!has(self.transport) || self.transport != 'EVPN' || has(self.evpn)",
            "spec.evpn field is required when transport is 'EVPN'"),
        cel("!has(self.evpn) || (has(self.transport) && self.transport == 'EVPN')",
            "spec.evpn field is forbidden when transport is not 'EVPN'"),
        *evpn_vrf_rules(sections),
    ]
    return {
        "type": "object", "required": ["topology"],
        "properties": {
            "topology": topology_property(sections),
            **{section.key: section.schema() for section in sections},
            "transport": {"type": "string", "enum": list(TRANSPORTS),
                          "x-kubernetes-validations": [cel("self == oldSelf",
                                                           "transport is immutable")]},
            "noOverlay": immutable({"type": "object", "properties": {
                "outboundSNAT": {"type": "string", "enum": ["Enabled", "Disabled"]},
                "routing": {"type": "string", "enum": ["Managed", "Unmanaged"]}}},
                "noOverlay is immutable"),
            "evpn": {"type": "object", "required": ["vtep"], "properties": {
                "vtep": {"type": "string", "minLength": 1},
                "macVRF": vrf(), "ipVRF": vrf()},
                "x-kubernetes-validations": [cel(rule, message)
                                             for rule, message in EVPN_RULES]},
        },
        "x-kubernetes-validations": rules,
    }


def label_selector() -> JSON:
    requirement = {"type": "object", "required": ["key", "operator"], "properties": {
        "key": {"type": "string"}, "operator": {"type": "string"},
        "values": {"type": "array", "items": {"type": "string"},
                   "x-kubernetes-list-type": "atomic"}}}
    return {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
        "matchExpressions": {"type": "array", "items": requirement,
                             "x-kubernetes-list-type": "atomic"},
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}}


def cudn_spec(sections: UdnSections) -> JSON:
    """A ClusterUserDefinedNetwork's ``spec``."""
    return {
        "type": "object", "required": ["namespaceSelector", "network"],
        "properties": {
            "namespaceSelector": label_selector(),
            "network": network_spec(sections),
            "uplinks": {"type": "array", "minItems": 1, "maxItems": 1, "items": {
                "type": "string", "minLength": 1, "maxLength": 253,
                "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"},
                "x-kubernetes-validations": [cel("self == oldSelf", "uplinks is immutable")]},
        },
    }


def conditions_status() -> JSON:
    condition = {"type": "object",
                 "required": ["lastTransitionTime", "message", "reason", "status", "type"],
                 "properties": {
                     "lastTransitionTime": {"type": "string", "format": "date-time"},
                     "message": {"type": "string", "maxLength": 32768},
                     "observedGeneration": {"type": "integer", "format": "int64",
                                            "minimum": 0},
                     "reason": {"type": "string", "maxLength": 1024, "minLength": 1},
                     "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                     "type": {"type": "string", "maxLength": 316}}}
    return {"type": "object", "properties": {
        "conditions": {"type": "array", "items": condition,
                       "x-kubernetes-list-map-keys": ["type"],
                       "x-kubernetes-list-type": "map"}}}
