"""OpenAPI v3 schemas of the UDN API, with upstream's CEL rules and messages.

The CRDs must be right for a real cluster, so the schemas carry the same
``x-kubernetes-validations`` (CEL) rules and messages as upstream's
generated CRDs.  The local API server does not evaluate CEL; the same rules
are implemented in Python in ``ovnk_core.udn.validation`` and registered as
admission hooks there.  Shared pieces (Layer3/Layer2/Localnet configs) are
built once and used by both kinds.
"""

from __future__ import annotations

from typing import Any

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


def layer3_config() -> JSON:
    subnet = {"type": "object", "required": ["cidr"], "properties": {
        "cidr": cidr(),
        "hostSubnet": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 127}},
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
            "role": role(["Primary", "Secondary"]) | {"x-kubernetes-validations": [
                cel("self == oldSelf", "role is immutable")]},
            "mtu": mtu() | {"x-kubernetes-validations": [
                cel("self == oldSelf", "mtu is immutable")]},
            "subnets": {"type": "array", "minItems": 1, "maxItems": 400, "items": subnet},
            "joinSubnets": dual_stack_cidrs() | {"x-kubernetes-validations": [
                cel("self == oldSelf", "joinSubnets is immutable")]},
        },
        "x-kubernetes-validations": [
            cel("self.role != 'Secondary' || !has(oldSelf.subnets) || "
                "self.subnets == oldSelf.subnets", "Subnets is immutable for Secondary role"),
            cel("self.role != 'Secondary' || size(self.subnets) <= 2",
                "Secondary networks may define at most 2 subnets"),
            cel("self.role != 'Secondary' || size(self.subnets) != 2 || "
                "cidr(self.subnets[0].cidr).ip().family() != "
                "cidr(self.subnets[1].cidr).ip().family()",
                "When 2 CIDRs are set for Secondary networks, they must be from different IP "
                "families"),
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


def layer2_config() -> JSON:
    return {
        "type": "object", "required": ["role"],
        "properties": {
            "role": role(["Primary", "Secondary"]),
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
                "has(self.subnets)", "Subnets is required with ipam.mode is Enabled or unset"),
            cel("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || "
                "!has(self.subnets)", "Subnets must be unset when ipam.mode is Disabled"),
            cel("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode != 'Disabled' || "
                "self.role == 'Secondary'",
                "Disabled ipam.mode is only supported for Secondary network"),
            cel("!has(self.joinSubnets) || self.role == 'Primary'",
                "JoinSubnets is only supported for Primary network"),
            cel(IPV6_MTU_RULE.replace("exists_one", "exists"),
                "MTU should be greater than or equal to 1280 when IPv6 subnet is used"),
            cel("!has(self.defaultGatewayIPs) || self.role == 'Primary'",
                "defaultGatewayIPs is only supported for Primary network"),
            cel("!has(self.defaultGatewayIPs) || self.defaultGatewayIPs.all(ip, "
                "self.subnets.exists(s, cidr(s).containsIP(ip)))",
                "defaultGatewayIPs must belong to one of the subnets specified in the subnets "
                "field"),
            cel("!has(self.defaultGatewayIPs) || size(self.defaultGatewayIPs) == "
                "size(self.subnets)", "defaultGatewayIPs must be specified for all IP families"),
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
                "reservedSubnets must be subnetworks of the networks specified in the subnets "
                "field", ".reservedSubnets"),
            cel("!has(self.infrastructureSubnets) || self.infrastructureSubnets.all(r, "
                "self.subnets.exists(s, cidr(s).containsCIDR(r)))",
                "infrastructureSubnets must be subnetworks of the networks specified in the "
                "subnets field", ".infrastructureSubnets"),
            cel("!has(self.infrastructureSubnets) || !has(self.reservedSubnets) || "
                "self.infrastructureSubnets.all(i, self.reservedSubnets.all(r, "
                "!cidr(i).containsCIDR(r) && !cidr(r).containsCIDR(i)))",
                "infrastructureSubnets and reservedSubnets must not overlap"),
            cel("!has(self.infrastructureSubnets) || self.infrastructureSubnets.all(s, "
                "cidr(s).masked() == cidr(s))",
                "infrastructureSubnets must be a masked network address (no host bits set)"),
            cel("!has(self.reservedSubnets) || self.reservedSubnets.all(s, "
                "cidr(s).masked() == cidr(s))",
                "reservedSubnets must be a masked network address (no host bits set)"),
        ],
    }


def localnet_config() -> JSON:
    return {
        "type": "object", "required": ["role", "physicalNetworkName"],
        "properties": {
            "role": role(["Secondary"]),
            "physicalNetworkName": {
                "type": "string", "minLength": 1, "maxLength": 253,
                "x-kubernetes-validations": [cel(
                    "self.matches('^[^,:]+$')",
                    "physicalNetworkName cannot contain `,` or `:` characters")]},
            "subnets": dual_stack_cidrs(),
            "excludeSubnets": {"type": "array", "minItems": 1, "maxItems": 25, "items": cidr()},
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
                    "vlan access config is required when vlan mode is 'Access', and forbidden "
                    "otherwise")]},
        },
        "x-kubernetes-validations": [
            cel("!has(self.ipam) || !has(self.ipam.mode) || self.ipam.mode == 'Enabled' ? "
                "has(self.subnets) : !has(self.subnets)",
                "Subnets is required with ipam.mode is Enabled or unset, and forbidden "
                "otherwise"),
            cel("!has(self.excludeSubnets) || has(self.subnets)",
                "excludeSubnets must be unset when subnets is unset"),
            cel(IPV6_MTU_RULE.replace("exists_one", "exists"),
                "MTU should be greater than or equal to 1280 when an IPv6 subnet is used"),
        ],
    }


def topology_rules(kinds: list[str]) -> list[JSON]:
    return [cel(f"has(self.topology) && self.topology == '{kind}' ? has(self.{kind.lower()}) "
                f": !has(self.{kind.lower()})",
                f"spec.{kind.lower()} is required when topology is {kind} and forbidden "
                "otherwise") for kind in kinds]


def immutable(schema: JSON, message: str) -> JSON:
    rules = list(schema.get("x-kubernetes-validations", []))
    rules.append(cel("self == oldSelf", message))
    return schema | {"x-kubernetes-validations": rules}


def udn_spec() -> JSON:
    return {
        "type": "object", "required": ["topology"],
        "properties": {
            "topology": {"type": "string", "enum": ["Layer2", "Layer3"],
                         "x-kubernetes-validations": [cel("self == oldSelf",
                                                          "Topology is immutable")]},
            "layer3": layer3_config(),
            "layer2": immutable(layer2_config(), "Layer2 is immutable"),
        },
        "x-kubernetes-validations": topology_rules(["Layer3", "Layer2"]),
    }


def route_target() -> JSON:
    return {"type": "string", "maxLength": 21}


def vrf() -> JSON:
    return {"type": "object", "required": ["vni"], "properties": {
        "vni": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 16777215},
        "routeTarget": route_target()}}


def network_spec() -> JSON:
    rules = [
        *topology_rules(["Layer3", "Layer2", "Localnet"]),
        cel("!has(self.transport) || self.transport != 'NoOverlay' || "
            "(self.topology == 'Layer3' && self.layer3.role == 'Primary')",
            "transport 'NoOverlay' is only supported for Layer3 primary networks"),
        cel("!has(self.transport) || self.transport != 'NoOverlay' || has(self.noOverlay)",
            "spec.noOverlay is required when type transport is 'NoOverlay'"),
        cel("!has(self.noOverlay) || (has(self.transport) && self.transport == 'NoOverlay')",
            "spec.noOverlay is forbidden when transport type is not 'NoOverlay'"),
        cel("!has(self.transport) || self.transport != 'EVPN' || "
            "(self.topology == 'Layer3' && self.layer3.role == 'Primary') || "
            "(self.topology == 'Layer2' && self.layer2.role == 'Primary')",
            "transport 'EVPN' is only supported for Layer2 or Layer3 primary networks"),
        cel("!has(self.transport) || self.transport != 'EVPN' || has(self.evpn)",
            "spec.evpn field is required when transport is 'EVPN'"),
        cel("!has(self.evpn) || (has(self.transport) && self.transport == 'EVPN')",
            "spec.evpn field is forbidden when transport is not 'EVPN'"),
        cel("!has(self.evpn) || self.topology != 'Layer2' || has(self.evpn.macVRF)",
            "spec.evpn.macVRF field is required for Layer2 topology when transport is 'EVPN'"),
        cel("!has(self.evpn) || self.topology != 'Layer3' || has(self.evpn.ipVRF)",
            "spec.evpn.ipVRF field is required for Layer3 topology when transport is 'EVPN'"),
        cel("!has(self.evpn) || self.topology != 'Layer3' || !has(self.evpn.macVRF)",
            "spec.evpn.macVRF field is forbidden for Layer3 topology when transport is 'EVPN'"),
    ]
    return {
        "type": "object", "required": ["topology"],
        "properties": {
            "topology": {"type": "string", "enum": ["Layer2", "Layer3", "Localnet"],
                         "x-kubernetes-validations": [cel("self == oldSelf",
                                                          "Topology is immutable")]},
            "layer3": layer3_config(),
            "layer2": immutable(layer2_config(), "Layer2 is immutable"),
            "localnet": immutable(localnet_config(), "Localnet is immutable"),
            "transport": {"type": "string", "enum": ["NoOverlay", "EVPN"],
                          "x-kubernetes-validations": [cel("self == oldSelf",
                                                           "transport is immutable")]},
            "noOverlay": immutable({"type": "object", "properties": {
                "outboundSNAT": {"type": "string", "enum": ["Enabled", "Disabled"]},
                "routing": {"type": "string", "enum": ["Managed", "Unmanaged"]}}},
                "noOverlay is immutable"),
            "evpn": {"type": "object", "required": ["vtep"], "properties": {
                "vtep": {"type": "string", "minLength": 1},
                "macVRF": vrf(), "ipVRF": vrf()},
                "x-kubernetes-validations": [
                    cel("has(self.macVRF) || has(self.ipVRF)",
                        "at least one of macVRF or ipVRF must be set"),
                    cel("!has(self.macVRF) || !has(self.ipVRF) || "
                        "self.macVRF.vni != self.ipVRF.vni",
                        "macVRF and ipVRF must have different VNIs")]},
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


def cudn_spec() -> JSON:
    return {
        "type": "object", "required": ["namespaceSelector", "network"],
        "properties": {
            "namespaceSelector": label_selector(),
            "network": network_spec(),
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
