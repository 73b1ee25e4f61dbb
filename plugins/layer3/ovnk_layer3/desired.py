"""Pure builders of a Layer3 network's OVN Northbound rows (the routed pod network).

A Layer3 network is one logical router (``<P>ovn_cluster_router``) and one
logical switch per node (``<P><node>``, the node's host subnet), joined by
the ``rtos-``/``stor-`` port pair whose router side owns the subnet's .1.
Every pod attachment is a port on its node's switch.  ``P`` is the network
prefix (empty for the default network), as upstream names them.

Primary networks and the default network also get, per node, the way out:
the management port ``k8s-<P><node>`` (.2), a gateway router
``GR_<P><node>`` reached from the cluster router over the ``<P>join``
switch, and an external switch ``ext_<P><node>`` to the node's bridge.  The
gateway router SNATs the network's egress: to the node IP on the default
network, to the network's own masquerade IP on a user-defined network, which
is what keeps overlapping pod subnets of different networks apart once they
leave OVN.  Secondary networks get none of that.

Each builder returns the rows of one owner (the network, one node, one pod)
for ``ovnk_core.ovn.declarative.apply``; nothing here does I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ovnk_core.config.values import IPNetwork
from ovnk_core.networks import port_names
from ovnk_core.networks.addressing import (
    MASQUERADE_NEXT_HOP_OFFSET,
    IPAddress,
    gateway_ip,
    mac_from_ip,
    management_ip,
    masquerade_ips,
)
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.networks.port_names import DEFAULT_NAD_KEY
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs
from ovnk_core.ovn.port_types import LSP_TYPE_LOCALNET, LSP_TYPE_ROUTER
from ovnk_core.render_state import NetworkState, NodeState, PodAttachment
from ovnk_core.topology import ServiceAttachment
from ovnk_core.zone import interconnect
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner
from ovnk_core.zone.pod_logical_port import build_pod_logical_port

CLUSTER_ROUTER = "ovn_cluster_router"
JOIN_SWITCH = "join"
NODE_SUBNET_POLICY_PRIORITY = 1004
MAC_BINDING_AGE_THRESHOLD = "300"
# upstream's KubeVirt ARP proxy (pkg/kubevirt): a link-local gateway for migrating VMs
ARP_PROXY_IPV4 = "169.254.1.1"
ARP_PROXY_IPV6 = "fe80::1"
ARP_PROXY_MAC = "0a:58:a9:fe:01:01"  # generated from ARP_PROXY_IPV4 (mac_from_ip)


_ids = interconnect.network_object_ids


def has_gateway(netinfo: NetInfo) -> bool:
    """Whether the network gets management ports, join switch and gateway routers."""
    return netinfo.is_primary or netinfo.is_default


def router_ids(netinfo: NetInfo) -> ObjectIDs:
    return _ids(netinfo, network_owner(netinfo), "LogicalRouter", "cluster-router", True)


def join_switch_ids(netinfo: NetInfo) -> ObjectIDs:
    return _ids(netinfo, network_owner(netinfo), "LogicalSwitch", "join", False)


def switch_ids(netinfo: NetInfo, node: str) -> ObjectIDs:
    return _ids(netinfo, node_owner(netinfo, node), "LogicalSwitch", node, True)


def gateway_router_ids(netinfo: NetInfo, node: str) -> ObjectIDs:
    return _ids(netinfo, node_owner(netinfo, node), "GatewayRouter", node, True)


def gateway_router_name(netinfo: NetInfo, node: str) -> str:
    return "GR_" + netinfo.scoped_name(node)


def _v4_first(addresses: Iterable[IPAddress]) -> list[IPAddress]:
    return sorted(addresses, key=lambda a: a.version)


def _joined(ip: IPAddress, subnet: IPNetwork) -> str:
    return f"{ip}/{subnet.prefixlen}"


def _family(ip: IPAddress | IPNetwork) -> str:
    return "ip4" if ip.version == 4 else "ip6"


def cluster_router_join_ips(network: NetworkState) -> list[IPAddress]:
    """The cluster router's ``rtoj-`` addresses: .1 of each join subnet."""
    return [subnet.network_address + 1 for subnet in network.join_subnets]


def gateway_router_join_ips(network: NetworkState, node_id: int) -> list[IPAddress]:
    """The node's gateway-router join addresses: join subnet base + node ID."""
    return [subnet.network_address + node_id for subnet in network.join_subnets]


def build_network(network: NetworkState) -> list[DesiredRow]:
    """The cluster router, and for networks with gateways the join switch and its router port;
    with interconnect the transit switch."""
    netinfo = network.netinfo
    owner = network_owner(netinfo)
    router = router_ids(netinfo)
    options = {"always_learn_from_arp_request": "false"}
    rows = [DesiredRow("Logical_Router", router,
                       {"name": netinfo.scoped_name(CLUSTER_ROUTER), "options": options},
                       extra_external_ids={"k8s-cluster-router": "yes"}),
            *interconnect.build_transit_switch(network)]
    if not has_gateway(netinfo) or not network.join_subnets:
        return rows
    join = join_switch_ids(netinfo)
    rtoj = "rtoj-" + netinfo.scoped_name(CLUSTER_ROUTER)
    join_ips = cluster_router_join_ips(network)
    rows += [
        DesiredRow("Logical_Switch", join, {"name": netinfo.scoped_name(JOIN_SWITCH)}),
        DesiredRow("Logical_Router_Port", _ids(netinfo, owner, "RouterToJoinPort",
                                               CLUSTER_ROUTER, False),
                   {"name": rtoj, "mac": mac_from_ip(_v4_first(join_ips)[0]),
                    "networks": [_joined(ip, s) for ip, s in zip(join_ips, network.join_subnets,
                                                                  strict=True)]},
                   links=(Link(Ref.to("Logical_Router", router), "ports"),)),
        DesiredRow("Logical_Switch_Port", _ids(netinfo, owner, "JoinToRouterPort",
                                               CLUSTER_ROUTER, False),
                   {"name": "jtor-" + netinfo.scoped_name(CLUSTER_ROUTER), "type": LSP_TYPE_ROUTER,
                    "addresses": ["router"], "options": {"router-port": rtoj}},
                   links=(Link(Ref.to("Logical_Switch", join), "ports"),)),
    ]
    return rows


def arp_proxy(netinfo: NetInfo) -> str:
    """The default network's ``arp_proxy`` on ``stor-<node>``, as upstream's
    ``ComposeARPProxyLSPOption``: the router port answers ARP/ND for a link-local gateway
    address (KubeVirt VMs keep it as their default gateway when they migrate between
    nodes) and for the cluster subnets (a migrated VM still reaches its old neighbours),
    with the MAC generated from that address; the cluster subnets in configured order."""
    return " ".join([ARP_PROXY_MAC, ARP_PROXY_IPV4, ARP_PROXY_IPV6,
                     *(str(subnet.cidr) for subnet in netinfo.subnets)])


def switch_router_port_options(netinfo: NetInfo, rtos: str) -> dict[str, str]:
    """``stor-<node>``'s options: its router port, and on the default network only (as
    upstream) the ARP proxy (``arp_proxy``)."""
    options = {"router-port": rtos}
    if netinfo.is_default:
        options["arp_proxy"] = arp_proxy(netinfo)
    return options


def build_node(network: NetworkState, node: NodeState) -> list[DesiredRow]:
    """The node's switch and router port pair; management port and gateway when primary;
    with interconnect its port on the transit switch.  A remote node (another zone's) has
    only its remote port on the transit switch and the routes to it.

    A node without a host subnet in this network (not allocated yet, or not active in it)
    has no rows.
    """
    if not node.subnets:
        return []
    router_ref = Ref.to("Logical_Router", router_ids(network.netinfo))
    if node.remote:
        gateway_ips = gateway_router_join_ips(network, node.node_id) \
            if has_gateway(network.netinfo) and node.node_id is not None else []
        return interconnect.build_remote_node(network, node, router_ref, gateway_ips)
    return _build_local_node(network, node) + \
        interconnect.build_local_node(network, node, router_ref)


def _build_local_node(network: NetworkState, node: NodeState) -> list[DesiredRow]:
    netinfo = network.netinfo
    owner = node_owner(netinfo, node.name)
    switch_name = netinfo.scoped_name(node.name)
    switch = switch_ids(netinfo, node.name)
    other_config: dict[str, str] = {}
    for subnet in node.subnets:
        if subnet.version == 4:
            other_config["subnet"] = str(subnet)
        else:
            other_config["ipv6_prefix"] = str(subnet.network_address)
    if not has_gateway(netinfo):
        excluded = [str(management_ip(s)) for s in node.subnets if s.version == 4]
        if excluded:
            other_config["exclude_ips"] = " ".join(excluded)
    gateways = [gateway_ip(s) for s in node.subnets]
    rtos = f"rtos-{switch_name}"
    rtos_ids = _ids(netinfo, owner, "RouterToSwitchPort", node.name, False)
    rows = [
        DesiredRow("Logical_Switch", switch, {"name": switch_name, "other_config": other_config}),
        DesiredRow("Logical_Router_Port", rtos_ids,
                   {"name": rtos, "mac": mac_from_ip(_v4_first(gateways)[0]),
                    "networks": [_joined(g, s) for g, s in zip(gateways, node.subnets,
                                                                strict=True)],
                    "options": {"gateway_mtu": str(netinfo.mtu)}},
                   links=(Link(Ref.to("Logical_Router", router_ids(netinfo)), "ports"),)),
        DesiredRow("Logical_Switch_Port", _ids(netinfo, owner, "SwitchToRouterPort", node.name,
                                               False),
                   {"name": f"stor-{switch_name}", "type": LSP_TYPE_ROUTER, "addresses": ["router"],
                    "options": switch_router_port_options(netinfo, rtos)},
                   links=(Link(Ref.to("Logical_Switch", switch), "ports"),)),
        *interconnect.build_gateway_chassis(network, node, Ref.to("Logical_Router_Port",
                                                                  rtos_ids), rtos),
    ]
    if has_gateway(netinfo):
        mgmt_ips = [management_ip(s) for s in node.subnets]
        rows.append(DesiredRow(
            "Logical_Switch_Port", _ids(netinfo, owner, "ManagementPort", node.name, False),
            {"name": f"k8s-{switch_name}",
             "addresses": [" ".join([mac_from_ip(_v4_first(mgmt_ips)[0]),
                                     *map(str, mgmt_ips)])]},
            links=(Link(Ref.to("Logical_Switch", switch), "ports"),)))
        if gateway_ready(node) and network.join_subnets:
            rows += build_gateway(network, node)
        rows += build_management_port_snat(network, node, rtos)
    return rows


def build_management_port_snat(network: NetworkState, node: NodeState, rtos: str
                               ) -> list[DesiredRow]:
    """A user-defined network's SNAT of what its node's pods send to the node's management
    port, to the network's management-port masquerade IP (upstream's
    ``addOrUpdateUDNNodeSubnetEgressSNAT``: ``snat <masq> <node subnet>
    logical_port=rtos-<P><node> match="eth.dst == <mgmt MAC>"`` on the cluster router): the
    host then sees one address per network, never a pod address another network may reuse,
    and answers it through the port.  Interconnect only (node owner): the row acts on a
    distributed gateway port, which ``rtos-`` is only with its node's ``gateway_chassis``,
    one node per zone; and only where NB has ``NAT.match``."""
    netinfo = network.netinfo
    if not network.interconnect or netinfo.is_default or not network.nb.nat_match \
            or not node.chassis_id:
        return []
    mgmt_mac = mac_from_ip(_v4_first(management_ip(s) for s in node.subnets)[0])
    rows = []
    for subnet in node.subnets:
        masquerade_subnet = _masquerade_subnet(network, subnet.version)
        if masquerade_subnet is None:
            continue
        _, external = masquerade_ips(masquerade_subnet, network.network_id)
        rows.append(DesiredRow(
            "NAT", _ids(netinfo, node_owner(netinfo, node.name), "ManagementPortSNAT",
                        f"{node.name}:{subnet}", False),
            {"type": "snat", "external_ip": str(external), "logical_ip": str(subnet),
             "logical_port": [rtos], "match": f"eth.dst == {mgmt_mac}",
             "options": {"stateless": "false"}},
            links=(Link(Ref.to("Logical_Router", router_ids(netinfo)), "nat"),)))
    return rows


def service_attachment(network: NetworkState, node: NodeState) -> ServiceAttachment | None:
    """Services on the node's switch, and on its gateway router once it is built."""
    netinfo = network.netinfo
    if not has_gateway(netinfo) or not node.subnets:
        return None
    routers = (Ref.to("Logical_Router", gateway_router_ids(netinfo, node.name)),) \
        if gateway_ready(node) and network.join_subnets else ()
    return ServiceAttachment((Ref.to("Logical_Switch", switch_ids(netinfo, node.name)),),
                             routers)


def gateway_ready(node: NodeState) -> bool:
    """A node's gateway can be built once it published gateway config, chassis and ID."""
    return node.gateway is not None and bool(node.chassis_id) and node.node_id is not None


def _masquerade_subnet(network: NetworkState, version: int) -> IPNetwork | None:
    return next((s for s in network.masquerade_subnets if s.version == version), None)


def gateway_router_options(netinfo: NetInfo, node: NodeState) -> dict[str, str]:
    """A gateway router's options, as upstream's ``createGWRouter``: the default network's
    router SNATs in conntrack zone 0 (upstream shares it with the host's own
    connections), a user-defined network's lets OVN pick its zone; a user-defined
    network's router sends no gratuitous ARP/RARP (``disable_garp_rarp``: its only
    external addresses are masquerade IPs, the same on every node).  OVN 23.03 does not
    know ``disable_garp_rarp`` yet and ignores it; nothing asks these routers for GARPs
    there anyway (their ``etor-`` ports have no ``nat-addresses``)."""
    options = {"lb_force_snat_ip": "router_ip",
               "mac_binding_age_threshold": MAC_BINDING_AGE_THRESHOLD,
               "chassis": node.chassis_id,
               "always_learn_from_arp_request": "false",
               "dynamic_neigh_routers": "false"}
    if netinfo.is_default:
        options["snat-ct-zone"] = "0"
    else:
        options["disable_garp_rarp"] = "true"
    return options


def external_switch_router_port_options(netinfo: NetInfo, rtoe: str) -> dict[str, str]:
    """``etor-GR_<node>``'s options, as upstream's ``addExternalSwitch``: on the default
    network the router's NAT addresses are announced by gratuitous ARP (``nat-addresses``,
    so that neighbours follow an address that moves between nodes), its load balancer VIPs
    not; a user-defined network's masquerade addresses are never announced."""
    options = {"router-port": rtoe}
    if netinfo.is_default:
        options["nat-addresses"] = "router"
        options["exclude-lb-vips-from-garp"] = "true"
    return options


def build_gateway(network: NetworkState, node: NodeState) -> list[DesiredRow]:
    """Gateway router, join and external ports, egress routes and SNAT of one node."""
    netinfo = network.netinfo
    gateway = node.gateway
    assert gateway is not None and node.node_id is not None
    owner = node_owner(netinfo, node.name)
    switch_name = netinfo.scoped_name(node.name)
    gr_name = gateway_router_name(netinfo, node.name)
    rtoj, rtoe = f"rtoj-{gr_name}", f"rtoe-{gr_name}"
    router = router_ids(netinfo)
    gr = gateway_router_ids(netinfo, node.name)
    ext = _ids(netinfo, owner, "ExternalSwitch", node.name, True)
    join_ips = gateway_router_join_ips(network, node.node_id)
    node_ips = [ipaddress.ip_interface(ip) for ip in gateway.ips]
    cluster_join_ips = cluster_router_join_ips(network)

    # Per-network masquerade IPs (user-defined networks only): the GR SNATs to the first.
    masq: dict[int, tuple[IPAddress, IPAddress]] = {}
    if not netinfo.is_default:
        for version in (4, 6):
            subnet = _masquerade_subnet(network, version)
            if subnet is not None and any(s.cidr.version == version for s in netinfo.subnets):
                masq[version] = masquerade_ips(subnet, network.network_id)
    rtoe_networks = [str(ip) for ip in node_ips] + \
        [f"{gr_ip}/{gr_ip.max_prefixlen}" for gr_ip, _ in masq.values()]
    physical_ips = [str(ip.ip) for ip in node_ips] + [str(gr_ip) for gr_ip, _ in masq.values()]

    def link_gr(column: str) -> tuple[Link, ...]:
        return (Link(Ref.to("Logical_Router", gr), column),)

    rows = [
        DesiredRow("Logical_Router", gr,
                   {"name": gr_name, "options": gateway_router_options(netinfo, node)},
                   extra_external_ids={"physical_ip": str(node_ips[0].ip),
                                       "physical_ips": ",".join(physical_ips)}),
        DesiredRow("Logical_Router_Port", _ids(netinfo, owner, "RouterToJoinPort", gr_name,
                                               False),
                   {"name": rtoj, "mac": mac_from_ip(_v4_first(join_ips)[0]),
                    "networks": [_joined(ip, s) for ip, s in zip(join_ips, network.join_subnets,
                                                                  strict=True)],
                    "options": {"gateway_mtu": str(netinfo.mtu)}},
                   links=link_gr("ports")),
        DesiredRow("Logical_Switch_Port", _ids(netinfo, owner, "JoinToRouterPort", gr_name,
                                               False),
                   {"name": f"jtor-{gr_name}", "type": LSP_TYPE_ROUTER, "addresses": ["router"],
                    "options": {"router-port": rtoj}},
                   links=(Link(Ref.to("Logical_Switch", join_switch_ids(netinfo)), "ports"),)),
        DesiredRow("Logical_Router_Port", _ids(netinfo, owner, "RouterToExternalPort", gr_name,
                                               False),
                   {"name": rtoe, "mac": gateway.mac or mac_from_ip(node_ips[0].ip),
                    "networks": rtoe_networks},
                   links=link_gr("ports"),
                   extra_external_ids={"gateway-physical-ip": "yes"} if netinfo.is_default
                   else {}),
        DesiredRow("Logical_Switch", ext, {"name": "ext_" + switch_name}),
        DesiredRow("Logical_Switch_Port", _ids(netinfo, owner, "ExternalToRouterPort", gr_name,
                                               False),
                   {"name": f"etor-{gr_name}", "type": LSP_TYPE_ROUTER,
                    "addresses": [gateway.mac or "router"],
                    "options": external_switch_router_port_options(netinfo, rtoe)},
                   links=(Link(Ref.to("Logical_Switch", ext), "ports"),)),
        DesiredRow("Logical_Switch_Port", _ids(netinfo, owner, "ExternalLocalnetPort",
                                               node.name, False),
                   {"name": f"{gateway.bridge_id}_{switch_name}", "type": LSP_TYPE_LOCALNET,
                    "addresses": ["unknown"], "options": {"network_name": "physnet"},
                    "tag_request": [gateway.vlan_id] if gateway.vlan_id else []},
                   links=(Link(Ref.to("Logical_Switch", ext), "ports"),)),
    ]

    def route(kind: str, name: str, target: Ref, prefix: str, nexthop: str,
              policy: str = "", output_port: str = "") -> DesiredRow:
        columns: dict[str, object] = {"ip_prefix": prefix, "nexthop": nexthop}
        if policy:
            columns["policy"] = policy
        if output_port:
            columns["output_port"] = output_port
        return DesiredRow("Logical_Router_Static_Route",
                          _ids(netinfo, owner, kind, name, False), columns,
                          links=(Link(target, "static_routes"),))

    gr_ref = Ref.to("Logical_Router", gr)
    router_ref = Ref.to("Logical_Router", router)
    # Gateway router: back to the pods through the cluster router, out through the bridge.
    for cluster in netinfo.subnets:
        hop = next((ip for ip in cluster_join_ips if ip.version == cluster.cidr.version), None)
        if hop is not None:
            rows.append(route("GatewayRouterClusterRoute", f"{node.name}:{cluster.cidr}",
                              gr_ref, str(cluster.cidr), str(hop)))
    for hop_text in gateway.next_hops:
        hop_ip = ipaddress.ip_address(hop_text)
        default = "0.0.0.0/0" if hop_ip.version == 4 else "::/0"
        rows.append(route("GatewayRouterDefaultRoute", f"{node.name}:{default}", gr_ref,
                          default, str(hop_ip), output_port=rtoe))
    for masq_subnet in network.masquerade_subnets:
        if any(ip.version == masq_subnet.version for ip in node_ips):
            rows.append(route("GatewayRouterMasqueradeRoute", f"{node.name}:{masq_subnet}",
                              gr_ref, str(masq_subnet),
                              str(masq_subnet.network_address + MASQUERADE_NEXT_HOP_OFFSET),
                              output_port=rtoe))
    # Cluster router: the node's pods leave through this node's gateway router.
    for subnet in node.subnets:
        hop = next((ip for ip in join_ips if ip.version == subnet.version), None)
        if hop is not None:
            rows.append(route("ClusterRouterNodeSubnetRoute", f"{node.name}:{subnet}",
                              router_ref, str(subnet), str(hop), policy="src-ip"))
    for ip in join_ips:
        rows.append(route("ClusterRouterJoinRoute", f"{node.name}:{ip}", router_ref,
                          str(ip), str(ip)))
    # Traffic from the node's pods to the node goes through the management port: to the
    # node's IPs and, on a user-defined network, to the network's own masquerade IP (as
    # upstream's ``AddSameNodeIPPolicy``, which is given those as the node's addresses).
    # The host's masquerade IP (.2) is not among them: the pods reach it through their
    # gateway router, SNATed to the network's masquerade IP, as any other address.
    mgmt_ips = {s.version: management_ip(s) for s in node.subnets}
    host_destinations = [ip.ip for ip in node_ips] + [gr_ip for gr_ip, _ in masq.values()]
    for destination in host_destinations:
        if destination.version not in mgmt_ips:
            continue
        rows.append(DesiredRow(
            "Logical_Router_Policy",
            _ids(netinfo, owner, "NodeSubnetPolicy", f"{node.name}:{destination}", False),
            {"priority": NODE_SUBNET_POLICY_PRIORITY,
             "match": f'inport == "rtos-{switch_name}" && {_family(destination)}.dst == '
                      f"{destination} /* {switch_name} */",
             "action": "reroute", "nexthops": [str(mgmt_ips[destination.version])]},
            links=(Link(router_ref, "policies"),)))

    def snat(kind: str, name: str, target: Ref, external_ip: IPAddress, logical_ip: str
             ) -> DesiredRow:
        columns = {"type": "snat", "external_ip": str(external_ip), "logical_ip": logical_ip,
                   "options": {"stateless": "false"}}
        return DesiredRow("NAT", _ids(netinfo, owner, kind, name, False), columns,
                          links=(Link(target, "nat"),))

    # Egress SNAT: node IP for the default network, the network's masquerade IP otherwise.
    for version in (4, 6):
        if netinfo.is_default:
            external = next((ip.ip for ip in node_ips if ip.version == version), None)
        else:
            external = masq[version][0] if version in masq else None
        if external is None:
            continue
        for ip in join_ips:
            if ip.version == version:
                rows.append(snat("GatewayRouterJoinSNAT", f"{node.name}:{ip}", gr_ref,
                                 external, str(ip)))
        for cluster in netinfo.subnets:
            if cluster.cidr.version == version:
                rows.append(snat("GatewayRouterClusterSNAT", f"{node.name}:{cluster.cidr}",
                                 gr_ref, external, str(cluster.cidr)))
    return rows


def pod_port_name(netinfo: NetInfo, pod: PodAttachment) -> str:
    """``<ns>_<pod>`` on the default network; NAD-key prefix + that on a UDN (upstream)."""
    return port_names.pod_port_name(DEFAULT_NAD_KEY if netinfo.is_default else pod.nad_key,
                                    pod.namespace, pod.name)


def build_pod(network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
    """The pod's logical port on its node's switch."""
    netinfo = network.netinfo
    owner = pod_owner(netinfo, pod.namespace, pod.name)
    return [build_pod_logical_port(
        _ids(netinfo, owner, "Pod", f"{pod.namespace}/{pod.name}", False),
        pod_port_name(netinfo, pod), pod, Ref.to("Logical_Switch", switch_ids(netinfo, pod.node)),
        nad_key="" if netinfo.is_default else pod.nad_key)]
