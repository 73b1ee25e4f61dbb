"""Addresses derived from subnets and IDs, by upstream's formulas.

Inside a node's host subnet (or a network's shared subnet) the first host
is the gateway (router port) and the second the management port; MACs of
OVN-managed addresses are ``0a:58:`` followed by the IPv4 bytes (IPv6: the
first four bytes of the address's SHA-256); per-network masquerade IPs come
from the network ID.
"""

from __future__ import annotations

import hashlib
import ipaddress

from ovnk_core.config.values import IPNetwork

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
MASQUERADE_BASE_OFFSET = 10
# Global addresses of the masquerade subnet (offsets from its base), as upstream: .1 OVN (what
# the host sees a gateway router's service traffic to a host endpoint come from), .2 the host,
# .4 the gateway routers' next hop towards it, .5 the source of OVN's service hairpin SNAT.
OVN_MASQUERADE_OFFSET = 1
HOST_MASQUERADE_OFFSET = 2
MASQUERADE_NEXT_HOP_OFFSET = 4
OVN_SERVICE_HAIRPIN_OFFSET = 5
# The longest IPv4 node-subnet prefix that leaves pods an address: network, gateway (.1),
# management port (.2) and broadcast take four, so /30 and /31 have none (and a /31 has no .2).
MAX_V4_HOST_PREFIX = 29


def v4_host_prefix_problem(host_prefix: int) -> str | None:
    """Why an IPv4 node subnet of this prefix length cannot be used (``None``: it can)."""
    if host_prefix <= MAX_V4_HOST_PREFIX:
        return None
    return (f"HostSubnet must be at most {MAX_V4_HOST_PREFIX} for ipv4 CIDR: a /{host_prefix} "
            "node subnet has no address left for pods after its network, gateway (.1), "
            "management port (.2) and broadcast addresses")


def gateway_ip(subnet: IPNetwork) -> IPAddress:
    return subnet.network_address + 1


def management_ip(subnet: IPNetwork) -> IPAddress:
    return subnet.network_address + 2


def mac_from_ip(ip: IPAddress | str) -> str:
    address = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
    if address.version == 4:
        tail = address.packed
    else:
        tail = hashlib.sha256(str(address).encode()).digest()[:4]
    return "0a:58:" + ":".join(f"{byte:02x}" for byte in tail)


def masquerade_ips(subnet: IPNetwork, network_id: int) -> tuple[IPAddress, IPAddress]:
    """(gateway-router masquerade IP, management-port masquerade IP) of a network ID.

    :raises ValueError: ID below 1, or an address outside the masquerade subnet.
    """
    if network_id < 1:
        raise ValueError(f"invalid network ID {network_id}: masquerade IPs need an ID >= 1")
    gateway = subnet.network_address + MASQUERADE_BASE_OFFSET + 2 * network_id - 1
    management = gateway + 1
    if management not in subnet:
        raise ValueError(f"masquerade subnet {subnet} is too small for network ID "
                         f"{network_id} (needs {management})")
    return gateway, management


def link_local_from_mac(mac: str) -> ipaddress.IPv6Address:
    """The EUI-64 IPv6 link-local address (fe80::/64) of a MAC address."""
    octets = [int(part, 16) for part in mac.split(":")]
    octets[0] ^= 0x02
    eui = [*octets[:3], 0xFF, 0xFE, *octets[3:]]
    return ipaddress.IPv6Address(bytes([0xFE, 0x80, 0, 0, 0, 0, 0, 0, *eui]))
