"""The benchmarks' UDN workload: U labelled namespaces, each with a primary Layer3 UDN."""

from __future__ import annotations

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NADS, NAMESPACES, UDNS
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

CIDR = "10.128.0.0/14"  # every network the same range: isolated networks may overlap


def create_primary_udns(admin: KubeClient, count: int) -> list[str]:
    """Namespaces ``u0`` … ``u<count-1>``, each with a primary Layer3 UDN ``net``, once the
    cluster manager accepted every network (its NAD has a network ID); their names."""
    namespaces = [f"u{i}" for i in range(count)]
    for namespace in namespaces:
        admin.create(NAMESPACES, {"metadata": {"name": namespace, "labels": {
            PRIMARY_NAMESPACE_LABEL: ""}}})
        admin.create(UDNS, {"metadata": {"name": "net", "namespace": namespace},
                            "spec": {"topology": "Layer3", "layer3": {
                                "role": "Primary", "subnets": [
                                    {"cidr": CIDR, "hostSubnet": 24}]}}})
    wait_until(lambda: sum("k8s.ovn.org/network-id" in (n["metadata"].get("annotations") or {})
                           for n in admin.list(NADS)["items"]) == count,
               timeout=60 + count, interval=0.5, what=f"{count} networks accepted")
    return namespaces
