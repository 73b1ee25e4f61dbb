"""Pod addresses within a subnet: never the same address twice, rebuilt after restarts.

One ``IpAllocator`` serves one subnet (a node's slice of a network whose
topology asks for node subnets, or the whole subnet of a network with
cluster-wide IPAM).  The network address, the IPv4
broadcast address and the excluded ranges (gateway .1 and management .2,
``excludeSubnets``) are never handed out.  Allocation continues after the
last address given out, so a freed address is not reused at once.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterable

from ovnk_core.config.values import IPNetwork
from ovnk_core.networks.addressing import IPAddress


class IpAllocationError(ValueError):
    """Subnet full, address outside the subnet or excluded, or held by another owner."""


def unusable_reason(subnet: IPNetwork, excluded: Iterable[IPNetwork], ip: IPAddress
                    ) -> str | None:
    """Why ``ip`` is never handed out in ``subnet`` (``None``: it may be).

    The one rule of what an allocator gives: inside the subnet, not its network address,
    not the IPv4 broadcast address (subnets larger than /31), in none of ``excluded``.
    """
    if ip.version != subnet.version or ip not in subnet:
        return f"outside {subnet}"
    if ip == subnet.network_address:
        return f"the network address of {subnet}"
    if subnet.version == 4 and subnet.prefixlen < 31 and ip == subnet.broadcast_address:
        return f"the broadcast address of {subnet}"
    for net in excluded:
        if net.version == ip.version and ip in net:
            return f"excluded from {subnet} (in {net})"
    return None


def free_addresses(subnet: IPNetwork, excluded: Iterable[IPNetwork]) -> int:
    """How many addresses of ``subnet`` an allocator can hand out (``unusable_reason``'s
    rule), counted without walking the subnet."""
    kept = [ipaddress.ip_network(f"{subnet.network_address}/{subnet.max_prefixlen}")]
    if subnet.version == 4 and subnet.prefixlen < 31:
        kept.append(ipaddress.ip_network(f"{subnet.broadcast_address}/32"))
    for net in excluded:
        if net.version != subnet.version or not net.overlaps(subnet):  # type: ignore[arg-type]
            continue
        if subnet.subnet_of(net):  # type: ignore[arg-type]
            return 0
        kept.append(net)  # overlapping CIDRs: one holds the other, so this one is inside
    collapsed: Iterable[IPNetwork] = ipaddress.collapse_addresses(kept)  # type: ignore[type-var]
    return subnet.num_addresses - sum(net.num_addresses for net in collapsed)


class IpAllocator:
    def __init__(self, subnet: IPNetwork, excluded: Iterable[IPNetwork] = ()) -> None:
        self.subnet = subnet
        self.excluded = [net for net in excluded if net.version == subnet.version]
        self._by_owner: dict[str, IPAddress] = {}
        self._by_ip: dict[IPAddress, str] = {}
        self._next = 1
        self._lock = threading.Lock()

    def _usable(self, ip: IPAddress) -> bool:
        return unusable_reason(self.subnet, self.excluded, ip) is None

    def reserve(self, owner: str, ip: IPAddress | str) -> None:
        address = ipaddress.ip_address(ip) if isinstance(ip, str) else ip
        with self._lock:
            if not self._usable(address):
                raise IpAllocationError(f"{address} is not allocatable in {self.subnet}")
            holder = self._by_ip.get(address)
            if holder is not None and holder != owner:
                raise IpAllocationError(f"{address} in {self.subnet} is already allocated to "
                                        f"{holder}")
            self._by_owner[owner] = address
            self._by_ip[address] = owner

    def allocate(self, owner: str) -> IPAddress:
        with self._lock:
            current = self._by_owner.get(owner)
            if current is not None:
                return current
            size = self.subnet.num_addresses
            for step in range(size):
                offset = (self._next + step) % size
                address = self.subnet.network_address + offset
                if address in self._by_ip or not self._usable(address):
                    continue
                self._by_owner[owner] = address
                self._by_ip[address] = owner
                self._next = offset + 1
                return address
        raise IpAllocationError(f"subnet {self.subnet} is full: no address left for {owner}")

    def release(self, owner: str) -> None:
        with self._lock:
            address = self._by_owner.pop(owner, None)
            if address is not None:
                self._by_ip.pop(address, None)

    def get(self, owner: str) -> IPAddress | None:
        with self._lock:
            return self._by_owner.get(owner)
