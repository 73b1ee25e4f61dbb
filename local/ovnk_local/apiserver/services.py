"""Service defaults and ClusterIP / NodePort allocation, as the real server's service REST does.

ovnk's load-balancer rendering needs real ClusterIPs, so a Service created
here gets one from the configured service CIDRs, one per IP family its ``ipFamilyPolicy``
and ``ipFamilies`` (or the ClusterIPs it asks for) select as kube-apiserver selects them
(``SingleStack`` by default, ``PreferDualStack`` and ``RequireDualStack`` get both families
on a dual-stack cluster, the latter is refused on another), keeps it across updates that
leave it unset, and gets NodePorts when
its type asks for them, and a ``healthCheckNodePort`` (from the same range) when it is a
``LoadBalancer`` with ``externalTrafficPolicy: Local``.  Allocation runs under the store lock
against the Services currently stored, so two creates never get the same address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ovnk_local.apiserver.errors import JSON, FieldError

NODE_PORTS = range(30000, 32768)
HEALTH_CHECK_ONLY = ("may only be set when `type` is 'LoadBalancer' and "
                     "`externalTrafficPolicy` is 'Local'")
_RESERVED_OFFSETS = (0, 1, 10)


def _family_name(version: int) -> str:
    return "IPv4" if version == 4 else "IPv6"


class ServiceAllocator:
    """Allocates ClusterIPs from ``cidrs`` (one per IP family) and NodePorts."""

    def __init__(self, cidrs: Iterable[str] = ("10.96.0.0/16",)) -> None:
        self.networks = [ipaddress.ip_network(c, strict=False) for c in cidrs]

    def _network(self, family: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
        version = 6 if family == "IPv6" else 4
        return next((n for n in self.networks if n.version == version), None)

    def prepare(self, svc: JSON, old: JSON | None, services: list[JSON]) -> list[FieldError]:
        """Default and allocate in place; ``services`` are the other stored Services."""
        spec = svc.setdefault("spec", {})
        old_spec = (old or {}).get("spec") or {}
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                if port.get("targetPort") in (None, 0, ""):  # Go's zero IntOrString too
                    port["targetPort"] = port.get("port")
        if spec["type"] == "ExternalName":
            return []
        spec.setdefault("internalTrafficPolicy", "Cluster")
        if spec["type"] in ("NodePort", "LoadBalancer"):
            spec.setdefault("externalTrafficPolicy", "Cluster")
        if old is not None and old_spec.get("clusterIPs"):
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if not spec.get(key) and key in old_spec:
                    spec[key] = old_spec[key]
            if spec.get("clusterIP") != old_spec.get("clusterIP"):
                return [FieldError("Invalid", "spec.clusterIP", spec.get("clusterIP"),
                                   "field is immutable")]
        errors = [] if old_spec.get("clusterIPs") else self._allocate_ips(spec, services)
        if spec["type"] in ("NodePort", "LoadBalancer"):
            errors += self._allocate_node_ports(spec, old_spec, services)
        return errors or self._allocate_health_check_node_port(spec, old_spec, services)

    def _allocate_ips(self, spec: JSON, services: list[JSON]) -> list[FieldError]:
        requested = list(spec.get("clusterIPs") or ([spec["clusterIP"]]
                                                     if spec.get("clusterIP") else []))
        if requested == ["None"]:
            spec["clusterIP"], spec["clusterIPs"] = "None", ["None"]
            spec.setdefault("ipFamilies", [_family_name(self.networks[0].version)])
            spec.setdefault("ipFamilyPolicy", "SingleStack")
            return []
        spec["ipFamilyPolicy"] = spec.get("ipFamilyPolicy") or "SingleStack"
        families, errors = self._families(spec, requested)
        if errors:
            return errors
        used = {ip for s in services for ip in ((s.get("spec") or {}).get("clusterIPs") or [])}
        ips: list[str] = []
        for index, family in enumerate(families):
            network = self._network(family)
            assert network is not None  # (_families keeps configured families only)
            path = f"spec.clusterIPs[{index}]"
            if index < len(requested):
                ip = requested[index]
                try:
                    inside = ipaddress.ip_address(ip) in network
                except ValueError:
                    return [FieldError("Invalid", path, ip, "must be a valid IP address")]
                if not inside:
                    return [FieldError("Invalid", path, ip,
                                       "provided IP is not in the valid range. The range of "
                                       f"valid IPs is {network}")]
                if ip in used:
                    return [FieldError("Invalid", path, ip, "provided IP is already allocated")]
            else:
                free = self._free_ip(network, used)
                if free is None:
                    return [FieldError("Invalid", path, "", "range is full")]
                ip = free
            used.add(ip)
            ips.append(ip)
        spec["clusterIP"], spec["clusterIPs"] = ips[0], ips
        spec["ipFamilies"] = families
        return []

    def _families(self, spec: JSON, requested: list[str]) -> tuple[list[str], list[FieldError]]:
        """The service's IP families as kube-apiserver settles them (``initIPFamilyFields``):
        inferred from the ClusterIPs asked for, checked against ``ipFamilyPolicy`` and the
        cluster's families, the cluster's first family by default, and the other family
        added for a dual-stack policy on a dual-stack cluster."""
        policy = spec["ipFamilyPolicy"]
        families = [str(family) for family in spec.get("ipFamilies") or []]
        configured = [_family_name(network.version) for network in self.networks]
        errors = []
        if policy == "SingleStack":
            for values, what in ((requested, "cluster IPs"), (families, "IP families")):
                if len(values) == 2:
                    errors.append(FieldError(
                        "Invalid", "spec.ipFamilyPolicy", policy, "must be 'RequireDualStack' "
                        f"or 'PreferDualStack' when multiple {what} are specified"))
        for index, ip in enumerate(requested):
            try:
                family = _family_name(ipaddress.ip_address(ip).version)
            except ValueError:
                break  # said where the IP is allocated
            if index >= len(families):
                if family in configured:
                    families.append(family)
                else:
                    errors.append(FieldError("Invalid", f"spec.clusterIPs[{index}]", ip,
                                             f"{family} is not configured on this cluster"))
        if errors:
            return [], errors
        if policy == "RequireDualStack" and len(configured) < 2:
            errors.append(FieldError("Invalid", "spec.ipFamilyPolicy", policy,
                                     "this cluster is not configured for dual-stack services"))
        errors += [FieldError("Invalid", f"spec.ipFamilies[{index}]", family,
                              "not configured on this cluster")
                   for index, family in enumerate(families) if family not in configured]
        if errors:
            return [], errors
        families = families or configured[:1]
        if policy != "SingleStack" and len(families) == 1 and len(configured) == 2:
            families.append(next(family for family in configured if family != families[0]))
        return families, []

    @staticmethod
    def _free_ip(network: ipaddress.IPv4Network | ipaddress.IPv6Network,
                 used: set[str]) -> str | None:
        limit = min(network.num_addresses - 1, 1 << 20)
        for offset in range(2, limit):
            if offset in _RESERVED_OFFSETS:
                continue
            candidate = str(network.network_address + offset)
            if candidate not in used:
                return candidate
        return None

    @staticmethod
    def _allocate_node_ports(spec: JSON, old_spec: JSON,
                             services: list[JSON]) -> list[FieldError]:
        used = _used_node_ports(services)
        previous = {(p.get("port"), p.get("protocol")): p.get("nodePort")
                    for p in old_spec.get("ports") or [] if isinstance(p, dict)}
        for index, port in enumerate(spec.get("ports") or []):
            if not isinstance(port, dict):
                continue
            wanted = port.get("nodePort") or previous.get((port.get("port"),
                                                           port.get("protocol")))
            if wanted:
                if wanted not in NODE_PORTS:
                    return [FieldError("Invalid", f"spec.ports[{index}].nodePort", wanted,
                                       "provided port is not in the valid range. The range of "
                                       "valid ports is 30000-32767")]
                if wanted in used and wanted not in previous.values():
                    return [FieldError("Invalid", f"spec.ports[{index}].nodePort", wanted,
                                       "provided port is already allocated")]
            else:
                wanted = next((p for p in NODE_PORTS if p not in used), None)
                if wanted is None:
                    return [FieldError("Invalid", f"spec.ports[{index}].nodePort", 0,
                                       "range is full")]
            port["nodePort"] = wanted
            used.add(wanted)
        return []

    @staticmethod
    def _allocate_health_check_node_port(spec: JSON, old_spec: JSON,
                                         services: list[JSON]) -> list[FieldError]:
        """kube-apiserver's rules: allocated (or the one asked for reserved) when the service
        becomes a LoadBalancer with ETP=Local, kept across updates that leave it unset,
        dropped when the service no longer needs it; refused on any other service."""
        needs, needed = _needs_health_check(spec), _needs_health_check(old_spec)
        wanted = spec.get("healthCheckNodePort") or 0
        previous = old_spec.get("healthCheckNodePort") if needed else None
        path = "spec.healthCheckNodePort"
        if not needs:
            if wanted and wanted != old_spec.get("healthCheckNodePort"):
                return [FieldError("Invalid", path, wanted, HEALTH_CHECK_ONLY)]
            spec.pop("healthCheckNodePort", None)
            return []
        wanted = wanted or previous or 0
        # the service's own NodePorts are taken too
        used = _used_node_ports([*services, {"spec": {"ports": spec.get("ports")}}])
        if wanted and wanted != previous:
            if not isinstance(wanted, int) or wanted not in NODE_PORTS:
                return [FieldError("Invalid", path, wanted, "provided port is not in the valid "
                                   "range. The range of valid ports is 30000-32767")]
            if wanted in used:
                return [FieldError("Invalid", path, wanted, "provided port is already allocated")]
        elif not wanted:
            wanted = next((p for p in NODE_PORTS if p not in used), None)
            if wanted is None:
                return [FieldError("Invalid", path, 0, "range is full")]
        spec["healthCheckNodePort"] = wanted
        return []


def _needs_health_check(spec: JSON) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _used_node_ports(services: list[JSON]) -> set[object]:
    """Every NodePort and health-check node port of ``services`` (one range holds both)."""
    used: set[object] = set()
    for service in services:
        spec = service.get("spec") or {}
        used.update(p.get("nodePort") for p in spec.get("ports") or [] if isinstance(p, dict))
        used.add(spec.get("healthCheckNodePort"))
    return used - {None, 0}
