"""Is a pod's ``k8s.ovn.org/pod-networks`` entry one the cluster manager could have written?

Only the cluster manager's pod IPAM should write that annotation, and
admission refuses it from anyone else — but the cluster admin can still write
anything, and the zone controller turns each entry into a logical switch port
with the entry's MAC and IPs.  So, before rendering, the zone checks every
entry against what it knows of the network, the pod's namespace and the
node, here, as pure functions (no I/O, no state):

* **network**: the entry's NAD must be one the pod may use — the default
  network (every pod), the primary network of the pod's own namespace (a UDN
  there, or the NAD a CUDN rendered there), or a secondary network the pod
  requests in ``k8s.v1.cni.cncf.io/networks`` (an unqualified name means the
  pod's namespace; a ``ns/name`` selection may name any namespace, as Multus
  allows unless told to keep pods to their own namespace's NADs, and as the pod
  IPAM allocates).  The
  entry's role must be the network's (``infrastructure-locked`` or
  ``primary`` on the default network; ``infrastructure-locked`` when the zone
  knows a primary network of the namespace).  A host-network pod has no
  attachments.
* **addresses**: each IP, in canonical CIDR form, lies in the node's host
  subnet for the network (the default network and networks whose topology asks
  for node subnets; from the node's ``k8s.ovn.org/node-subnets``) or in the
  network's own subnets (cluster-wide IPAM), with that subnet's prefix length,
  one per subnet, and is not an address the pod IPAM never hands out
  (``pods.ip_pools.excluded_subnets`` and ``allocators.ips.unusable_reason``:
  network and IPv4 broadcast addresses, the gateway and management port
  addresses, ``excludeSubnets``).
* **gateways and routes**: ``gateway_ips`` (and ``ipv6_lla_gateway_ip``) are
  exactly what ``pods.annotation.build_pod_network`` gives for the network,
  role and IPs; every route is one it gives (a subset: routes the current
  configuration would add, such as a new service CIDR, may be missing from an
  older entry).
* **tunnel ID**: present, in 1..32767, on networks whose topology asks for pod tunnel
  IDs; absent on the others.
* **MAC**: six hex octets separated by colons, unicast and not all-zero —
  so NUL bytes, unpaired surrogates or anything else never reach NB.

Problems are returned as exact, human-readable strings (untrusted values are
shown with ``ascii()``); the zone controller reports them on the pod as a
Warning event ``ErrorAddingLogicalPort`` (``REASON``) and renders no row for
that attachment.  Two pods claiming one IP on one network are resolved by
``choose_holder`` (the pod that held it first keeps it) and reported with
``conflict_problem``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ovnk_core.allocators.ips import unusable_reason
from ovnk_core.annotations.pod_networks import (
    MAX_POD_TUNNEL_ID,
    POD_NETWORKS_ANNOTATION,
    PodNetwork,
)
from ovnk_core.config import Config
from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.netinfo import (
    ROLE_INFRASTRUCTURE_LOCKED,
    ROLE_PRIMARY,
    NetInfo,
)
from ovnk_core.pods.annotation import build_pod_network
from ovnk_core.pods.ip_pools import excluded_subnets, infrastructure_ips, uses_node_subnets
from ovnk_core.pods.network_selections import NETWORKS_ANNOTATION
from ovnk_core.topology import Topology

REASON = "ErrorAddingLogicalPort"
"""The Warning event reason of a refused attachment (upstream's, for a port not added)."""

_MAC = re.compile(r"[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}")
_DEFAULT_ROLES = (ROLE_PRIMARY, ROLE_INFRASTRUCTURE_LOCKED)
Interface = ipaddress.IPv4Interface | ipaddress.IPv6Interface


@dataclass(frozen=True)
class PodContext:
    """What the checks need to know of the pod, besides its entry.

    :ivar requested: the NAD keys its ``k8s.v1.cni.cncf.io/networks`` selects (``ns/nad``).
    :ivar primary_nads: the NAD keys of the namespace's primary network(s) the zone knows.
    """

    namespace: str
    name: str
    node: str
    host_network: bool = False
    requested: tuple[str, ...] = ()
    primary_nads: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def refusal_message(pod: PodContext, nad_key: str, network: str | None,
                    problems: Sequence[str]) -> str:
    """The event message of a refused attachment (``network`` None: the entry names no
    network, as for a NAD that does not exist)."""
    which = f" (network {network})" if network is not None else ""
    return (f"pod {pod.key}: not rendering the {POD_NETWORKS_ANNOTATION} entry for {nad_key}"
            f"{which}: " + "; ".join(problems))


def check_attachment(config: Config, pod: PodContext, nad_key: str, entry: PodNetwork,
                     netinfo: NetInfo, node_subnets: Sequence[IPNetwork],
                     topology: Topology | None = None) -> list[str]:
    """Every problem of one entry (empty: it may be rendered).

    :param topology: the network's topology plugin (its ``pod_routing`` says which gateway
        and routes the entry must carry); not needed for the default network.

    :param nad_key: the entry's key (``default`` or the NAD ``ns/name``); it names
        ``netinfo``'s network.
    :param node_subnets: the pod's node's host subnets in this network (used when the
        network's pods take their addresses from node subnets).
    """
    if pod.host_network:
        return ["the pod uses the host network: it has no pod network attachments"]
    problems = _network_problems(pod, nad_key, entry, netinfo)
    role_ok = not problems
    interfaces = _address_problems(pod, entry, netinfo, node_subnets, problems)
    problems += mac_problems(entry.mac_address)
    problems += tunnel_id_problems(entry.tunnel_id, netinfo)
    if role_ok and interfaces is not None:
        problems += _gateway_problems(config, entry, netinfo, interfaces, topology)
    return problems


def _network_problems(pod: PodContext, nad_key: str, entry: PodNetwork, netinfo: NetInfo
                      ) -> list[str]:
    role = entry.role
    if netinfo.is_default:
        if role not in _DEFAULT_ROLES:
            return [f"role {role!a} is not a role on the default network (expected "
                    f"'{ROLE_PRIMARY}' or '{ROLE_INFRASTRUCTURE_LOCKED}')"]
        if role == ROLE_PRIMARY and pod.primary_nads:
            return [f"role '{ROLE_PRIMARY}' on the default network, but namespace "
                    f"{pod.namespace} has the primary network of NAD "
                    f"{', '.join(sorted(pod.primary_nads))} (expected "
                    f"'{ROLE_INFRASTRUCTURE_LOCKED}')"]
        return []
    problems = []
    nad_namespace = nad_key.split("/", 1)[0]
    if netinfo.is_primary:
        if nad_namespace != pod.namespace:
            problems.append(f"network {netinfo.name} is the primary network of namespace "
                            f"{nad_namespace}, not of the pod's namespace {pod.namespace}")
    elif nad_key not in pod.requested:
        problems.append(f"network {netinfo.name} (NAD {nad_key}) is not requested in the "
                        f"pod's {NETWORKS_ANNOTATION}")
    if role != netinfo.role:
        problems.append(f"role {role!a} is not the network's role '{netinfo.role}'")
    return problems


def _address_problems(pod: PodContext, entry: PodNetwork, netinfo: NetInfo,
                      node_subnets: Sequence[IPNetwork], problems: list[str]
                      ) -> list[Interface] | None:
    """Appends the problems of the entry's IPs; returns them parsed when all are fine."""
    per_node = uses_node_subnets(netinfo)
    subnets = tuple(node_subnets) if per_node else tuple(s.cidr for s in netinfo.subnets)
    where = (f"node {pod.node}'s subnet(s) {_list(subnets)} of network {netinfo.name}"
             if per_node else f"the subnet(s) {_list(subnets)} of network {netinfo.name}")
    before = len(problems)
    interfaces: list[Interface] = []
    used: dict[IPNetwork, Interface] = {}
    if not entry.ip_addresses and not subnets and not per_node:
        return []  # a network without IPAM: its pods have a MAC only
    if not entry.ip_addresses:
        problems.append("the entry has no IP address")
    elif not subnets:
        problems.append(f"node {pod.node} has no subnet in network {netinfo.name}" if per_node
                        else f"network {netinfo.name} has no subnets: it gives no IP "
                        "addresses")
        return None
    for text in entry.ip_addresses:
        try:
            if not isinstance(text, str):
                raise ValueError(text)
            interface = ipaddress.ip_interface(text)
        except ValueError:
            problems.append(f"IP address {text!a} is not an address with a prefix length")
            continue
        if "%" in text:
            problems.append(f"IP address {text!a} has a zone index")
            continue
        if str(interface) != text:
            problems.append(f"IP address {text!a} is not in canonical CIDR form "
                            f"({str(interface)!a})")
            continue
        ip = interface.ip
        subnet = next((s for s in subnets if s.version == ip.version and ip in s), None)
        if subnet is None:
            problems.append(f"IP {interface} is outside {where}")
            continue
        if interface.network != subnet:
            problems.append(f"IP {interface} does not have the prefix length of its "
                            f"subnet {subnet}")
            continue
        if subnet in used:
            problems.append(f"IPs {used[subnet]} and {interface} are both in subnet {subnet} "
                            "(one address per subnet)")
            continue
        used[subnet] = interface
        reserved = _reserved(netinfo, subnet, ip)
        if reserved:
            problems.append(f"IP {ip} is {reserved}")
            continue
        interfaces.append(interface)
    return interfaces if len(problems) == before else None


def _reserved(netinfo: NetInfo, subnet: IPNetwork, ip: ipaddress.IPv4Address |
              ipaddress.IPv6Address) -> str | None:
    """What the pod IPAM keeps ``ip`` for, or ``None`` when a pod may have it."""
    excluded = excluded_subnets(None if netinfo.is_default else netinfo, subnet)
    reason = unusable_reason(subnet, excluded, ip)
    if reason is None:
        return None
    gateway, management = infrastructure_ips(netinfo, subnet)
    if ip == gateway:
        return f"the gateway address of {subnet}"
    if ip == management:
        return f"the management port address of {subnet}"
    return reason


def _gateway_problems(config: Config, entry: PodNetwork, netinfo: NetInfo,
                      interfaces: Sequence[Interface], topology: Topology | None
                      ) -> list[str]:
    expected = build_pod_network(config, None if netinfo.is_default else netinfo, entry.role,
                                 interfaces, topology=topology)
    problems = []
    gateways = []
    for text in entry.gateway_ips:
        try:
            if not isinstance(text, str):
                raise ValueError(text)
            gateways.append(ipaddress.ip_address(text))
        except ValueError:
            problems.append(f"gateway IP {text!a} is not an IP address")
    wanted = sorted((ipaddress.ip_address(g) for g in expected.gateway_ips), key=_order)
    if not problems and sorted(gateways, key=_order) != wanted:
        problems.append(f"gateway IPs {_list(gateways) or 'none'} are not the ones the "
                        f"network gives ({_list(wanted) or 'none'})")
    given = {(ipaddress.ip_network(dest), ipaddress.ip_address(hop))
             for dest, hop in expected.routes}
    for dest, hop in entry.routes:
        try:
            if not isinstance(dest, str) or not isinstance(hop, str):
                raise ValueError(dest, hop)
            route = (ipaddress.ip_network(dest), ipaddress.ip_address(hop))
        except ValueError:
            problems.append(f"route {dest!a} via {hop!a} is not a destination "
                            "subnet and a next hop")
            continue
        if route not in given:
            problems.append(f"route {route[0]} via {route[1]} is not one the network gives")
    lla = entry.ipv6_lla_gateway_ip
    if lla and lla != expected.ipv6_lla_gateway_ip:
        problems.append(f"ipv6_lla_gateway_ip {lla!a} is not the one the network gives "
                        f"({expected.ipv6_lla_gateway_ip or 'none'})")
    return problems


def tunnel_id_problems(tunnel_id: int | None, netinfo: NetInfo) -> list[str]:
    """A network whose topology asks for pod tunnel IDs needs one in range; others none."""
    if not netinfo.needs.pod_tunnel_ids:
        return [] if tunnel_id is None else [
            f"tunnel_id {tunnel_id} is set, but network {netinfo.name} gives its pods none"]
    if tunnel_id is None:
        return [f"the entry has no tunnel_id (network {netinfo.name} gives each pod one)"]
    if not 0 < tunnel_id < MAX_POD_TUNNEL_ID:
        return [f"tunnel_id {tunnel_id} is outside 1..{MAX_POD_TUNNEL_ID - 1}"]
    return []


def mac_problems(mac: str) -> list[str]:
    """A pod MAC must be six hex octets separated by colons, unicast, not all zero."""
    if not isinstance(mac, str) or not _MAC.fullmatch(mac):
        return [f"MAC address {mac!a} is not a MAC address (six hex octets separated "
                "by colons)"]
    first = int(mac[:2], 16)
    if first & 1:
        return [f"MAC address {mac} is a multicast address"]
    if not any(int(part, 16) for part in mac.split(":")):
        return [f"MAC address {mac} is the all-zero address"]
    return []


def choose_holder(pod: str, remembered: str | None, claimants: Collection[str],
                  in_nb: Collection[str]) -> str:
    """Which pod keeps an IP that several pods claim on one network.

    :param pod: the pod being reconciled (one of ``claimants``).
    :param remembered: the pod the zone rendered with this IP since it started, if any.
    :param claimants: the live pods whose entry for the network has the IP.
    :param in_nb: claimants whose port in NB is already exactly what their entry renders.

    The pod that held it first keeps it: the one the zone remembers rendering with it;
    after a restart, the one whose port in NB has it (the first by key if an NB written
    before these checks has several); otherwise ``pod`` (first come).
    """
    if remembered is not None and remembered in claimants:
        return remembered
    holders = sorted(c for c in in_nb if c in claimants)
    return holders[0] if holders else pod


def conflict_problem(ip: str, network: str, holder: str) -> str:
    return f"IP {ip} is already used on network {network} by pod {holder}"


def _list(items: Sequence[object]) -> str:
    return ", ".join(str(item) for item in items)


def _order(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> tuple[int, int]:
    return ip.version, int(ip)
