"""Every rule of the UDN/CUDN schemas' CEL validations, in Python, with upstream's messages.

A real cluster evaluates these rules in the API server; here the same rules
run as admission hooks of the local API server.  Each check returns
``FieldError`` values (``udn.field_errors``): the field path and upstream's
message, printed the way kube-apiserver prints a failed CEL rule or, for the
schema keywords the rules also check, that keyword's failure.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ovnk_core.networks.addressing import v4_host_prefix_problem
from ovnk_core.networks.join_subnets import join_subnet_problems
from ovnk_core.udn.field_errors import (
    FieldError,
    integer_errors,
    list_errors,
    required,
    too_few_properties,
    too_long,
    too_short,
    unsupported,
    wrong_type,
)

JSON = dict[str, Any]
IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network

__all__ = ["FieldError", "invalid_message", "validate_cudn", "validate_udn"]


def _net(text: Any) -> IPNet | None:
    try:
        return ipaddress.ip_network(str(text), strict=False)
    except ValueError:
        return None


def _ip(text: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(str(text))
    except ValueError:
        return None


def _contains(outer: IPNet, inner: IPNet) -> bool:
    return outer.version == inner.version and inner.subnet_of(outer)  # type: ignore[arg-type]


def check_cidr_list(values: Any, path: str, min_items: int, max_items: int,
                    dual_stack: bool = False) -> list[FieldError]:
    if not isinstance(values, list):
        return [wrong_type(path, values, "array")]
    errors = list_errors(path, values, min_items, max_items)
    nets = []
    for index, value in enumerate(values):
        net = _net(value)
        if not isinstance(value, str):
            errors.append(wrong_type(f"{path}[{index}]", value, "string"))
        elif net is None or "/" not in value:
            errors.append(FieldError(f"{path}[{index}]", "CIDR is invalid", "string"))
        else:
            nets.append(net)
    if dual_stack and len(nets) == 2 and nets[0].version == nets[1].version:
        errors.append(FieldError(path, "When 2 CIDRs are set, they must be from different IP "
                                       "families", "array"))
    return errors


def _mtu_errors(config: JSON, path: str, v6_message: str, subnets: list[IPNet]) -> list[
        FieldError]:
    errors = []
    mtu = config.get("mtu")
    if mtu is not None:
        errors += integer_errors(f"{path}.mtu", mtu, 576, 65536)
        if not errors and any(net.version == 6 for net in subnets) and mtu < 1280:
            errors.append(FieldError(path, v6_message))
    return errors


def check_role(config: JSON, path: str, allowed: tuple[str, ...]) -> list[FieldError]:
    role = config.get("role")
    if role is None:
        return [required(f"{path}.role")]
    if not isinstance(role, str):
        return [wrong_type(f"{path}.role", role, "string")]
    if role not in allowed:
        return [unsupported(f"{path}.role", role, allowed)]
    return []


def check_layer3(config: JSON, old: JSON | None, path: str) -> list[FieldError]:
    errors = check_role(config, path, ("Primary", "Secondary"))
    subnets = config.get("subnets")
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
        net = _net(text)
        if not isinstance(text, str):
            errors.append(required(f"{item}.cidr") if text is None else
                          wrong_type(f"{item}.cidr", text, "string"))
            continue
        if net is None or "/" not in text:
            errors.append(FieldError(f"{item}.cidr", "CIDR is invalid", "string"))
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
    role = config.get("role")
    nets = [net for net, _, _ in parsed]
    if role == "Secondary":
        if len(subnets) > 2:
            errors.append(FieldError(path, "Secondary networks may define at most 2 subnets"))
        elif len(nets) == 2 and nets[0].version == nets[1].version:
            errors.append(FieldError(path, "When 2 CIDRs are set for Secondary networks, they "
                                           "must be from different IP families"))
    errors += _join_errors(config, path, role, nets)
    errors += _mtu_errors(config, path, "MTU should be greater than or equal to 1280 when IPv6 "
                                        "subnet is used", nets)
    texts = [text for _, _, text in parsed]
    if len(set(texts)) != len(texts):  # rules of Layer3Config: "object" at spec[.network].layer3
        errors.append(FieldError(path, "Subnets with same CIDR are not allowed"))
    elif any(a is not b and _contains(a, b) for a in nets for b in nets):
        errors.append(FieldError(path, "Subnets must not overlap or contain each other"))
    for version in (4, 6):
        hosts = {host for net, host, _ in parsed if net.version == version}
        if len(hosts) > 1:
            errors.append(FieldError(path, "Subnets from the same IP family must use the same "
                                           "hostSubnet value"))
    if old:
        errors += _layer3_update_errors(config, old, path)
    return errors


def _layer3_update_errors(config: JSON, old: JSON, path: str) -> list[FieldError]:
    errors = []
    if config.get("role") != old.get("role"):
        errors.append(FieldError(f"{path}.role", "role is immutable", "string"))
    if config.get("mtu") != old.get("mtu"):
        errors.append(FieldError(f"{path}.mtu", "mtu is immutable", "integer"))
    if config.get("joinSubnets") != old.get("joinSubnets"):
        errors.append(FieldError(f"{path}.joinSubnets", "joinSubnets is immutable", "array"))
    new_subnets = {s.get("cidr"): s.get("hostSubnet") for s in config.get("subnets") or []
                   if isinstance(s, dict)}
    old_subnets = {s.get("cidr"): s.get("hostSubnet") for s in old.get("subnets") or []
                   if isinstance(s, dict)}
    if config.get("role") == "Secondary" and config.get("subnets") != old.get("subnets"):
        errors.append(FieldError(path, "Subnets is immutable for Secondary role"))
    if any(cidr not in new_subnets for cidr in old_subnets):
        errors.append(FieldError(path, "Removing existing subnets is not allowed"))
    if any(cidr in new_subnets and new_subnets[cidr] != host
           for cidr, host in old_subnets.items()):
        errors.append(FieldError(path, "hostSubnet is immutable"))
    return errors


def _join_errors(config: JSON, path: str, role: Any, subnets: list[IPNet]) -> list[
        FieldError]:
    """Upstream's joinSubnets rules, then ovnk's: a join CIDR of every family of the
    subnets, each large enough for every node's gateway router (``join_subnets``)."""
    if "joinSubnets" not in config:
        return []
    joins = config["joinSubnets"]
    errors = check_cidr_list(joins, f"{path}.joinSubnets", 1, 2, True)
    if role != "Primary":
        errors.append(FieldError(path, "JoinSubnets is only supported for Primary network"))
    elif not errors:
        nets = [net for net in (_net(j) for j in joins) if net is not None]
        errors += [FieldError(f"{path}.joinSubnets", problem, "array") for problem in
                   join_subnet_problems("joinSubnets", nets, {s.version for s in subnets})]
    return errors


def check_ipam_subnets(config: JSON, path: str, message: str) -> list[FieldError]:
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


def check_layer2(config: JSON, old: JSON | None, path: str) -> list[FieldError]:
    errors = check_role(config, path, ("Primary", "Secondary"))
    role = config.get("role")
    errors += check_ipam_subnets(config, path, "Subnets is required with ipam.mode is Enabled "
                                               "or unset")
    mode = (config.get("ipam") or {}).get("mode") if isinstance(config.get("ipam"), dict) \
        else None
    if mode == "Disabled":
        if "subnets" in config:
            errors.append(FieldError(path, "Subnets must be unset when ipam.mode is Disabled"))
        if role != "Secondary":
            errors.append(FieldError(path, "Disabled ipam.mode is only supported for Secondary "
                                           "network"))
    subnets: list[IPNet] = []
    if "subnets" in config:
        errors += check_cidr_list(config["subnets"], f"{path}.subnets", 1, 2, True)
        subnets = [n for n in (_net(v) for v in config.get("subnets") or []) if n is not None]
    errors += _join_errors(config, path, role, subnets)
    errors += _mtu_errors(config, path, "MTU should be greater than or equal to 1280 when IPv6 "
                                        "subnet is used", subnets)
    errors += _layer2_address_errors(config, path, role, subnets)
    if old is not None and config != old:
        errors.append(FieldError(path, "Layer2 is immutable"))
    return errors


def _layer2_address_errors(config: JSON, path: str, role: Any,
                           subnets: list[IPNet]) -> list[FieldError]:
    errors: list[FieldError] = []
    gateways = config.get("defaultGatewayIPs")
    reserved = config.get("reservedSubnets")
    infra = config.get("infrastructureSubnets")
    if gateways is not None:
        ips = [_ip(g) for g in gateways] if isinstance(gateways, list) else []
        if role != "Primary":
            errors.append(FieldError(path, "defaultGatewayIPs is only supported for Primary "
                                           "network"))
        errors += list_errors(f"{path}.defaultGatewayIPs", gateways, 1, 2)
        errors += [FieldError(f"{path}.defaultGatewayIPs[{index}]", "IP is invalid", "string")
                   for index, ip in enumerate(ips) if ip is None]
        ips_ok = [ip for ip in ips if ip is not None]
        if not all(any(ip in net for net in subnets) for ip in ips_ok):
            errors.append(FieldError(path, "defaultGatewayIPs must belong to one of the subnets "
                                           "specified in the subnets field"))
        if len(ips) != len(subnets):
            errors.append(FieldError(path, "defaultGatewayIPs must be specified for all IP "
                                           "families"))
        if infra is not None:
            infra_nets = [n for n in (_net(v) for v in infra) if n is not None]
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
        if role != "Primary":
            errors.append(FieldError(path, f"{name} is only supported for Primary network"))
        nets = [(v, _net(v)) for v in values] if isinstance(values, list) else []
        if not all(n is not None and any(_contains(s, n) for s in subnets) for _, n in nets):
            errors.append(FieldError(f"{path}.{name}", f"{name} must be subnetworks of the "
                                     "networks specified in the subnets field"))  # fieldPath
        if any(n is not None and ipaddress.ip_network(str(v), strict=False) != _strict(v)
               for v, n in nets):
            errors.append(FieldError(path, f"{name} must be a masked network address (no host "
                                           "bits set)"))
    if reserved is not None and infra is not None:
        pairs = [(_net(a), _net(b)) for a in infra for b in reserved]
        if any(a is not None and b is not None and a.version == b.version and a.overlaps(b)
               for a, b in pairs):
            errors.append(FieldError(path, "infrastructureSubnets and reservedSubnets must not "
                                           "overlap"))
    return errors


def _strict(value: Any) -> IPNet | None:
    try:
        return ipaddress.ip_network(str(value), strict=True)
    except ValueError:
        return None


def check_localnet(config: JSON, old: JSON | None, path: str) -> list[FieldError]:
    errors = check_role(config, path, ("Secondary",))
    physical = config.get("physicalNetworkName")
    if physical is None:
        errors.append(required(f"{path}.physicalNetworkName"))
    elif not isinstance(physical, str):
        errors.append(wrong_type(f"{path}.physicalNetworkName", physical, "string"))
    elif len(physical) > 253:
        errors.append(too_long(f"{path}.physicalNetworkName", 253))
    elif not physical:  # minLength fails, and so does the rule's matches('^[^,:]+$')
        errors += [too_short(f"{path}.physicalNetworkName", physical, 1),
                   FieldError(f"{path}.physicalNetworkName", "physicalNetworkName cannot "
                              "contain `,` or `:` characters", "string")]
    elif any(ch in physical for ch in ",:"):
        errors.append(FieldError(f"{path}.physicalNetworkName", "physicalNetworkName cannot "
                                 "contain `,` or `:` characters", "string"))
    mode = (config.get("ipam") or {}).get("mode") if isinstance(config.get("ipam"), dict) \
        else None
    errors += check_ipam_subnets(config, path, "Subnets is required with ipam.mode is Enabled "
                                               "or unset, and forbidden otherwise")
    if mode == "Disabled" and "subnets" in config:
        errors.append(FieldError(path, "Subnets is required with ipam.mode is Enabled or unset, "
                                       "and forbidden otherwise"))
    subnets: list[IPNet] = []
    if "subnets" in config:
        errors += check_cidr_list(config["subnets"], f"{path}.subnets", 1, 2, True)
        subnets = [n for n in (_net(v) for v in config.get("subnets") or []) if n is not None]
    if "excludeSubnets" in config:
        errors += check_cidr_list(config["excludeSubnets"], f"{path}.excludeSubnets", 1, 25)
        if "subnets" not in config:
            errors.append(FieldError(path, "excludeSubnets must be unset when subnets is unset"))
    errors += _mtu_errors(config, path, "MTU should be greater than or equal to 1280 when an "
                                        "IPv6 subnet is used", subnets)
    vlan = config.get("vlan")
    if vlan is not None:
        vlan_mode = vlan.get("mode") if isinstance(vlan, dict) else None
        has_access = isinstance(vlan, dict) and "access" in vlan
        if (vlan_mode == "Access") != has_access:
            errors.append(FieldError(f"{path}.vlan", "vlan access config is required when vlan "
                                     "mode is 'Access', and forbidden otherwise"))
        vid = ((vlan or {}).get("access") or {}).get("id") if has_access else None
        if has_access:
            errors += [required(f"{path}.vlan.access.id")] if vid is None else \
                integer_errors(f"{path}.vlan.access.id", vid, 1, 4094)
    if old is not None and config != old:
        errors.append(FieldError(path, "Localnet is immutable"))
    return errors


TOPOLOGY_CHECKS = {"Layer3": ("layer3", check_layer3), "Layer2": ("layer2", check_layer2),
                   "Localnet": ("localnet", check_localnet)}


def check_network(spec: JSON, old: JSON | None, path: str,
                  topologies: tuple[str, ...]) -> list[FieldError]:
    errors: list[FieldError] = []
    topology = spec.get("topology")
    if topology is None:
        return [required(f"{path}.topology")]
    if not isinstance(topology, str):
        return [wrong_type(f"{path}.topology", topology, "string")]
    if topology not in topologies:
        return [unsupported(f"{path}.topology", topology, tuple(sorted(topologies)))]
    if old is not None and old.get("topology") != topology:
        errors.append(FieldError(f"{path}.topology", "Topology is immutable", "string"))
    for kind in topologies:
        key, check = TOPOLOGY_CHECKS[kind]
        present = key in spec and spec[key] is not None
        if present != (kind == topology):
            errors.append(FieldError(path, f"spec.{key} is required when topology is {kind} "
                                           "and forbidden otherwise"))
        elif present:
            if not isinstance(spec[key], dict):
                errors.append(wrong_type(f"{path}.{key}", spec[key], "object"))
                continue
            old_config = (old or {}).get(key) if old is not None else None
            errors += check(spec[key], old_config if isinstance(old_config, dict) else None,
                            f"{path}.{key}")
    return errors


def _missing_object(path: str, value: Any) -> FieldError:
    """A required object that is absent, or is not an object."""
    return required(path) if value is None else wrong_type(path, value, "object")


def validate_udn(obj: JSON, old: JSON | None = None) -> list[FieldError]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_missing_object("spec", spec)]
    old_spec = (old or {}).get("spec") if old is not None else None
    return check_network(spec, old_spec if isinstance(old_spec, dict) else None, "spec",
                         ("Layer2", "Layer3"))


def validate_cudn(obj: JSON, old: JSON | None = None) -> list[FieldError]:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return [_missing_object("spec", spec)]
    errors: list[FieldError] = []
    if not isinstance(spec.get("namespaceSelector"), dict):
        errors.append(_missing_object("spec.namespaceSelector", spec.get("namespaceSelector")))
    network = spec.get("network")
    if not isinstance(network, dict):
        return [*errors, _missing_object("spec.network", network)]
    old_network = ((old or {}).get("spec") or {}).get("network") if old is not None else None
    errors += check_network(network, old_network if isinstance(old_network, dict) else None,
                            "spec.network", ("Layer2", "Layer3", "Localnet"))
    errors += _transport_errors(network, "spec.network")
    return errors


def _transport_errors(network: JSON, path: str) -> list[FieldError]:
    errors = []
    transport = network.get("transport")
    topology = network.get("topology")
    config = network.get(str(topology).lower())
    role = config.get("role") if isinstance(config, dict) else None
    if transport == "NoOverlay" and not (topology == "Layer3" and role == "Primary"):
        errors.append(FieldError(path, "transport 'NoOverlay' is only supported for Layer3 "
                                       "primary networks"))
    if transport == "NoOverlay" and "noOverlay" not in network:
        errors.append(FieldError(path, "spec.noOverlay is required when type transport is "
                                       "'NoOverlay'"))
    if "noOverlay" in network and transport != "NoOverlay":
        errors.append(FieldError(path, "spec.noOverlay is forbidden when transport type is not "
                                       "'NoOverlay'"))
    if transport == "EVPN" and not (topology in ("Layer2", "Layer3") and role == "Primary"):
        errors.append(FieldError(path, "transport 'EVPN' is only supported for Layer2 or Layer3 "
                                       "primary networks"))
    evpn = network.get("evpn")
    if transport == "EVPN" and evpn is None:
        errors.append(FieldError(path, "spec.evpn field is required when transport is 'EVPN'"))
    if evpn is not None and transport != "EVPN":
        errors.append(FieldError(path, "spec.evpn field is forbidden when transport is not "
                                       "'EVPN'"))
    if isinstance(evpn, dict):
        if topology == "Layer2" and "macVRF" not in evpn:
            errors.append(FieldError(path, "spec.evpn.macVRF field is required for Layer2 "
                                           "topology when transport is 'EVPN'"))
        if topology == "Layer3" and "ipVRF" not in evpn:
            errors.append(FieldError(path, "spec.evpn.ipVRF field is required for Layer3 "
                                           "topology when transport is 'EVPN'"))
        if topology == "Layer3" and "macVRF" in evpn:
            errors.append(FieldError(path, "spec.evpn.macVRF field is forbidden for Layer3 "
                                           "topology when transport is 'EVPN'"))
    return errors


def invalid_message(kind: str, group: str, name: str, errors: list[FieldError]) -> str:
    """The message a real API server returns for these errors."""
    joined = ", ".join(str(error) for error in errors)
    if len(errors) > 1:
        joined = f"[{joined}]"
    return f'{kind}.{group} "{name}" is invalid: {joined}'
