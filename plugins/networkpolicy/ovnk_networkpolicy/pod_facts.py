"""What NetworkPolicy reads of a pod: its labels, its primary network's port and addresses,
and its containers' named ports.

A pod takes part in policies on its primary network only: the entry of
``k8s.ovn.org/pod-networks`` whose role is ``primary`` (``default`` for a pod of the
default network, the UDN's NAD key for a pod whose namespace has a primary UDN; its
default-network entry is then ``infrastructure-locked`` and never selected).  A pod
without such an entry (not wired yet, host-network), a finished pod (its addresses may be
someone else's already) or an unreadable annotation has no addresses and no port: it is in
no address set and no port group, as upstream leaves it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from ovnk_core.annotations.pod_networks import (
    POD_NETWORKS_ANNOTATION,
    PodAnnotationError,
    parse,
)
from ovnk_core.networks.port_names import DEFAULT_NAD_KEY, pod_port_name
from ovnk_networkpolicy.peers import PodFacts
from ovnk_networkpolicy.policy_spec import PROTOCOLS

FINISHED_PHASES = ("Succeeded", "Failed")


def named_ports(pod: Mapping[str, Any]) -> tuple[tuple[str, str, int], ...]:
    """``(name, protocol, containerPort)`` of every named container port."""
    found = []
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in (container or {}).get("ports") or []:
            name, number = port.get("name"), port.get("containerPort")
            protocol = PROTOCOLS.get(str(port.get("protocol") or "TCP"))
            if name and isinstance(number, int) and protocol:
                found.append((str(name), protocol, number))
    return tuple(found)


def pod_facts(pod: Mapping[str, Any]) -> PodFacts:
    meta = pod.get("metadata") or {}
    namespace, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    labels = dict(meta.get("labels") or {})
    plain = PodFacts(namespace, name, labels, named_ports=named_ports(pod))
    if (pod.get("status") or {}).get("phase") in FINISHED_PHASES or \
            (pod.get("spec") or {}).get("hostNetwork"):
        return plain
    try:
        networks = parse((meta.get("annotations") or {}).get(POD_NETWORKS_ANNOTATION))
    except PodAnnotationError:
        return plain
    for nad_key, network in sorted(networks.items()):
        if network.role == "primary" or (nad_key == DEFAULT_NAD_KEY and not network.role):
            ips = tuple(str(ipaddress.ip_interface(ip).ip) for ip in network.ip_addresses)
            return PodFacts(namespace, name, labels, ips, pod_port_name(nad_key, namespace, name),
                            plain.named_ports)
    return plain
