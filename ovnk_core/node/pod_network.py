"""A pod's network on its node: namespace, interfaces, addresses, routes, OVS ports.

The node side of CNI.  ``build_pod_interfaces`` turns a pod's
``k8s.ovn.org/pod-networks`` annotation into the interfaces the pod must
have (pure); ``ensure_pod_network`` makes them exist, idempotently: a network
namespace for the pod, one veth per network (``eth0`` for the default
network, ``ovn-udn1`` for a primary user-defined network, for a secondary one
the name its network selection element asks for, else ``net<N>`` by its position in
the selections, as Multus names them) with the annotation's MAC, addresses, default route via the
network's gateway and its explicit routes, and the node end plugged into
``br-int`` with ``external_ids:iface-id`` = the logical port's name (and
``iface-id-ver`` = the pod's UID, which the logical port requires), so
ovn-controller binds it.  ``delete_pod_network`` removes all of it.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ovnk_core.annotations import pod_networks
from ovnk_core.errors import OvnkError
from ovnk_core.kube.client import JSON
from ovnk_core.networks.port_names import DEFAULT_NAD_KEY, pod_port_name
from ovnk_core.node import netlink
from ovnk_core.node.netns import netns_path, run_in_netns
from ovnk_core.pods.network_selections import (
    DEFAULT_INTERFACE,
    PRIMARY_UDN_INTERFACE,
    NetworkSelectionError,
    interface_names,
    pod_selections,
)

POD_KEY_ID = "k8s.ovn.org/pod"
SANDBOX_ID = "sandbox"  # the CNI runtime's container ID, as upstream records it
INTEGRATION_BRIDGE = "br-int"

Vsctl = Callable[..., str]  # vsctl(*args) -> stdout; raises on failure


class PodNetworkError(OvnkError):
    """The pod's interfaces could not be built from its annotation or set up."""


class PodNetworkPending(PodNetworkError):
    """The pod has no network annotation yet (the cluster manager has not allocated)."""


@dataclass(frozen=True)
class PodInterface:
    """One interface of a pod, as the pod sees it and as OVS binds it."""

    nad_key: str
    ifname: str
    host_ifname: str
    port_name: str
    mac: str
    addresses: tuple[str, ...]
    gateways: tuple[str, ...]
    routes: tuple[tuple[str, str], ...]


def host_interface_name(pod_uid: str, nad_key: str) -> str:
    """The node end of a pod's veth: short (IFNAMSIZ), unique per pod and network."""
    return "p" + hashlib.sha1(f"{pod_uid}/{nad_key}".encode()).hexdigest()[:12]


def build_pod_interfaces(pod: JSON) -> list[PodInterface]:
    """The interfaces ``pod`` must have, from its pod-networks annotation.

    :raises PodNetworkPending: the annotation is not there yet.
    :raises PodNetworkError: the annotation is unreadable.
    """
    meta = pod.get("metadata", {})
    raw = (meta.get("annotations") or {}).get(pod_networks.POD_NETWORKS_ANNOTATION)
    if not raw:
        raise PodNetworkPending(f"pod {meta.get('namespace')}/{meta.get('name')} has no "
                              f"{pod_networks.POD_NETWORKS_ANNOTATION} annotation yet")
    try:
        networks = pod_networks.parse(raw)
    except pod_networks.PodAnnotationError as exc:
        raise PodNetworkError(str(exc)) from None
    uid = str(meta.get("uid", ""))
    try:
        names = interface_names(pod_selections(pod))
    except NetworkSelectionError:
        names = {}  # the allocator refused the selections (and said so): no secondaries
    interfaces: list[PodInterface] = []
    secondary = 0
    for nad_key in sorted(networks, key=lambda k: (k != DEFAULT_NAD_KEY, k)):
        entry = networks[nad_key]
        if nad_key == DEFAULT_NAD_KEY:
            ifname = DEFAULT_INTERFACE
        elif entry.role == "primary":
            ifname = PRIMARY_UDN_INTERFACE
        else:
            secondary += 1
            ifname = names.get(nad_key, f"net{secondary}")
        interfaces.append(PodInterface(
            nad_key=nad_key, ifname=ifname, host_ifname=host_interface_name(uid, nad_key),
            port_name=pod_port_name(nad_key, str(meta.get("namespace")), str(meta.get("name"))),
            mac=entry.mac_address, addresses=entry.ip_addresses, gateways=entry.gateway_ips,
            routes=entry.routes))
    return interfaces


def shared_interface_problem(interfaces: list[PodInterface]) -> str | None:
    """Why two of the interfaces would be one (two primary user-defined networks' entries
    are both ``ovn-udn1``), or None."""
    seen: dict[str, str] = {}
    for interface in interfaces:
        taken = seen.setdefault(interface.ifname, interface.nad_key)
        if taken != interface.nad_key:
            return (f"the entries for {taken} and {interface.nad_key} would both be "
                    f"interface {interface.ifname}")
    return None


def _allow_unprivileged_ping() -> None:
    """Every group may open ICMP echo sockets in the pod (containerd and CRI-O set the same
    ``net.ipv4.ping_group_range`` for pods), so unprivileged processes can ping."""
    with open("/proc/sys/net/ipv4/ping_group_range", "w") as handle:
        handle.write("0 2147483647")


def _netns_exists(name: str) -> bool:
    return netns_path(name).exists()


def ensure_pod_network(pod_netns: str, node_netns: str | None, interfaces: list[PodInterface],
                       pod_key: str, pod_uid: str, vsctl: Vsctl, create: bool = True,
                       sandbox: str = "") -> None:
    """Create (or complete) the pod's namespace, interfaces and OVS ports.

    :param pod_netns: a name under ``/var/run/netns`` or, from a CNI runtime, a path.
    :param create: make the namespace when it is missing (False: the runtime made it, and
        a missing one is an error).
    :param sandbox: the runtime's container ID (``CNI_CONTAINERID``), kept on the ports.
    """
    if not _netns_exists(pod_netns):
        if not create:
            raise PodNetworkError(f"network namespace {pod_netns} does not exist")
        result = subprocess.run(["ip", "netns", "add", pod_netns], capture_output=True,
                                text=True)
        if result.returncode != 0 and not _netns_exists(pod_netns):
            raise PodNetworkError(f"ip netns add {pod_netns}: {result.stderr.strip()}")
    netlink.set_link("lo", netns=pod_netns, up=True)
    run_in_netns(pod_netns, _allow_unprivileged_ping)
    for interface in interfaces:
        _ensure_interface(pod_netns, node_netns, interface)
    for interface in interfaces:
        for gateway in interface.gateways:
            default = "0.0.0.0/0" if ipaddress.ip_address(gateway).version == 4 else "::/0"
            netlink.ensure_route(default, gateway=gateway, oif=interface.ifname,
                                 netns=pod_netns)
        for destination, next_hop in interface.routes:
            netlink.ensure_route(destination, gateway=next_hop, oif=interface.ifname,
                                 netns=pod_netns)
    for interface in interfaces:
        vsctl("--may-exist", "add-port", INTEGRATION_BRIDGE, interface.host_ifname, "--",
              "set", "interface", interface.host_ifname,
              f"external_ids:iface-id={interface.port_name}",
              f"external_ids:iface-id-ver={pod_uid}",
              f'external_ids:"{POD_KEY_ID}"="{pod_key}"',
              *([f"external_ids:{SANDBOX_ID}={sandbox}"] if sandbox else []))


def _ensure_interface(pod_netns: str, node_netns: str | None, interface: PodInterface) -> None:
    if netlink.link_index(interface.ifname, netns=pod_netns) is None:
        netlink.delete_link(interface.host_ifname, netns=node_netns)  # a half-made earlier try
        temporary = f"{interface.host_ifname}x"[:15]
        netlink.ensure_veth(interface.host_ifname, temporary, netns=node_netns,
                            peer_netns=pod_netns)
        netlink.rename_link(temporary, interface.ifname, netns=pod_netns)
    netlink.set_link(interface.ifname, netns=pod_netns, mac=interface.mac or None)
    for cidr in interface.addresses:
        netlink.ensure_address(interface.ifname, cidr, netns=pod_netns)
    netlink.set_link(interface.ifname, netns=pod_netns, up=True)
    netlink.set_link(interface.host_ifname, netns=node_netns, up=True)


def bound_ports(vsctl: Vsctl, interfaces: list[PodInterface]) -> Mapping[str, bool]:
    """Whether ovn-controller has installed the flows of each interface (``ovn-installed``),
    as upstream's CNI waits for before it reports the pod's network ready."""
    result = {}
    for interface in interfaces:
        try:
            value = vsctl("--if-exists", "get", "interface", interface.host_ifname,
                          "external_ids:ovn-installed")
        except OvnkError:
            value = ""
        result[interface.ifname] = value.strip('"') == "true"
    return result


def pod_port_ids(vsctl: Vsctl) -> list[tuple[str, dict[str, str]]]:
    """``(name, external_ids)`` of every OVS port of a pod on this node."""
    output = vsctl("--format=json", "--columns=name,external_ids", "find", "interface",
                   f'external_ids:"{POD_KEY_ID}"!=""')
    found = []
    for name, external_ids in json.loads(output or '{"data": []}')["data"]:
        ids = dict(external_ids[1]) if external_ids and external_ids[0] == "map" else {}
        if ids.get(POD_KEY_ID):
            found.append((str(name), {str(k): str(v) for k, v in ids.items()}))
    return found


def pod_ports(vsctl: Vsctl) -> dict[str, list[str]]:
    """OVS ports of pods on this node, by pod key (for cleanup of pods that are gone)."""
    ports: dict[str, list[str]] = {}
    for name, ids in pod_port_ids(vsctl):
        ports.setdefault(ids[POD_KEY_ID], []).append(name)
    return ports


def sandbox_ports(vsctl: Vsctl) -> dict[str, list[str]]:
    """OVS ports plumbed by a CNI runtime's ADD, by its container ID (upstream's
    ``external_ids:sandbox``)."""
    ports: dict[str, list[str]] = {}
    for name, ids in pod_port_ids(vsctl):
        if ids.get(SANDBOX_ID):
            ports.setdefault(ids[SANDBOX_ID], []).append(name)
    return ports


def delete_pod_network(pod_netns: str, host_ifnames: list[str], vsctl: Vsctl) -> None:
    """Unplug the pod's OVS ports and delete its namespace (its veths go with it)."""
    for name in host_ifnames:
        vsctl("--if-exists", "del-port", INTEGRATION_BRIDGE, name)
    if _netns_exists(pod_netns):
        result = subprocess.run(["ip", "netns", "del", pod_netns], capture_output=True,
                                text=True)
        if result.returncode != 0 and _netns_exists(pod_netns):
            raise PodNetworkError(f"ip netns del {pod_netns}: {result.stderr.strip()}")


def remove_pod_interfaces(host_ifnames: list[str], node_netns: str | None,
                          vsctl: Vsctl) -> None:
    """Unplug the pod's OVS ports and delete the node ends of its veths (the pod ends go
    with them); the namespace stays, it is the runtime's (CNI DEL).  Idempotent."""
    for name in host_ifnames:
        vsctl("--if-exists", "del-port", INTEGRATION_BRIDGE, name)
        netlink.delete_link(name, netns=node_netns)


def pod_network_differences(pod_netns: str, interfaces: list[PodInterface]) -> list[str]:
    """How the pod's namespace differs from ``interfaces`` (CNI CHECK): a missing interface,
    another MAC, a missing address or default route; empty when it is as ADD left it."""
    if not _netns_exists(pod_netns):
        return [f"network namespace {pod_netns} does not exist"]
    problems = []
    for interface in interfaces:
        info = netlink.link_info(interface.ifname, netns=pod_netns)
        if info is None:
            problems.append(f"interface {interface.ifname} is missing")
            continue
        mac = str(info.get("mac") or "")
        if interface.mac and mac.lower() != interface.mac.lower():
            problems.append(f"interface {interface.ifname} has MAC {mac}, not {interface.mac}")
        present = {ipaddress.ip_interface(a)
                   for a in netlink.list_addresses(interface.ifname, netns=pod_netns)}
        for cidr in interface.addresses:
            if ipaddress.ip_interface(cidr) not in present:
                problems.append(f"interface {interface.ifname} lacks address {cidr}")
    return problems
