"""Which set elements each pod contributes, and which writes keep the sets in step.

A pod counts when its default-network entry of ``k8s.ovn.org/pod-networks``
has role ``infrastructure-locked`` (its primary network is a UDN), it is not
host-network, and it has default-network IPs (``status.podIPs``, else the
annotation's ``default`` entry).  Its IPs go to ``udn-pod-default-ips-*``;
``k8s.ovn.org/open-default-ports`` adds ``<ip> . <proto> . <port>`` elements
and, for icmp, every pod IP to ``udn-open-ports-icmp-*``.

Elements are tracked per pod key with reference counts: an IP is reused as
soon as its pod terminates, so the new pod may add it before the old pod's
delete arrives, and that delete must not take the IP away from the new pod.
Pure: ``build_pod_elements`` and ``ElementRefs`` compute; the controller writes.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ovnk_core.annotations import pod_networks
from ovnk_isolation import host_rules as rules
from ovnk_isolation.open_ports import ICMP, OpenPortsError, parse_open_ports

DEFAULT_NAD_KEY = "default"
INFRASTRUCTURE_LOCKED = "infrastructure-locked"

PodElements = Mapping[str, frozenset[str]]  # set name → the pod's elements in it
NO_ELEMENTS: PodElements = {}


@dataclass(frozen=True)
class PodDesired:
    """What one pod wants in the sets; ``open_ports_error`` when its open ports were left
    out because the annotation is unusable (upstream's message)."""

    elements: PodElements
    open_ports_error: str = ""


def default_ips(pod: Mapping[str, Any], entry: pod_networks.PodNetwork) -> list[str]:
    """The pod's default-network IPs: ``status.podIPs``, else the annotation's entry."""
    status_ips = [item.get("ip", "") for item in (pod.get("status") or {}).get("podIPs") or []
                  if isinstance(item, dict)]
    ips = [ip for ip in status_ips if ip] or [
        str(ipaddress.ip_interface(address).ip) for address in entry.ip_addresses]
    return [str(ipaddress.ip_address(ip)) for ip in ips]


def default_entry(pod: Mapping[str, Any]) -> pod_networks.PodNetwork | None:
    """The pod's default-network entry, ``None`` when it has none yet.

    :raises PodAnnotationError: the annotation is malformed.
    """
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    raw = annotations.get(pod_networks.POD_NETWORKS_ANNOTATION)
    if raw is None:
        return None
    return pod_networks.parse(raw).get(DEFAULT_NAD_KEY)


def build_pod_elements(pod: Mapping[str, Any] | None) -> PodDesired:
    """The elements ``pod`` contributes (none for a pod that is gone or not isolated).

    :raises PodAnnotationError: ``k8s.ovn.org/pod-networks`` is malformed.
    """
    if pod is None or (pod.get("spec") or {}).get("hostNetwork"):
        return PodDesired(NO_ELEMENTS)
    entry = default_entry(pod)
    if entry is None or entry.role != INFRASTRUCTURE_LOCKED:
        return PodDesired(NO_ELEMENTS)
    try:
        ips = default_ips(pod, entry)
    except ValueError:
        return PodDesired(NO_ELEMENTS)
    if not ips:
        return PodDesired(NO_ELEMENTS)
    by_version: dict[int, list[str]] = {4: [], 6: []}
    for ip in ips:
        by_version[ipaddress.ip_address(ip).version].append(ip)
    elements: dict[str, set[str]] = {
        rules.POD_IPS_V4: set(by_version[4]), rules.POD_IPS_V6: set(by_version[6])}
    error = ""
    try:
        ports = parse_open_ports((pod.get("metadata") or {}).get("annotations"))
    except OpenPortsError as exc:
        ports, error = [], str(exc)
    for port in ports:
        if port.protocol == ICMP:
            elements.setdefault(rules.OPEN_ICMP_V4, set()).update(by_version[4])
            elements.setdefault(rules.OPEN_ICMP_V6, set()).update(by_version[6])
            continue
        for version, set_name in ((4, rules.OPEN_PORTS_V4), (6, rules.OPEN_PORTS_V6)):
            elements.setdefault(set_name, set()).update(
                f"{ip} . {port.protocol} . {port.port}" for ip in by_version[version])
    return PodDesired({name: frozenset(members) for name, members in elements.items()
                       if members}, error)


@dataclass
class SetChange:
    """Elements to add to and delete from one set."""

    add: set[str] = field(default_factory=set)
    delete: set[str] = field(default_factory=set)


@dataclass
class ElementRefs:
    """Per pod key, the elements it holds in each set; per element, the pods holding it."""

    by_pod: dict[str, PodElements] = field(default_factory=dict)
    holders: dict[str, dict[str, set[str]]] = field(default_factory=dict)  # set → elem → pods

    def members(self, set_name: str) -> set[str]:
        """The elements the set must hold."""
        return set(self.holders.get(set_name, {}))

    def changes(self, pod_key: str, wanted: PodElements) -> dict[str, SetChange]:
        """The writes that take the pod from what it holds to ``wanted``: an element is
        added only when no pod holds it yet, deleted only when this pod alone held it."""
        held = self.by_pod.get(pod_key, NO_ELEMENTS)
        result: dict[str, SetChange] = {}
        for set_name in set(held) | set(wanted):
            old = held.get(set_name, frozenset())
            new = wanted.get(set_name, frozenset())
            holders = self.holders.get(set_name, {})
            change = SetChange(
                add={e for e in new - old if not holders.get(e)},
                delete={e for e in old - new if holders.get(e, set()) <= {pod_key}})
            if change.add or change.delete:
                result[set_name] = change
        return result

    def commit(self, pod_key: str, wanted: PodElements) -> None:
        """Record that ``pod_key`` now holds ``wanted`` (after the writes succeeded)."""
        held = self.by_pod.pop(pod_key, NO_ELEMENTS)
        for set_name, elements in held.items():
            holders = self.holders.get(set_name, {})
            for element in elements:
                pods = holders.get(element)
                if pods is not None:
                    pods.discard(pod_key)
                    if not pods:
                        del holders[element]
        for set_name, elements in wanted.items():
            holders = self.holders.setdefault(set_name, {})
            for element in elements:
                holders.setdefault(element, set()).add(pod_key)
        if any(wanted.values()):
            self.by_pod[pod_key] = {name: e for name, e in wanted.items() if e}

    @classmethod
    def of(cls, pods: Iterable[tuple[str, PodElements]]) -> ElementRefs:
        """The references of every pod at once (the full sync)."""
        refs = cls()
        for pod_key, wanted in pods:
            refs.commit(pod_key, wanted)
        return refs
