"""Where each pod is in OVN: its primary network's logical port, switch, MAC, IP and router.

Read from the pod's ``k8s.ovn.org/pod-networks`` annotation (which network is
its primary one, its address) and from Northbound (the port ovnk rendered for
it, found by ownership, the switch holding that port, and the MAC of the
router port on that switch, which is where a pod sends off-subnet packets).
Nothing here depends on a topology's naming rules.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from ovnk_core.annotations import pod_networks
from ovnk_core.kube.client import JSON
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import NETWORK_KEY, OWNER_KEY
from ovnk_core.zone.owners import POD_SCOPE_PREFIX

NAD_KEY = "k8s.ovn.org/nad"


@dataclass(frozen=True)
class Endpoint:
    """One pod on its primary network, as ovn-trace needs it."""

    pod: str  # ns/name
    network: str
    port: str
    switch: str
    mac: str
    ip: str
    router_mac: str
    note: str = ""  # shown beside the pod (e.g. the ports it opens on the default network)


class EndpointError(Exception):
    """The pod cannot be traced (not annotated, or not rendered in NB yet)."""


def primary_entry(pod: JSON) -> tuple[str, pod_networks.PodNetwork]:
    """(NAD key, entry) of the pod's primary network."""
    raw = (pod["metadata"].get("annotations") or {}).get(pod_networks.POD_NETWORKS_ANNOTATION)
    try:
        entries = pod_networks.parse(raw)
    except pod_networks.PodAnnotationError as exc:
        raise EndpointError(str(exc)) from None
    for nad_key, entry in entries.items():
        if entry.role == "primary":
            return nad_key, entry
    raise EndpointError("no primary network in its k8s.ovn.org/pod-networks annotation (not "
                        "allocated yet?)")


def _switch_of(nb: NbClient, port: Any) -> Any | None:
    with nb.idl.index_lock:
        referrers = nb.idl.backrefs.referrers(port.uuid)
    for table, parent_uuid, column in referrers:
        if table == "Logical_Switch" and column == "ports":
            return nb.rows("Logical_Switch").get(parent_uuid)
    return None


def _router_mac(nb: NbClient, switch: Any) -> str:
    router_ports = {row.name: row for row in nb.row_list("Logical_Router_Port")}
    for port in switch.ports:
        if port.type == "router":
            peer = router_ports.get(port.options.get("router-port", ""))
            if peer is not None:
                return str(peer.mac)
    raise EndpointError(f"switch {switch.name} has no router port")


def default_entry(pod: JSON) -> pod_networks.PodNetwork | None:
    """The pod's default-network entry when the default network is not its primary one
    (``infrastructure-locked``: a primary-UDN pod keeps it for its kubelet), else None."""
    raw = (pod["metadata"].get("annotations") or {}).get(pod_networks.POD_NETWORKS_ANNOTATION)
    try:
        entry = pod_networks.parse(raw).get(DEFAULT_NETWORK_NAME)
    except pod_networks.PodAnnotationError:
        return None
    return entry if entry is not None and entry.role != "primary" else None


def find_endpoint(nb: NbClient, pod: JSON, on_default: bool = False) -> Endpoint:
    """The pod's primary-network endpoint (``on_default``: its default-network one, for a
    pod whose primary network is another; named ``<ns>/<name>@default``), or
    ``EndpointError`` saying why not."""
    meta = pod["metadata"]
    key = f"{meta['namespace']}/{meta['name']}"
    if on_default:
        found = default_entry(pod)
        if found is None:
            raise EndpointError("the default network is its primary network")
        nad_key, entry = DEFAULT_NETWORK_NAME, found
    else:
        nad_key, entry = primary_entry(pod)
    network_ports = []
    for row in nb.row_list("Logical_Switch_Port"):
        ext = row.external_ids
        if ext.get(OWNER_KEY) != POD_SCOPE_PREFIX + key:
            continue
        default_port = nad_key == DEFAULT_NETWORK_NAME and \
            ext.get(NETWORK_KEY) == DEFAULT_NETWORK_NAME
        if default_port or ext.get(NAD_KEY) == nad_key:
            network_ports.append(row)
    if not network_ports:
        raise EndpointError(f"no logical port rendered for its network {nad_key} yet")
    port = network_ports[0]
    switch = _switch_of(nb, port)
    if switch is None:
        raise EndpointError(f"port {port.name} is on no switch")
    ip = str(ipaddress.ip_interface(entry.ip_addresses[0]).ip)
    return Endpoint(pod=f"{key}@{DEFAULT_NETWORK_NAME}" if on_default else key,
                    network=port.external_ids.get(NETWORK_KEY, ""), port=port.name,
                    switch=switch.name, mac=entry.mac_address, ip=ip,
                    router_mac=_router_mac(nb, switch))
