"""Pure builders of what a primary Layer2 network adds to its switch: the way out.

Upstream's current topology (the transit router of OKEP-5094; the seed
diagram's gateway router directly on the switch is the older one):

* the network's **transit router** ``<P>transit_router``, on the switch through
  ``trtos-<P>ovn_layer2_switch`` (the subnets' ``.1``, the pods' gateway) and
  ``stotr-<P>ovn_layer2_switch``;
* per node, the **gateway router** ``GR_<P><node>``, joined to the transit router by
  the ``rtotr-``/``trtor-`` pair (a /31 of the transit subnet each: transit router
  ``base + 2·nodeID``, gateway router ``+1``; the gateway router also owns its join
  address, join subnet base + node ID), out to the node's bridge through
  ``rtoe-``/``etor-`` and the external switch ``ext_<P><node>`` with its localnet
  port; routes back to the pods and out, and the SNAT of the network's egress to its
  own masquerade address (subnet base + 10 + 2·networkID - 1).

With interconnect (one zone per node, ``NetworkState.interconnect``) the rows are
upstream's: the transit router sends the whole subnet (``src-ip`` route) to the zone's
one gateway router, and each other zone's node has a remote ``trtor-GR_<P><node>``
(``requested-chassis``, the same tunnel key in every zone) and the route to its gateway
router's join address (``build_remote_gateway``).  In the single zone ovnk renders every
node into one Northbound, so the pieces upstream keeps once per zone (one node) would be
shared by every node on the one switch; there it differs, and why:

* **egress**: upstream's transit router sends the whole subnet (``src-ip`` route) to
  its zone's one gateway router.  Here each pod gets that route for its own address
  (``<pod IP>`` ``src-ip`` → its node's gateway router), so a pod leaves through its
  own node, seen as that node.
* **management port**: upstream gives each node ``k8s-<P><node>`` with the subnet's
  ``.2`` on the switch, reroutes pod traffic for the node's IPs to it (policy 1004)
  and SNATs traffic towards it on the transit router.  One switch cannot deliver one
  ``.2`` (and one MAC) to a different host per node, so ovnk renders none of them: a
  pod reaches node IPs through its gateway router like any other address (SNATed to
  the network's masquerade address), and the IPAM still keeps ``.2`` free.
* **on an OVN without transit routers** (``router_peering`` of
  ``ovnk_core.ovn.capabilities``: below OVN 26.03's NB schema, e.g. Debian 12's 23.03)
  the transit router meets the gateway routers on a switch, ``<P>join`` (ports
  ``jtotr-GR_<P><node>`` and ``jtor-GR_<P><node>``): such an OVN forwards nothing from a
  distributed router straight into a gateway router ("can only be connected to a
  distributed router via a switch", ovn-nb(5)).  On 26.03 ``trtor-``/``rtotr-`` peer
  directly, as upstream; the router ports have upstream's names and addresses on both.
* with that peering, each ``trtor-GR_<P><node>`` is a distributed gateway port on its
  node's chassis (a ``Gateway_Chassis`` ``trtor-GR_<P><node>-<chassis>``, priority 1, as
  upstream pins a node's router ports).  The transit router is distributed, so what it
  routes is routed on the chassis the packet came from; a gateway router exists on its
  own chassis only, and OVN carries nothing between chassis over a router-to-router
  patch.  Upstream never needs it: one zone per node, its transit router holds one
  local ``trtor-`` (the peered one) and, for every other node, a remote one with
  ``requested-chassis`` (a remote chassis only), which tunnels.  Here, without it, a
  NodePort's backend on another node answers the entry node's gateway router
  (``lb_force_snat_ip``) into a datapath its chassis does not have, and the reply is
  lost; the chassis-redirect port (``cr-trtor-...``) takes it there.
* the transit router's switch port has no ``gateway_chassis`` (upstream pins it to
  the zone's chassis; with several nodes that would send every node's traffic
  through one) and the gateway routers no ``Static_MAC_Binding`` rows (that table
  has no external_ids, so ovnk could not own them).

Each builder returns the rows of one owner (the network, one node, one pod) for
``ovnk_core.ovn.declarative``; nothing here does I/O.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.addressing import (
    MASQUERADE_NEXT_HOP_OFFSET,
    IPAddress,
    mac_from_ip,
    masquerade_ips,
)
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import ObjectIDs, Owner
from ovnk_core.ovn.port_types import LSP_TYPE_LOCALNET, LSP_TYPE_ROUTER
from ovnk_core.pods.ip_pools import pod_gateway
from ovnk_core.render_state import NetworkState, NodeState, PodAttachment
from ovnk_core.topology import ServiceAttachment
from ovnk_core.zone.owners import network_owner, node_owner
from ovnk_layer2.desired import SWITCH, row_ids, switch_name, switch_ref

TRANSIT_ROUTER = "transit_router"
JOIN_SWITCH = "join"
TRANSIT_ROUTER_SWITCH_PORT_KEY = "1"  # requested-tnl-key of trtos- on the transit router
NODE_PORT_KEY_OFFSET = 10  # trtor-GR_<node>'s key: 10 + node ID
MAC_BINDING_AGE_THRESHOLD = "300"
IPV6_RA_CONFIGS = {"address_mode": "dhcpv6_stateful", "send_periodic": "true",
                   "max_interval": "900", "min_interval": "300", "router_preference": "LOW"}


# -- names and addresses ---------------------------------------------------------------------
def router_ids(netinfo: NetInfo) -> ObjectIDs:
    return row_ids(netinfo, network_owner(netinfo), "LogicalRouter", TRANSIT_ROUTER)


def router_ref(netinfo: NetInfo) -> Ref:
    return Ref.to("Logical_Router", router_ids(netinfo))


def join_ids(netinfo: NetInfo) -> ObjectIDs:
    return row_ids(netinfo, network_owner(netinfo), "LogicalSwitch", JOIN_SWITCH)


def join_ref(netinfo: NetInfo) -> Ref:
    return Ref.to("Logical_Switch", join_ids(netinfo))


def gateway_router_name(netinfo: NetInfo, node: str) -> str:
    return "GR_" + netinfo.scoped_name(node)


def _v4_first(addresses: Iterable[IPAddress]) -> list[IPAddress]:
    return sorted(addresses, key=lambda a: a.version)


def transit_pair(subnet: IPNetwork, node_id: int) -> tuple[IPAddress, IPAddress]:
    """(transit router side, gateway router side) of a node's /31 (/127) in ``subnet``."""
    base = subnet.network_address + 2 * node_id
    return base, base + 1


def _pair_prefix(subnet: IPNetwork) -> int:
    return subnet.max_prefixlen - 1


def gateway_router_join_ips(network: NetworkState, node_id: int) -> list[IPAddress]:
    """Join subnet base + node ID, per join subnet of the network's families."""
    return [subnet.network_address + node_id for subnet in network.join_subnets]


def pod_gateway_hops(network: NetworkState, node_id: int) -> dict[int, IPAddress]:
    """IP version → the gateway-router side of the node's transit pair: where the transit
    router sends the traffic of that node's pods."""
    return {subnet.version: transit_pair(subnet, node_id)[1]
            for subnet in network.netinfo.transit_subnets}


def _masquerade(network: NetworkState) -> dict[int, IPAddress]:
    """IP version → the network's gateway-router masquerade IP, for the network's families."""
    families = {s.cidr.version for s in network.netinfo.subnets}
    return {subnet.version: masquerade_ips(subnet, network.network_id)[0]
            for subnet in network.masquerade_subnets if subnet.version in families}


# -- the network --------------------------------------------------------------------------------
def build_router(network: NetworkState) -> list[DesiredRow]:
    """The transit router and its port on the switch (the pods' gateway)."""
    netinfo = network.netinfo
    owner = network_owner(netinfo)
    router = router_ids(netinfo)
    options = {"requested-tnl-key": str(network.tunnel_keys[1])} \
        if len(network.tunnel_keys) > 1 else {}
    gateways = [(pod_gateway(netinfo, s.cidr), s.cidr) for s in netinfo.subnets]
    trtos = switch_router_port(netinfo)
    port_options = {"requested-tnl-key": TRANSIT_ROUTER_SWITCH_PORT_KEY,
                    "gateway_mtu": str(netinfo.mtu)}
    columns: dict[str, object] = {
        "name": trtos, "mac": mac_from_ip(_v4_first(ip for ip, _ in gateways)[0]),
        "networks": [f"{ip}/{subnet.prefixlen}" for ip, subnet in gateways],
        "options": port_options}
    if any(subnet.version == 6 for _, subnet in gateways):
        columns["ipv6_ra_configs"] = {**IPV6_RA_CONFIGS, "mtu": str(netinfo.mtu)}
    return [
        DesiredRow("Logical_Router", router,
                   {"name": netinfo.scoped_name(TRANSIT_ROUTER), "options": options},
                   extra_external_ids={"k8s-cluster-router": "yes"}),
        DesiredRow("Logical_Router_Port", row_ids(netinfo, owner, "RouterToSwitchPort", SWITCH),
                   columns, links=(Link(Ref.to("Logical_Router", router), "ports"),)),
        DesiredRow("Logical_Switch_Port", row_ids(netinfo, owner, "SwitchToRouterPort", SWITCH),
                   {"name": "stotr-" + switch_name(netinfo), "type": LSP_TYPE_ROUTER,
                    "addresses": ["router"], "options": {"router-port": trtos}},
                   links=(Link(switch_ref(netinfo), "ports"),)),
        *([] if network.nb.router_peering else [
            DesiredRow("Logical_Switch", join_ids(netinfo),
                       {"name": netinfo.scoped_name(JOIN_SWITCH)})]),
    ]


# -- one node -----------------------------------------------------------------------------------
def switch_router_port(netinfo: NetInfo) -> str:
    """The transit router's port on the network's switch (the pods' gateway)."""
    return "trtos-" + switch_name(netinfo)


def gateway_router_ids(netinfo: NetInfo, node: str) -> ObjectIDs:
    return row_ids(netinfo, node_owner(netinfo, node), "GatewayRouter", node, with_role=True)


def service_attachment(network: NetworkState, node: NodeState) -> ServiceAttachment | None:
    """Services on the network's one switch (for every node: a node's own load balancers
    there answer on its own addresses), and on the node's gateway router once built."""
    routers = (Ref.to("Logical_Router", gateway_router_ids(network.netinfo, node.name)),) \
        if gateway_ready(network, node) else ()
    return ServiceAttachment((switch_ref(network.netinfo),), routers)


def gateway_ready(network: NetworkState, node: NodeState) -> bool:
    """A node's gateway can be built once it published gateway config, chassis and ID, and
    the network has join and transit subnets."""
    return (node.gateway is not None and bool(node.chassis_id) and node.node_id is not None
            and bool(network.join_subnets) and bool(network.netinfo.transit_subnets))


def build_gateway(network: NetworkState, node: NodeState) -> list[DesiredRow]:
    """Gateway router of one node, its ports to the transit router and the bridge, its
    routes and SNATs, and the transit router's route to it."""
    if not gateway_ready(network, node):
        return []
    netinfo = network.netinfo
    gateway = node.gateway
    assert gateway is not None and node.node_id is not None
    owner = node_owner(netinfo, node.name)
    gr_name = gateway_router_name(netinfo, node.name)
    rtotr, trtor, rtoe = f"rtotr-{gr_name}", f"trtor-{gr_name}", f"rtoe-{gr_name}"
    scoped = netinfo.scoped_name(node.name)
    gr = gateway_router_ids(netinfo, node.name)
    ext = row_ids(netinfo, owner, "ExternalSwitch", node.name, with_role=True)
    join_ips = gateway_router_join_ips(network, node.node_id)
    pairs = {s.version: (transit_pair(s, node.node_id), s) for s in netinfo.transit_subnets}
    node_ips = [ipaddress.ip_interface(ip) for ip in gateway.ips]
    masq = _masquerade(network)
    gr_ref, tr_ref = Ref.to("Logical_Router", gr), router_ref(netinfo)
    peering = network.nb.router_peering  # else the pair meets on the join switch

    def ids(kind: str, name: str) -> ObjectIDs:
        return row_ids(netinfo, owner, kind, name)

    rows = [
        DesiredRow("Logical_Router", gr, {"name": gr_name, "options": {
            "always_learn_from_arp_request": "false", "dynamic_neigh_routers": "false",
            "chassis": node.chassis_id,
            "lb_force_snat_ip": " ".join(str(ip) for ip in _v4_first(join_ips)),
            "mac_binding_age_threshold": MAC_BINDING_AGE_THRESHOLD,
            "disable_garp_rarp": "true"}},
            extra_external_ids={
                "physical_ip": str(node_ips[0].ip),
                "physical_ips": ",".join([*(str(ip.ip) for ip in node_ips),
                                          *(str(ip) for ip in masq.values())])}),
        DesiredRow("Logical_Router_Port", ids("RouterToTransitRouterPort", gr_name),
                   {"name": rtotr, "mac": mac_from_ip(_v4_first(join_ips)[0]),
                    "networks": [
                        *(f"{ip}/{s.prefixlen}" for ip, s in zip(join_ips, network.join_subnets,
                                                                  strict=True)),
                        *(f"{pair[1]}/{_pair_prefix(s)}" for pair, s in pairs.values())],
                    "options": {"gateway_mtu": str(netinfo.mtu)},
                    "peer": [trtor] if peering else []},
                   links=(Link(gr_ref, "ports"),)),
        DesiredRow("Logical_Router_Port", ids("TransitRouterToRouterPort", gr_name),
                   {"name": trtor,
                    "mac": mac_from_ip(_v4_first(pair[0] for pair, _ in pairs.values())[0]),
                    "networks": [f"{pair[0]}/{_pair_prefix(s)}" for pair, s in pairs.values()],
                    "options": {"requested-tnl-key": str(NODE_PORT_KEY_OFFSET + node.node_id)},
                    "peer": [rtotr] if peering else []},
                   links=(Link(tr_ref, "ports"),)),
    ]
    if peering:  # the transit router reaches this node's gateway router on its chassis only
        rows.append(DesiredRow(
            "Gateway_Chassis", ids("TransitRouterToRouterGatewayChassis", gr_name),
            {"name": f"{trtor}-{node.chassis_id}", "chassis_name": node.chassis_id,
             "priority": 1},
            links=(Link(Ref.to("Logical_Router_Port",
                               ids("TransitRouterToRouterPort", gr_name)), "gateway_chassis"),)))
    if not peering:  # the pair meets on the network's join switch (see the module docstring)
        rows += [
            DesiredRow("Logical_Switch_Port", ids("JoinToRouterPort", gr_name),
                       {"name": f"jtor-{gr_name}", "type": LSP_TYPE_ROUTER,
                        "addresses": ["router"], "options": {"router-port": rtotr}},
                       links=(Link(join_ref(netinfo), "ports"),)),
            DesiredRow("Logical_Switch_Port", ids("JoinToTransitRouterPort", gr_name),
                       {"name": f"jtotr-{gr_name}", "type": LSP_TYPE_ROUTER,
                        "addresses": ["router"], "options": {"router-port": trtor}},
                       links=(Link(join_ref(netinfo), "ports"),))]
    rows += [
        DesiredRow("Logical_Router_Port", ids("RouterToExternalPort", gr_name),
                   {"name": rtoe, "mac": gateway.mac or mac_from_ip(node_ips[0].ip),
                    "networks": [*(str(ip) for ip in node_ips),
                                 *(f"{ip}/{ip.max_prefixlen}" for ip in masq.values())]},
                   links=(Link(gr_ref, "ports"),)),
        DesiredRow("Logical_Switch", ext, {"name": "ext_" + scoped}),
        DesiredRow("Logical_Switch_Port", ids("ExternalToRouterPort", gr_name),
                   {"name": f"etor-{gr_name}", "type": LSP_TYPE_ROUTER,
                    "addresses": [gateway.mac or "router"], "options": {"router-port": rtoe}},
                   links=(Link(Ref.to("Logical_Switch", ext), "ports"),)),
        DesiredRow("Logical_Switch_Port", ids("ExternalLocalnetPort", node.name),
                   {"name": f"{gateway.bridge_id}_{scoped}", "type": LSP_TYPE_LOCALNET,
                    "addresses": ["unknown"], "options": {"network_name": "physnet"},
                    "tag_request": [gateway.vlan_id] if gateway.vlan_id else []},
                   links=(Link(Ref.to("Logical_Switch", ext), "ports"),)),
    ]

    def route(kind: str, name: str, target: Ref, prefix: str, nexthop: IPAddress,
              output_port: str = "") -> DesiredRow:
        columns: dict[str, object] = {"ip_prefix": prefix, "nexthop": str(nexthop)}
        if output_port:
            columns["output_port"] = output_port
        return DesiredRow("Logical_Router_Static_Route", ids(kind, name), columns,
                          links=(Link(target, "static_routes"),))

    # gateway router: back to the pods through the transit router, out through the bridge
    for subnet in netinfo.subnets:
        pair = pairs.get(subnet.cidr.version)
        if pair is not None:
            rows.append(route("GatewayRouterNetworkRoute", f"{node.name}:{subnet.cidr}",
                              gr_ref, str(subnet.cidr), pair[0][0], rtotr))
    for masq_subnet in network.masquerade_subnets:
        if masq_subnet.version in masq:
            rows.append(route("GatewayRouterMasqueradeRoute", f"{node.name}:{masq_subnet}",
                              gr_ref, str(masq_subnet),
                              masq_subnet.network_address + MASQUERADE_NEXT_HOP_OFFSET, rtoe))
    for hop_text in gateway.next_hops:
        hop = ipaddress.ip_address(hop_text)
        if hop.version in masq:
            default = "0.0.0.0/0" if hop.version == 4 else "::/0"
            rows.append(route("GatewayRouterDefaultRoute", f"{node.name}:{default}", gr_ref,
                              default, hop, rtoe))
    # transit router: the gateway router's join address is behind its transit pair
    for ip in join_ips:
        pair = pairs.get(ip.version)
        if pair is not None:
            rows.append(route("TransitRouterJoinRoute", f"{node.name}:{ip}", tr_ref, str(ip),
                              pair[0][1]))
    if network.interconnect:  # the zone's pods leave through its node's gateway router
        for subnet in netinfo.subnets:
            pair = pairs.get(subnet.cidr.version)
            if pair is not None:
                rows.append(DesiredRow(
                    "Logical_Router_Static_Route",
                    ids("TransitRouterEgressRoute", f"{node.name}:{subnet.cidr}"),
                    {"ip_prefix": str(subnet.cidr), "nexthop": str(pair[0][1]),
                     "policy": "src-ip"},
                    links=(Link(tr_ref, "static_routes"),)))

    def snat(name: str, external_ip: IPAddress, logical_ip: str) -> DesiredRow:
        return DesiredRow("NAT", ids("GatewayRouterSNAT", f"{node.name}:{logical_ip}"),
                          {"type": "snat", "external_ip": str(external_ip),
                           "logical_ip": logical_ip, "options": {"stateless": "false"}},
                          links=(Link(gr_ref, "nat"),))

    # egress leaves as the network's own masquerade IP (the host SNATs it to the node IP)
    for version, external in sorted(masq.items()):
        for ip in join_ips:
            if ip.version == version:
                rows.append(snat(f"{node.name}:{ip}", external, str(ip)))
        for subnet in netinfo.subnets:
            if subnet.cidr.version == version:
                rows.append(snat(f"{node.name}:{subnet.cidr}", external, str(subnet.cidr)))
    return rows


def build_remote_gateway(network: NetworkState, node: NodeState) -> list[DesiredRow]:
    """Another zone's node (interconnect): the transit router's port to that node's
    gateway router as a remote port bound to its chassis (``requested-chassis``, the same
    tunnel key as in the node's own zone, so the transit router spans the zones), and
    the route to that gateway router's join address through it — upstream's
    ``addRouterSetupForRemoteNodeGR``.  None on an OVN without transit routers (no
    ``router_peering``), nor while the node's ID or chassis is not published."""
    if not network.interconnect or not network.nb.router_peering or node.node_id is None \
            or not node.chassis_id or not network.netinfo.transit_subnets:
        return []
    netinfo = network.netinfo
    owner = node_owner(netinfo, node.name)
    gr_name = gateway_router_name(netinfo, node.name)
    trtor = f"trtor-{gr_name}"
    tr_ref = router_ref(netinfo)
    pairs = {s.version: (transit_pair(s, node.node_id), s) for s in netinfo.transit_subnets}
    rows = [DesiredRow(
        "Logical_Router_Port", row_ids(netinfo, owner, "TransitRouterToRouterPort", gr_name),
        {"name": trtor,
         "mac": mac_from_ip(_v4_first(pair[0] for pair, _ in pairs.values())[0]),
         "networks": [f"{pair[0]}/{_pair_prefix(s)}" for pair, s in pairs.values()],
         "options": {"requested-tnl-key": str(NODE_PORT_KEY_OFFSET + node.node_id),
                     "requested-chassis": node.chassis_id},
         "peer": []},
        links=(Link(tr_ref, "ports"),), extra_external_ids={"node": node.name})]
    for ip in gateway_router_join_ips(network, node.node_id):
        pair = pairs.get(ip.version)
        if pair is not None:
            rows.append(DesiredRow(
                "Logical_Router_Static_Route",
                row_ids(netinfo, owner, "TransitRouterJoinRoute", f"{node.name}:{ip}"),
                {"ip_prefix": str(ip), "nexthop": str(pair[0][1])},
                links=(Link(tr_ref, "static_routes"),), extra_external_ids={"node": node.name}))
    return rows


# -- one pod -------------------------------------------------------------------------------------
def build_pod_egress(network: NetworkState, pod: PodAttachment, owner: Owner
                     ) -> list[DesiredRow]:
    """The transit router's ``src-ip`` route of each of the pod's addresses to its node's
    gateway router (upstream routes the whole subnet to its zone's one gateway router),
    and a ``dst-ip`` route of the address to the switch: a /32 ``src-ip`` route would
    otherwise outrank the switch's connected /16 for traffic that comes back through the
    router to the network itself (a service's backend after the switch's load balancer
    rewrote the destination), and take it out through the gateway router.  None with
    interconnect: the zone's one node's gateway router takes the whole subnet's egress
    (``build_gateway``'s ``src-ip`` route of the subnet, as upstream)."""
    if pod.node_id is None or network.interconnect:
        return []
    netinfo = network.netinfo
    hops = pod_gateway_hops(network, pod.node_id)
    rows = []
    for address in pod.addresses:
        hop = hops.get(address.version)
        if hop is None:
            continue
        rows.append(DesiredRow(
            "Logical_Router_Static_Route",
            row_ids(netinfo, owner, "PodEgressRoute", f"{pod.namespace}/{pod.name}:{address}"),
            {"ip_prefix": str(address), "nexthop": str(hop), "policy": "src-ip"},
            links=(Link(router_ref(netinfo), "static_routes"),)))
        rows.append(DesiredRow(
            "Logical_Router_Static_Route",
            row_ids(netinfo, owner, "PodRoute", f"{pod.namespace}/{pod.name}:{address}"),
            {"ip_prefix": str(address), "nexthop": str(address), "policy": "dst-ip",
             "output_port": [switch_router_port(netinfo)]},
            links=(Link(router_ref(netinfo), "static_routes"),)))
    return rows
