"""How a local cluster started with ``--from-manifests`` uses ``manifest_pods``.

Kept apart from ``cluster.LocalCluster`` so that the cluster only asks two things:
``apply`` (create the manifests' objects and wait until the API server has
aggregated the plugins' roles they carry) and ``record`` (the supervised process of
the cluster manager or of one node's zone controller, from the Deployment and the
DaemonSet the API server holds).  Each node's host file system is
``DIR/hosts/<node>``, each pod's files ``DIR/manifest-pods/<pod>``; the cluster
manager's pod is placed on the first node.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ovnk_core.identities import OVN_NAMESPACE
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.resources import NODES
from ovnk_local import zones
from ovnk_local.apiserver import pki
from ovnk_local.credentials import wait_for_aggregation
from ovnk_local.manifest_pods import (
    CLUSTER_MANAGER,
    ZONE_CONTROLLER,
    Pod,
    container_record,
    provision_node_host,
    render_and_apply,
)
from ovnk_local.state import ClusterState, ProcessRecord

if TYPE_CHECKING:
    from ovnk_local.cluster import LocalCluster

JSON = dict[str, Any]
API_HOST = "127.0.0.1"
# what upstream's OVN containers serve at /var/run/ovn, the DaemonSet's host path for it
ZONE_SOCKETS = {"nb": "/var/run/openvswitch/ovnnb_db.sock",
                "sb": "/var/run/openvswitch/ovnsb_db.sock"}


def apply(cluster: LocalCluster, admin: KubeClient, state: ClusterState) -> list[JSON]:
    """Create or replace every object of ``state.manifests``; wait for the aggregated
    roles to hold the rules the manifests' plugin roles contribute."""
    objects = render_and_apply(admin, Path(state.manifests))
    wait_for_aggregation(admin, objects)
    return objects


def host_root(cluster: LocalCluster, node: str) -> Path:
    return cluster.dir / "hosts" / node


def _node_ip(admin: KubeClient, node: str) -> str:
    addresses = admin.get(NODES, node).get("status", {}).get("addresses") or []
    return next((a["address"] for a in addresses if a.get("type") == "InternalIP"), "")


def record(cluster: LocalCluster, name: str) -> ProcessRecord:
    """The record of ``cluster-manager`` or ``NODE/controller`` from the manifests."""
    state = cluster.state()
    admin = KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))
    node, _, daemon = name.partition("/")
    if daemon == zones.ZONE_CONTROLLER:
        which, pod_name, ready = ZONE_CONTROLLER, f"ovnkube-node-{node}", f"{node}-controller"
        provision_node_host(host_root(cluster, node), {
            ZONE_SOCKETS["nb"]: zones.nb_socket(cluster.ovn_dir, node),
            ZONE_SOCKETS["sb"]: zones.sb_socket(cluster.ovn_dir, node)})
        log = cluster.log_dir / f"{node}-controller.log"
    else:
        node = state.nodes[0]
        which, pod_name, ready = CLUSTER_MANAGER, "ovnkube-control-plane-0", name
        log = cluster.log_dir / f"{name}.log"
    pod = Pod(pod_name, OVN_NAMESPACE, node, _node_ip(admin, node), host_root(cluster, node),
              cluster.dir / "manifest-pods" / pod_name, API_HOST, state.api_port,
              pki.CertificateAuthority.load(cluster.pki_dir).cert_pem)
    made = container_record(admin, which, pod, name, log, cluster.ready_file(ready))
    if daemon == zones.ZONE_CONTROLLER:
        made.role = "node"
        made.requires = [f"{node}/nb-ovsdb"]  # it renders into its zone's NB
    return made


__all__ = ["apply", "host_root", "record"]
