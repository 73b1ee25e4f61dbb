"""The address set of the default services user-defined networks may use, as upstream keeps it.

With network segmentation on, upstream's zone controller keeps one address set per IP
family of the cluster, ``udn-enabled-svc-cluster-ips``, holding every ClusterIP of the
services named in ``--udn-allowed-default-services`` (controller ``udn-enabled-svc``,
``pkg/ovn/controller/udnenabledsvc``).  Its rows are named and identified as upstream's
(``a<hash>`` of the primary id ``udn-enabled-svc:UDNEnabledService:<name>:<v4|v6>``, with
upstream's external_ids plus ovnk's owner key), so rows upstream wrote are taken over
and features that match on the set (route advertisement, EgressIP in upstream) find it
under upstream's name.  Nothing in ovnk matches on it today: UDN pods reach the allowed
services through the gateway bridge (``ovnk_core.node.gateway``).

As upstream, the set is never deleted, not even when network segmentation is turned
off: consumers may still refer to it.  Level-driven: any change of an allowed service
converges the whole set (one key), found by key lookups of the allowed services only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import SERVICES, object_key
from ovnk_core.ovn.declarative import DesiredRow, apply
from ovnk_core.ovn.hashed_names import hash_for_ovn
from ovnk_core.ovn.ownership import ObjectIDs, Owner
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.zone.services.lb_config import parse_service

CONTROLLER_NAME = "udn-enabled-svc"
OWNER_TYPE = "UDNEnabledService"
ADDRESS_SET_NAME = "udn-enabled-svc-cluster-ips"
IP_FAMILY_KEY = "ip-family"
FAMILY_IDS = {4: "v4", 6: "v6"}
KEY = "cluster"
OWNER = Owner(CONTROLLER_NAME, KEY)


def address_set_ids(version: int) -> ObjectIDs:
    """Upstream's ids of the set of one IP family (``GetAddressSetDBIDs`` + ``ip-family``)."""
    return OWNER.object_ids(OWNER_TYPE, ADDRESS_SET_NAME,
                            extra=((IP_FAMILY_KEY, FAMILY_IDS[version]),))


def address_set_name(version: int) -> str:
    """The set's OVN name: ``a`` + FNV-1a-64 of its primary id, as upstream hashes it."""
    return hash_for_ovn(address_set_ids(version).primary_id)


def build_address_sets(cluster_ips: Iterable[str], families: Iterable[int]
                       ) -> list[DesiredRow]:
    """One set per IP family of the cluster (IPv4 first), each with the ClusterIPs of its
    family; addresses of a family the cluster does not have are left out, as upstream."""
    ips = {ipaddress.ip_address(ip) for ip in cluster_ips}
    rows = []
    for version in sorted(set(families)):
        addresses = sorted(str(ip) for ip in ips if ip.version == version)
        rows.append(DesiredRow("Address_Set", address_set_ids(version),
                               {"name": address_set_name(version), "addresses": addresses}))
    return rows


class UdnEnabledServices:
    """Keeps ``udn-enabled-svc-cluster-ips`` to the ClusterIPs of the allowed services.

    :param allowed: the ``<namespace>/<name>`` keys of ``--udn-allowed-default-services``.
    :param families: the cluster's IP families (one set each).
    """

    def __init__(self, informers: InformerFactory, nb: NbWriter, allowed: Iterable[str],
                 families: Iterable[int]) -> None:
        self.nb = nb
        self.allowed = tuple(dict.fromkeys(allowed))
        self._allowed_keys = frozenset(self.allowed)
        self.families = tuple(sorted(set(families)))
        self.services = informers.get(SERVICES)
        self.controller = Controller(CONTROLLER_NAME, self.reconcile,
                                     initial_sync=lambda: self.controller.queue.add(KEY))
        self.controller.watch(self.services, key_func=self._key_of)

    def _key_of(self, service: JSON) -> list[str]:
        return [KEY] if object_key(service) in self._allowed_keys else []

    def cluster_ips(self) -> list[str]:
        """Every ClusterIP of the allowed services that exist (headless ones have none)."""
        found: list[str] = []
        for key in self.allowed:
            service = self.services.peek(key)
            spec = parse_service(service) if service is not None else None
            if spec is not None:
                found += spec.cluster_ips
        return found

    def reconcile(self, _key: str) -> None:
        apply(self.nb, OWNER, build_address_sets(self.cluster_ips(), self.families))

    def repair(self, owner: Owner) -> bool:
        """Another writer changed rows of ``owner``: converge them again when they are the
        set's (True then)."""
        if owner != OWNER:
            return False
        self.controller.queue.add(KEY)
        return True

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
