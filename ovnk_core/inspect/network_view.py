"""The logical topology of one network, read back from Northbound.

Collects the routers and switches carrying ``k8s.ovn.org/network=<name>``,
their ports, how router ports connect to switches, and the routes,
policies and NATs on each router; then prints it as an indented tree or as
Graphviz ``dot``.  Only ovnk-owned rows are shown; it never writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ovnk_core.errors import OvnkError
from ovnk_core.kube.resources import split_key
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import NETWORK_KEY, OWNER_KEY, ROLE_KEY, TOPOLOGY_KEY
from ovnk_core.ovn.port_types import LSP_TYPE_LOCALNET, LSP_TYPE_ROUTER
from ovnk_core.zone.owners import NODE_SCOPE_PREFIX, POD_SCOPE_PREFIX

CUDN_PREFIX = "cluster_udn_"


@dataclass
class PortView:
    name: str
    detail: str
    peer: str = ""  # the switch (for a router port) or router (for a router-type switch port)


@dataclass
class DeviceView:
    kind: str  # "router" or "switch"
    name: str
    detail: str
    ports: list[PortView] = field(default_factory=list)
    extras: list[str] = field(default_factory=list)  # routes, policies, NATs


@dataclass
class NetworkView:
    name: str
    topology: str
    role: str
    devices: list[DeviceView]
    nodes: list[str] = field(default_factory=list)  # nodes with rows of their own in it


def resolve_network_name(nb: NbClient, name: str) -> str:
    """Accept ``ns_udn``, ``ns/udn``, ``cluster_udn_<cudn>``, ``<cudn>`` or ``default``."""
    with nb.idl.index_lock:
        known = nb.idl.ids_index.values(NETWORK_KEY)
    candidates = [name, name.replace("/", "_", 1), CUDN_PREFIX + name]
    for candidate in candidates:
        if candidate in known:
            return candidate
    listing = ", ".join(sorted(known)) or "none"
    raise OvnkError(f"no network {name!r} is rendered in OVN Northbound (rendered: {listing})")


def _owned_by_network(row: Any, network: str) -> bool:
    return bool(row.external_ids.get(NETWORK_KEY) == network)


def _switch_port_detail(port: Any) -> str:
    owner = port.external_ids.get(OWNER_KEY, "")
    if port.type == LSP_TYPE_ROUTER:
        return "router port"
    if port.type == LSP_TYPE_LOCALNET:
        return f"{LSP_TYPE_LOCALNET} to {port.options.get('network_name', '?')}"
    addresses = " ".join(port.addresses)
    if owner.startswith(POD_SCOPE_PREFIX):
        namespace, pod = split_key(owner[len(POD_SCOPE_PREFIX):])
        return f"pod {namespace}/{pod}: {addresses}"
    if port.name.startswith("k8s-"):
        return f"management port: {addresses}"
    return addresses


def build_view(nb: NbClient, network: str, default_topology: str = "") -> NetworkView:
    """The network's rows as a view.

    :param default_topology: the topology shown for the default network when its rows do
        not record one (``Config.default_network_topology``).
    """
    switches = [s for s in nb.row_list("Logical_Switch") if _owned_by_network(s, network)]
    routers = [r for r in nb.row_list("Logical_Router") if _owned_by_network(r, network)]
    switch_of_lrp: dict[str, str] = {}
    for switch in switches:
        for port in switch.ports:
            if port.type == LSP_TYPE_ROUTER:
                switch_of_lrp[port.options.get("router-port", "")] = switch.name
    router_of_lrp = {lrp.name: router.name for router in routers for lrp in router.ports}
    topology = role = ""
    devices = []
    cluster_first = sorted(routers, key=lambda r: (r.external_ids.get("k8s-cluster-router") !=
                                                   "yes", r.name))
    for router in cluster_first:
        topology = topology or router.external_ids.get(TOPOLOGY_KEY, "")
        role = role or router.external_ids.get(ROLE_KEY, "")
        detail = "gateway router on chassis " + router.options["chassis"] \
            if router.options.get("chassis") else "distributed router"
        device = DeviceView("router", router.name, detail)
        for lrp in sorted(router.ports, key=lambda p: p.name):
            # a switch's router port, or a router port peered straight to another router's
            peer = switch_of_lrp.get(lrp.name, "") or \
                router_of_lrp.get(next(iter(lrp.peer or ()), ""), "")
            device.ports.append(PortView(lrp.name, f"{lrp.mac} {' '.join(lrp.networks)}",
                                         peer))
        for route in sorted(router.static_routes, key=lambda r: (r.ip_prefix, r.nexthop)):
            policy = " (src-ip)" if "src-ip" in (route.policy or []) else ""
            out = f" out {route.output_port[0]}" if route.output_port else ""
            device.extras.append(f"route {route.ip_prefix} via {route.nexthop}{policy}{out}")
        for policy in sorted(router.policies, key=lambda p: (-p.priority, p.match)):
            hops = ",".join(policy.nexthops)
            device.extras.append(f"policy {policy.priority} {policy.match} → {policy.action}"
                                 + (f" {hops}" if hops else ""))
        for nat in sorted(router.nat, key=lambda n: (n.type, n.logical_ip)):
            device.extras.append(f"nat {nat.type} {nat.logical_ip} → {nat.external_ip}")
        devices.append(device)
    for switch in sorted(switches, key=lambda s: s.name):
        topology = topology or switch.external_ids.get(TOPOLOGY_KEY, "")
        role = role or switch.external_ids.get(ROLE_KEY, "")
        config = " ".join(f"{k}={v}" for k, v in sorted(switch.other_config.items()))
        device = DeviceView("switch", switch.name, config)
        for port in sorted(switch.ports, key=lambda p: p.name):
            peer = router_of_lrp.get(port.options.get("router-port", ""), "") \
                if port.type == LSP_TYPE_ROUTER else ""
            device.ports.append(PortView(port.name, _switch_port_detail(port), peer))
        devices.append(device)
    if not devices:
        raise OvnkError(f"network {network!r} has no routers or switches in OVN Northbound")
    if network == "default":
        topology, role = topology or default_topology, "default"
    # the nodes the network is rendered on: those owning rows of it (with a per-node
    # network filter, the nodes where it is active)
    nodes = sorted({row.external_ids[OWNER_KEY][len(NODE_SCOPE_PREFIX):]
                    for row in (*switches, *routers)
                    if row.external_ids.get(OWNER_KEY, "").startswith(NODE_SCOPE_PREFIX)})
    return NetworkView(network, topology or "?", role or "?", devices, nodes)


def render_tree(view: NetworkView) -> str:
    lines = [f"network {view.name} ({view.topology}, {view.role})"]
    if view.nodes:
        lines.append(f"   rendered on nodes: {', '.join(view.nodes)}")
    for i, device in enumerate(view.devices):
        last = i == len(view.devices) - 1
        lines.append(f"{'└─' if last else '├─'} {device.kind} {device.name}"
                     + (f"  [{device.detail}]" if device.detail else ""))
        stem = "   " if last else "│  "
        children = [f"port {p.name}  {p.detail}" + (f"  ↔ {p.peer}" if p.peer else "")
                    for p in device.ports] + device.extras
        for j, child in enumerate(children):
            lines.append(f"{stem}{'└─' if j == len(children) - 1 else '├─'} {child}")
    return "\n".join(lines) + "\n"


def _dot_id(name: str) -> str:
    return '"' + name.replace('"', '\\"') + '"'


def render_dot(view: NetworkView) -> str:
    """Routers as boxes, switches as ellipses, pods and special ports as notes."""
    lines = [f"graph {_dot_id(view.name)} {{", "  rankdir=TB;",
             f'  label={_dot_id(f"network {view.name} ({view.topology}, {view.role})")};',
             "  node [fontname=sans];"]
    edges = set()
    for device in view.devices:
        shape = "box" if device.kind == "router" else "ellipse"
        lines.append(f"  {_dot_id(device.name)} [shape={shape}];")
        for port in device.ports:
            if port.peer:
                edges.add(tuple(sorted((device.name, port.peer))))
            elif device.kind == "switch":
                lines.append(f"  {_dot_id(port.name)} [shape=note, fontsize=10, "
                             f"label={_dot_id(port.name + chr(10) + port.detail)}];")
                lines.append(f"  {_dot_id(device.name)} -- {_dot_id(port.name)};")
    for a, b in sorted(edges):
        lines.append(f"  {_dot_id(a)} -- {_dot_id(b)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
