"""The addresses IPAMClaims hold in the pod allocator's pools (persistent IPs).

A pod that names a claim on a network with persistent IPs does not hold its
addresses itself: the claim does (owner ``ipamclaim:<ns>/<name>``), so the pod's
deletion leaves them taken and the claim's deletion frees them.  This keeps that
bookkeeping apart from the pod allocator (``pod_ipam``), which calls it under its
own lock and owns the pools; reading and writing claims is ``ipam_claims``'s.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from typing import Any

from ovnk_core.allocators.ips import IpAllocationError, IpAllocator
from ovnk_core.clustermanager.ipam_claims import (
    IP_ADDRESS_CONFLICT,
    SUBNET_EXHAUSTED,
    Claim,
    ClaimError,
    IpamClaims,
)
from ovnk_core.networks.netinfo import NetInfo

log = logging.getLogger(__name__)

Interface = ipaddress.IPv4Interface | ipaddress.IPv6Interface
AllocatorFor = Callable[[str, NetInfo | None, Any], tuple[str, IpAllocator]]
"""(network, netinfo, subnet) -> (pool key, pool): the allocator's pool of a subnet."""


class ClaimHoldings:
    """Which claim holds which addresses, and which pods use which claims.

    :param claims: the cluster's claims (``None``: persistent IPs are off).
    :param allocator_for: the pod allocator's pool of a subnet (created on first use).
    :param pool: the pool of a key, if it exists.
    """

    def __init__(self, claims: IpamClaims | None, allocator_for: AllocatorFor,
                 pool: Callable[[str], IpAllocator | None]) -> None:
        self.claims = claims
        self.allocator_for = allocator_for
        self.pool = pool
        self.held: dict[str, set[str]] = {}  # claim owner -> pool keys it holds addresses in
        self.pods: dict[str, set[str]] = {}  # pod key -> claim owners it uses
        self.reserved: set[str] = set()  # networks whose claims' addresses are reserved

    def note_pod(self, pod_key: str, owner: str) -> None:
        self.pods.setdefault(pod_key, set()).add(owner)

    def gone_claims_of(self, pod_key: str) -> list[str]:
        """Forget a pod; the owners of the claims it used that no longer exist."""
        owners = self.pods.pop(pod_key, set())
        if self.claims is None:
            return []
        return [owner for owner in owners
                if self.claims.informer.peek(owner.removeprefix("ipamclaim:")) is None]

    def hold(self, owner: str, network: str, netinfo: NetInfo | None,
             interface: Interface) -> None:
        """:raises ClaimError: the address is not free for this claim."""
        key, allocator = self.allocator_for(network, netinfo, interface.network)
        try:
            allocator.reserve(owner, interface.ip)
        except IpAllocationError as exc:
            raise ClaimError(str(exc), IP_ADDRESS_CONFLICT) from None
        self.held.setdefault(owner, set()).add(key)

    def release(self, owner: str) -> None:
        for key in self.held.pop(owner, set()):
            allocator = self.pool(key)
            if allocator is not None:
                allocator.release(owner)

    def reserve_network(self, network: str, netinfo: NetInfo | None) -> None:
        """Before the network's first allocation, the addresses of its claims (upstream's
        ``IPAMClaimReconciler.Sync``); a claim whose IPs cannot be held is logged."""
        if network in self.reserved or self.claims is None:
            return
        self.reserved.add(network)
        for claim in self.claims.of_network(network):
            for text in claim.ips:
                try:
                    self.hold(claim.owner, network, netinfo, ipaddress.ip_interface(text))
                except ClaimError as exc:
                    log.warning("IPAMClaim %s: %s not reserved: %s", claim.key, text, exc)

    def addresses(self, pod_key: str, claim: Claim, network: str, netinfo: NetInfo | None,
                  subnets: list[Any]) -> list[Interface]:
        """The claim's addresses for the pod: its ``status.ips`` when it has some, else one
        new address per subnet, held by the claim.

        :raises ClaimError: the claim's IPs are not the network's or are another's, or a
            subnet is full (the caller writes that into a claim that has no IPs yet).
        """
        self.note_pod(pod_key, claim.owner)
        interfaces: list[Interface] = []
        if claim.ips:
            for text in claim.ips:
                interface = ipaddress.ip_interface(text)
                if interface.network not in subnets:
                    raise ClaimError(f"IPAMClaim {claim.key}: {text} is not in the subnets of "
                                     f"network {network}", IP_ADDRESS_CONFLICT)
                self.hold(claim.owner, network, netinfo, interface)
                interfaces.append(interface)
            return interfaces
        for subnet in subnets:
            key, allocator = self.allocator_for(network, netinfo, subnet)
            try:
                address = allocator.allocate(claim.owner)
            except IpAllocationError as exc:
                raise ClaimError(str(exc), SUBNET_EXHAUSTED) from None
            self.held.setdefault(claim.owner, set()).add(key)
            interfaces.append(ipaddress.ip_interface(f"{address}/{subnet.prefixlen}"))
        return interfaces
