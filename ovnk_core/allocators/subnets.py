"""Per-node host subnets carved out of a network's subnets (the default network and every
network whose topology asks for node subnets, ``NetworkNeeds.node_subnets``).

Each node gets one slice per IP family, of the subnet's host prefix length
(``10.244.0.0/16/24`` gives /24 slices).  Slices are numbered across the
network's subnets of that family, and a node gets the lowest free number;
slices already written on nodes are reserved again after a restart, never
recomputed.  Running out fails only the node asking, with a message naming
the network and node.
"""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Sequence

from ovnk_core.config.values import ClusterSubnet, IPNetwork


class SubnetsExhausted(ValueError):
    """No free host subnet is left in a network for a node."""


class SubnetConflict(ValueError):
    """A subnet to reserve is outside the network or taken by another node."""


class _Family:
    def __init__(self, subnets: list[ClusterSubnet]) -> None:
        self.subnets = subnets
        self.sizes = [2 ** (s.host_prefix - s.cidr.prefixlen) for s in subnets]
        self.used: dict[int, str] = {}

    def slot_subnet(self, slot: int) -> IPNetwork:
        for subnet, size in zip(self.subnets, self.sizes, strict=True):
            if slot < size:
                base = int(subnet.cidr.network_address) + slot * 2 ** (
                    subnet.cidr.max_prefixlen - subnet.host_prefix)
                return ipaddress.ip_network(
                    f"{ipaddress.ip_address(base)}/{subnet.host_prefix}")
            slot -= size
        raise IndexError(slot)

    def slot_of(self, net: IPNetwork) -> int | None:
        offset = 0
        for subnet, size in zip(self.subnets, self.sizes, strict=True):
            if (net.version == subnet.cidr.version and net.prefixlen == subnet.host_prefix
                    and net.subnet_of(subnet.cidr)):  # type: ignore[arg-type]
                step = 2 ** (subnet.cidr.max_prefixlen - subnet.host_prefix)
                index: int = (int(net.network_address)
                              - int(subnet.cidr.network_address)) // step
                return offset + index
            offset += size
        return None

    def free_slot(self) -> int | None:
        slot = 0
        total = sum(self.sizes)
        while slot < total:
            if slot not in self.used:
                return slot
            slot += 1
        return None


class HostSubnetAllocator:
    def __init__(self, network: str, subnets: Sequence[ClusterSubnet]) -> None:
        self.network = network
        self._families = {version: _Family([s for s in subnets if s.cidr.version == version])
                          for version in sorted({s.cidr.version for s in subnets})}
        self._by_node: dict[str, list[IPNetwork]] = {}
        self._lock = threading.Lock()

    def get(self, node: str) -> list[IPNetwork] | None:
        with self._lock:
            found = self._by_node.get(node)
            return list(found) if found is not None else None

    def reserve(self, node: str, subnets: Sequence[str]) -> None:
        """Claim the node's existing subnets (from its annotation)."""
        with self._lock:
            nets = [ipaddress.ip_network(text, strict=False) for text in subnets]
            claims = []
            for net in nets:
                family = self._families.get(net.version)
                slot = family.slot_of(net) if family is not None else None
                if family is None or slot is None:
                    raise SubnetConflict(f"network {self.network}: subnet {net} of node {node} "
                                         "is not a host subnet of this network")
                holder = family.used.get(slot)
                if holder is not None and holder != node:
                    raise SubnetConflict(f"network {self.network}: subnet {net} of node {node} "
                                         f"is already allocated to node {holder}")
                claims.append((family, slot))
            for family, slot in claims:
                family.used[slot] = node
            self._by_node[node] = nets

    def allocate(self, node: str) -> list[IPNetwork]:
        """The node's subnets (one per family), allocating what it lacks."""
        with self._lock:
            current = list(self._by_node.get(node) or [])
            have = {net.version for net in current}
            for version, family in self._families.items():
                if version in have:
                    continue
                slot = family.free_slot()
                if slot is None:
                    raise SubnetsExhausted(
                        f"error allocating network {self.network} for node {node}: no available "
                        f"IPv{version} host subnets in "
                        f"{', '.join(str(s) for s in family.subnets)}")
                family.used[slot] = node
                current.append(family.slot_subnet(slot))
            self._by_node[node] = current
            return list(current)

    def release(self, node: str) -> None:
        with self._lock:
            for family in self._families.values():
                for slot in [s for s, holder in family.used.items() if holder == node]:
                    del family.used[slot]
            self._by_node.pop(node, None)

    def nodes(self) -> list[str]:
        with self._lock:
            return list(self._by_node)
