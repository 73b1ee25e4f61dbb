"""The CEL rules of a CUDN's ``spec.network.evpn``, with upstream's messages and rules.

Upstream's ``EVPNConfig`` needs a MAC-VRF or an IP-VRF, with different VNIs,
and each VRF's ``routeTarget`` is a BGP route target as FRR writes it
(``A.B.C.D:MN``, ``EF:OPQR``, ``GHJK:MN``, ``*:OPQR``: a 6-byte value split
between the global and the local administrator).  ``EVPN_RULES`` and
``ROUTE_TARGET_RULES`` are the CRD's rules (``crd_schemas``); ``evpn_errors``
evaluates them, printed as kube-apiserver prints a failed rule (the route
target's value, no value for the ``evpn`` object).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from ovnk_core.admission.field_errors import FieldError

JSON = dict[str, Any]

AT_LEAST_ONE_VRF = "at least one of macVRF or ipVRF must be specified"
DIFFERENT_VNIS = "macVRF and ipVRF must use different VNIs"
EVPN_RULES = (
    ("has(self.macVRF) || has(self.ipVRF)", AT_LEAST_ONE_VRF),
    ("!has(self.macVRF) || !has(self.ipVRF) || self.macVRF.vni != self.ipVRF.vni",
     DIFFERENT_VNIS),
)
_TWO = "self.split(':').size() != 2"
_GLOBAL, _LOCAL = "self.split(':')[0]", "self.split(':')[1]"
_NUMBERS = (f"{_GLOBAL}.contains('.') || !{_GLOBAL}.matches('^[0-9]+$') || "
            f"!{_LOCAL}.matches('^[0-9]+$')")
ONE_COLON = "RT must contain exactly one colon"
GLOBAL_KIND = "RT global administrator must be either '*', an IPv4 address, or a number"
LOCAL_NUMBER = "RT local administrator must be a number"
WILDCARD = "RT with wildcard global administrator must have format *:OPQR where OPQR <= 4294967295"
IPV4 = "RT with IPv4 global administrator must have format A.B.C.D:MN where MN <= 65535"
FOUR_BYTE_AS = ("RT with 4-byte ASN global administrator must have format GHJK:MN where GHJK <= "
                "4294967295 and MN <= 65535")
TWO_BYTE_AS = ("RT with 2-byte ASN global administrator must have format EF:OPQR where EF <= "
               "65535 and OPQR <= 4294967295")
ROUTE_TARGET_RULES = (
    ("self.split(':').size() == 2", ONE_COLON),
    (f"{_TWO} || (self.startsWith('*:') || isIP({_GLOBAL}) || "
     f"{_GLOBAL}.matches('^[0-9]+$'))", GLOBAL_KIND),
    (f"{_TWO} || {_LOCAL}.matches('^[0-9]+$')", LOCAL_NUMBER),
    (f"{_TWO} || !self.startsWith('*:') || ({_LOCAL}.matches('^[0-9]+$') && "
     f"uint({_LOCAL}) <= 4294967295u)", WILDCARD),
    (f"{_TWO} || !{_GLOBAL}.contains('.') || ({_LOCAL}.matches('^[0-9]+$') && "
     f"uint({_LOCAL}) <= 65535u)", IPV4),
    (f"{_TWO} || self.startsWith('*:') || {_NUMBERS} || uint({_GLOBAL}) <= 65535u || "
     f"uint({_LOCAL}) <= 65535u", FOUR_BYTE_AS),
    (f"{_TWO} || self.startsWith('*:') || {_NUMBERS} || uint({_GLOBAL}) > 65535u || "
     f"uint({_LOCAL}) <= 4294967295u", TWO_BYTE_AS),
)
_DIGITS = re.compile(r"[0-9]+")
_UINT_MAX = 2 ** 64 - 1


def _number(text: str) -> int | None:
    """CEL's ``uint(text)`` of an all-digit string (None when it would overflow)."""
    value = int(text)
    return value if value <= _UINT_MAX else None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def route_target_problems(value: str) -> list[str]:
    """The messages of the ``ROUTE_TARGET_RULES`` ``value`` breaks, in their order."""
    parts = value.split(":")
    if len(parts) != 2:
        return [ONE_COLON]
    first, second = parts
    problems = []
    if not (value.startswith("*:") or _is_ip(first) or _DIGITS.fullmatch(first)):
        problems.append(GLOBAL_KIND)
    local = _number(second) if _DIGITS.fullmatch(second) else None
    if not _DIGITS.fullmatch(second):
        problems.append(LOCAL_NUMBER)
    if value.startswith("*:") and (local is None or local > 4294967295):
        problems.append(WILDCARD)
    if "." in first and (local is None or local > 65535):
        problems.append(IPV4)
    if not value.startswith("*:") and "." not in first and _DIGITS.fullmatch(first) \
            and local is not None:
        global_admin = _number(first)
        if global_admin is None or (global_admin > 65535 and local > 65535):
            problems.append(FOUR_BYTE_AS)
        if global_admin is not None and global_admin <= 65535 and local > 4294967295:
            problems.append(TWO_BYTE_AS)
    return problems


def evpn_errors(evpn: JSON, path: str) -> list[FieldError]:
    """The rules of ``spec.network.evpn`` (``path``) and of its VRFs' route targets."""
    errors: list[FieldError] = []
    for key in ("macVRF", "ipVRF"):
        vrf = evpn.get(key)
        target = vrf.get("routeTarget") if isinstance(vrf, dict) else None
        if isinstance(target, str):
            errors += [FieldError(f"{path}.{key}.routeTarget", problem, target)
                       for problem in route_target_problems(target)]
    mac, ip = evpn.get("macVRF"), evpn.get("ipVRF")
    if mac is None and ip is None:
        errors.append(FieldError(path, AT_LEAST_ONE_VRF))
    elif isinstance(mac, dict) and isinstance(ip, dict) and mac.get("vni") == ip.get("vni"):
        errors.append(FieldError(path, DIFFERENT_VNIS))
    return errors


__all__ = ["EVPN_RULES", "ROUTE_TARGET_RULES", "evpn_errors", "route_target_problems"]
