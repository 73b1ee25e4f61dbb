"""Parsing a NAD's CNI config (``spec.config``) into a ``NetInfo``.

The core reads the keys every OVN-Kubernetes netconf shares (``type``,
``name``, ``topology``, ``role``, ``mtu``, ``netAttachDefName``,
``transport``; reserved names and transports other than the Geneve overlay
are refused rather than rendered as something else): ``parse_common``.  The
full parse is the plugin host's (``PluginHost.parse_netconf``): it hands the
rest to the topology plugin named by ``topology`` — a topology that no enabled
plugin provides is a ``TopologyNotSupported`` error on that network, never a
crash — and then every plugin may veto the result through the
``ovnk_validate_network`` hook.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ovnk_core import embedded_json, jsondepth
from ovnk_core.config.values import IPNetwork, parse_cidr, parse_str_list
from ovnk_core.errors import NetworkConfigError
from ovnk_core.networks.netinfo import NETWORK_ROLES, ROLE_SECONDARY
from ovnk_core.networks.reserved_names import reserved_name_problem

CNI_TYPE = "ovn-k8s-cni-overlay"
# The overlay every network gets; upstream's "no-overlay" and "evpn" are not rendered here.
SUPPORTED_TRANSPORTS = (None, "", "geneve")


@dataclass(frozen=True)
class NetConf:
    """The common part of a netconf, plus the raw document for topology-specific keys."""

    name: str
    topology: str
    role: str
    mtu: int | None
    nad_key: str
    raw: Mapping[str, Any]

    def get_str(self, key: str, default: str = "") -> str:
        value = self.raw.get(key, default)
        if not isinstance(value, str):
            raise NetworkConfigError(f"netconf {key!r} must be a string, got {value!r}")
        return value

    def get_int(self, key: str) -> int | None:
        value = self.raw.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise NetworkConfigError(f"netconf {key!r} must be an integer, got {value!r}")
        return value

    def get_bool(self, key: str) -> bool:
        value = self.raw.get(key, False)
        if not isinstance(value, bool):
            raise NetworkConfigError(f"netconf {key!r} must be true or false, got {value!r}")
        return value

    def get_cidrs(self, key: str) -> tuple[IPNetwork, ...]:
        """A comma-joined CIDR list such as ``"10.1.0.0/16,fd00::/64"`` (host bits are
        masked off, as upstream's netconf parsing does)."""
        result = []
        for item in parse_str_list(self.get_str(key)):
            try:
                result.append(parse_cidr(item, strict=False))
            except ValueError as exc:
                raise NetworkConfigError(f"netconf {key!r}: {exc}") from None
        return tuple(result)


def parse_common(document: str | Mapping[str, Any]) -> NetConf:
    """Parse the keys every netconf shares; raise ``NetworkConfigError`` when malformed."""
    if isinstance(document, str):
        try:
            raw = embedded_json.loads(document)
        except jsondepth.TooDeep as exc:  # Python's decoder would raise RecursionError
            raise NetworkConfigError(f"netconf cannot be parsed: it is {exc}") from None
        except embedded_json.InvalidUnicode as exc:  # no annotation nor event could carry it
            raise NetworkConfigError(f"netconf cannot be parsed: {exc}") from None
        except json.JSONDecodeError as exc:
            raise NetworkConfigError(f"netconf is not valid JSON: {exc}") from None
    else:
        raw = document
    if not isinstance(raw, Mapping):
        raise NetworkConfigError("netconf must be a JSON object")
    if raw.get("type") != CNI_TYPE:
        raise NetworkConfigError(
            f"netconf type {raw.get('type')!r} is not {CNI_TYPE!r}", reason="NotOVNKubernetes"
        )
    if "ipam" in raw:
        raise NetworkConfigError("IPAM key is not supported. Use OVN-K provided IPAM via the "
                                 "subnets attribute")
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise NetworkConfigError("netconf name is required")
    reserved = reserved_name_problem(name)
    if reserved:
        raise NetworkConfigError(reserved)
    transport = raw.get("transport")
    if transport not in SUPPORTED_TRANSPORTS:
        raise NetworkConfigError(f"netconf transport {transport!r} of network {name!r} is not "
                                 "supported by this control plane (only the default Geneve "
                                 "overlay is)", reason="TransportNotSupported")
    topology = raw.get("topology")
    if not isinstance(topology, str) or not topology:
        raise NetworkConfigError(f"netconf of network {name!r} has no topology")
    role = raw.get("role", ROLE_SECONDARY) or ROLE_SECONDARY
    if role not in NETWORK_ROLES:
        raise NetworkConfigError(f"invalid network role value {role!r}")
    conf = NetConf(name=name, topology=topology.lower(), role=role, mtu=None,
                   nad_key="", raw=raw)
    mtu = conf.get_int("mtu")
    if mtu is not None and mtu <= 0:
        mtu = None
    nad_key = conf.get_str("netAttachDefName")
    return NetConf(name=name, topology=topology.lower(), role=role, mtu=mtu, nad_key=nad_key,
                   raw=raw)
