"""IPAMClaims: addresses that outlive the pod that first got them (persistent IPs).

A KubeVirt VM's pod is deleted and re-created (restart, live migration) on any node,
and must keep its addresses.  Upstream keeps them in an ``IPAMClaim``
(``k8s.cni.cncf.io/v1alpha1``, namespaced; KubeVirt creates and deletes it, ovnk
never does): a pod names the claim (``ovnk_core.pods.ipam_claim_refs``), the pod
allocator takes the claim's ``status.ips`` when it has some, else allocates and writes
them there, and the addresses are held **by the claim**, not the pod — the pod's
deletion keeps them; the claim's deletion frees them.  Only networks whose NAD allows
persistent IPs (``allowPersistentIPs``, with ``--enable-persistent-ips``) honour a claim.

This module reads claims from their informer and writes their status as upstream
does (condition ``IPsAllocated`` and its reasons); the allocator
(``ovnk_core.clustermanager.pod_ipam``) owns the addresses.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable
from dataclasses import dataclass

from ovnk_core.errors import NotReady
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.conditions import Condition, merge_condition, now_rfc3339
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import Conflict, NotFound
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import IPAMCLAIMS

log = logging.getLogger(__name__)

CONDITION = "IPsAllocated"
SUCCESS = Condition(CONDITION, "True", "SuccessfulAllocation",
                    "IP addresses successfully allocated")
SUBNET_EXHAUSTED = "SubnetExhausted"
IP_ADDRESS_CONFLICT = "IPAddressConflict"
INTERNAL_ERROR = "InternalError"


class ClaimError(ValueError):
    """A claim cannot give or take the pod's addresses; ``reason`` is the condition's."""

    def __init__(self, message: str, reason: str = INTERNAL_ERROR) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Claim:
    """What the allocator reads of one IPAMClaim."""

    namespace: str
    name: str
    network: str  # spec.network: the network's name (ns_udn, cluster_udn_x)
    ips: tuple[str, ...]  # status.ips, CIDR form

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def owner(self) -> str:
        """Who holds its addresses in the allocators."""
        return f"ipamclaim:{self.key}"


def read_claim(obj: JSON) -> Claim:
    """:raises ClaimError: ``spec.network`` or ``status.ips`` is not what the CRD says."""
    meta = obj.get("metadata") or {}
    key = f"{meta.get('namespace')}/{meta.get('name')}"
    network = (obj.get("spec") or {}).get("network")
    if not isinstance(network, str) or not network:
        raise ClaimError(f"IPAMClaim {key}: spec.network {network!a} is not a network name")
    ips = (obj.get("status") or {}).get("ips") or []
    if not isinstance(ips, list):
        raise ClaimError(f"IPAMClaim {key}: status.ips is not a list")
    for ip in ips:
        try:
            if not isinstance(ip, str):
                raise ValueError(ip)
            ipaddress.ip_interface(ip)
        except ValueError:
            raise ClaimError(f"IPAMClaim {key}: status.ips entry {ip!a} is not an address "
                             "with a prefix length") from None
    return Claim(str(meta.get("namespace")), str(meta.get("name")), network, tuple(ips))


def claim_network(obj: JSON) -> list[str]:
    """Index: a claim by its ``spec.network``."""
    network = (obj.get("spec") or {}).get("network")
    return [network] if isinstance(network, str) and network else []


class IpamClaims:
    """The cluster's IPAMClaims, and the writer of their status.

    :param on_deleted: called with a claim's owner (``Claim.owner``) once the claim is
        gone, to free its addresses.
    """

    def __init__(self, client: KubeClient, informers: InformerFactory,
                 on_deleted: Callable[[str], None]) -> None:
        self.client = client
        self.informer = informers.get(IPAMCLAIMS, indexers={"network": claim_network})
        self.on_deleted = on_deleted
        self.controller = Controller("cluster-manager-ipamclaims", self.reconcile, workers=1)
        self.controller.watch(self.informer, primary=True)

    def find(self, namespace: str, name: str) -> Claim | None:
        """The claim, or ``None`` when it does not exist.

        :raises ClaimError: it exists but cannot be read.
        """
        obj = self.informer.peek(f"{namespace}/{name}")
        return None if obj is None else read_claim(obj)

    def of_network(self, network: str) -> list[Claim]:
        """Every readable claim of ``network`` (unreadable ones are logged)."""
        claims = []
        for obj in self.informer.peek_by_index("network", network):
            try:
                claims.append(read_claim(obj))
            except ClaimError as exc:
                log.warning("%s", exc)
        return claims

    def reconcile(self, key: str) -> None:
        if self.informer.peek(key) is None:
            self.on_deleted(f"ipamclaim:{key}")

    def record(self, claim: Claim, pod: str, ips: list[str] | None, reason: str = "",
               message: str = "") -> None:
        """Write the outcome into the claim's status, as upstream: on success its IPs,
        owner pod and ``IPsAllocated=True`` — only when it had no IPs yet (a claim whose
        IPs are reused is not rewritten); on failure no IPs and ``IPsAllocated=False``
        with the reason.

        :raises ClaimError: the claim already has other IPs than ``ips``.
        :raises NotReady: the write failed (the pod is retried).
        """
        if ips is not None and claim.ips:
            if sorted(claim.ips) != sorted(ips):
                raise ClaimError(f"failed to update IPAMClaim {claim.key!r} - overwriting "
                                 f"existing IPs {list(claim.ips)!r} with newer IPs {ips!r}")
            return
        obj = self.informer.peek(claim.key)
        if obj is None:
            raise NotReady(f"IPAMClaim {claim.key} is gone")
        condition = SUCCESS if ips is not None else Condition(CONDITION, "False", reason,
                                                              message)
        conditions, _ = merge_condition(list((obj.get("status") or {}).get("conditions") or []),
                                        condition, now_rfc3339())
        status: JSON = {"ips": ips or [], "conditions": conditions}
        if ips is not None:
            status["ownerPod"] = {"name": pod}
        try:
            self.client.patch_status(IPAMCLAIMS, claim.name, {
                "metadata": {"resourceVersion": obj["metadata"].get("resourceVersion")},
                "status": status}, claim.namespace)
        except (Conflict, NotFound) as exc:
            raise NotReady(f"IPAMClaim {claim.key}: status not written ({exc})",
                           delay=0.2) from None

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
