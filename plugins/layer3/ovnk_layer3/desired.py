"""Pure builders of a Layer3 network's OVN Northbound rows (the routed pod network).

A Layer3 network is one logical router (``<P>ovn_cluster_router``) and one
logical switch per node (``<P><node>``, the node's host subnet), joined by
the ``rtos-``/``stor-`` port pair whose router side owns the subnet's .1;
primary networks add the node's management port ``k8s-<P><node>`` (.2).
Every pod attachment is a port on its node's switch.  ``P`` is the network
prefix (empty for the default network), as upstream names them.

Each builder returns the rows of one owner (the network, one node, one pod)
for ``ovnk_core.ovn.declarative.apply``; nothing here does I/O.  The
gateway pieces (join switch, gateway routers, masquerade NAT) are built in
a later step.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.addressing import gateway_ip, mac_from_ip, management_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs, Owner

CLUSTER_ROUTER = "ovn_cluster_router"


@dataclass(frozen=True)
class NodeSubnets:
    """One node as a network sees it: its name and its host subnets in that network."""

    name: str
    subnets: tuple[IPNetwork, ...]


@dataclass(frozen=True)
class PodAttachment:
    """One pod's port on one network (from its ``k8s.ovn.org/pod-networks`` entry)."""

    namespace: str
    name: str
    uid: str
    node: str
    nad_key: str  # "default" or "ns/nad"
    mac: str
    ips: tuple[str, ...]  # CIDR form, e.g. "10.100.1.5/24"


def controller_name(netinfo: NetInfo) -> str:
    return "default-network-controller" if netinfo.is_default else \
        f"{netinfo.name}-network-controller"


def network_owner(netinfo: NetInfo) -> Owner:
    return Owner(controller_name(netinfo), "network")


def node_owner(netinfo: NetInfo, node: str) -> Owner:
    return Owner(controller_name(netinfo), f"node:{node}")


def pod_owner(netinfo: NetInfo, namespace: str, name: str) -> Owner:
    return Owner(controller_name(netinfo), f"pod:{namespace}/{name}")


def _ids(netinfo: NetInfo, owner: Owner, kind: str, name: str, switch_or_router: bool
         ) -> ObjectIDs:
    return owner.object_ids(kind, name, network=netinfo.name,
                            topology="" if netinfo.is_default else netinfo.topology,
                            role=netinfo.role if switch_or_router and not netinfo.is_default
                            else "")


def router_ids(netinfo: NetInfo) -> ObjectIDs:
    return _ids(netinfo, network_owner(netinfo), "LogicalRouter", "cluster-router", True)


def switch_ids(netinfo: NetInfo, node: str) -> ObjectIDs:
    return _ids(netinfo, node_owner(netinfo, node), "LogicalSwitch", node, True)


def build_network(netinfo: NetInfo) -> list[DesiredRow]:
    """The cluster router of the network."""
    return [DesiredRow("Logical_Router", router_ids(netinfo),
                       {"name": netinfo.scoped_name(CLUSTER_ROUTER),
                        "options": {"always_learn_from_arp_request": "false"}},
                       extra_external_ids={"k8s-cluster-router": "yes"})]


def build_node(netinfo: NetInfo, node: NodeSubnets) -> list[DesiredRow]:
    """The node's switch, its router port pair and (primary networks) management port."""
    owner = node_owner(netinfo, node.name)
    switch_name = netinfo.scoped_name(node.name)
    switch = switch_ids(netinfo, node.name)
    other_config: dict[str, str] = {}
    for subnet in node.subnets:
        if subnet.version == 4:
            other_config["subnet"] = str(subnet)
        else:
            other_config["ipv6_prefix"] = str(subnet.network_address)
    if not netinfo.is_primary and not netinfo.is_default:
        excluded = [str(management_ip(s)) for s in node.subnets if s.version == 4]
        if excluded:
            other_config["exclude_ips"] = " ".join(excluded)
    gateways = [gateway_ip(s) for s in node.subnets]
    router_mac = mac_from_ip(next((g for g in gateways if g.version == 4), gateways[0]))
    rtos = f"rtos-{switch_name}"
    rows = [
        DesiredRow("Logical_Switch", switch, {"name": switch_name, "other_config": other_config}),
        DesiredRow("Logical_Router_Port", _ids(netinfo, owner, "RouterToSwitchPort",
                                               node.name, False),
                   {"name": rtos, "mac": router_mac,
                    "networks": [f"{g}/{s.prefixlen}" for g, s in zip(gateways, node.subnets,
                                                                       strict=True)],
                    "options": {"gateway_mtu": str(netinfo.mtu)}},
                   links=(Link(Ref.to("Logical_Router", router_ids(netinfo)), "ports"),)),
        DesiredRow("Logical_Switch_Port", _ids(netinfo, owner, "SwitchToRouterPort", node.name,
                                               False),
                   {"name": f"stor-{switch_name}", "type": "router", "addresses": ["router"],
                    "options": {"router-port": rtos}},
                   links=(Link(Ref.to("Logical_Switch", switch), "ports"),)),
    ]
    if netinfo.is_primary or netinfo.is_default:
        addresses = [str(management_ip(s)) for s in node.subnets]
        mac = mac_from_ip(ipaddress.ip_address(addresses[0]))
        rows.append(DesiredRow(
            "Logical_Switch_Port", _ids(netinfo, owner, "ManagementPort", node.name, False),
            {"name": f"k8s-{switch_name}", "addresses": [" ".join([mac, *addresses])]},
            links=(Link(Ref.to("Logical_Switch", switch), "ports"),)))
    return rows


def pod_port_name(netinfo: NetInfo, pod: PodAttachment) -> str:
    """``<ns>_<pod>`` on the default network; NAD-key prefix + that on a UDN (upstream)."""
    base = f"{pod.namespace}_{pod.name}"
    if netinfo.is_default:
        return base
    return pod.nad_key.replace("-", ".").replace("/", ".") + "_" + base


def build_pod(netinfo: NetInfo, pod: PodAttachment) -> list[DesiredRow]:
    """The pod's logical port on its node's switch."""
    owner = pod_owner(netinfo, pod.namespace, pod.name)
    address = " ".join([pod.mac, *(str(ipaddress.ip_interface(ip).ip) for ip in pod.ips)])
    extra = {"pod": "true", "namespace": pod.namespace}
    if not netinfo.is_default:
        extra["k8s.ovn.org/nad"] = pod.nad_key
    return [DesiredRow(
        "Logical_Switch_Port", _ids(netinfo, owner, "Pod", f"{pod.namespace}/{pod.name}",
                                    False),
        {"name": pod_port_name(netinfo, pod), "addresses": [address],
         "port_security": [address],
         "options": {"requested-chassis": pod.node, "iface-id-ver": pod.uid}},
        links=(Link(Ref.to("Logical_Switch", switch_ids(netinfo, pod.node)), "ports"),),
        extra_external_ids=extra)]
