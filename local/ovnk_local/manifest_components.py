"""How a local cluster started with ``--from-manifests`` uses ``manifest_pods``.

Kept apart from ``cluster.LocalCluster`` so that the cluster only asks a few things:
``apply`` (create the manifests' objects and wait until the API server has
aggregated the plugins' roles they carry), ``record`` (the supervised process of the
cluster manager or of one node's zone controller) and ``agent_record`` (one node's
agent), from the Deployment and the DaemonSet the API server holds, and
``cni_socket`` (where a node's agent serves CNI, as the host sees it).

Each node's host file system is ``DIR/hosts/<node>``, except ``/var/run/openvswitch``,
the node's own OVS directory (its ``db.sock``, its bridges' sockets, and the zone's
``ovnnb_db.sock``/``ovnsb_db.sock`` linked there, upstream's names),
``/var/run/ovn-kubernetes``, ``/run/ovnk-local/<cluster prefix>/<node>`` (the CNI socket's
path must stay short), and ``/var/run/netns``, the host's (every node's network namespaces are the
host's).  The
node agent's certificate kubeconfig (``system:ovn-node:<node>``) is put at the node's
``/etc/ovn/ovnkube-node-certs/kubeconfig``, where the DaemonSet expects it provisioned.
Each pod's files are in ``DIR/manifest-pods/<pod>``; the cluster manager's pod is
placed on the first node.  The webhook's Service and ValidatingWebhookConfigurations
(``dist/webhook``) are left out: ``ovnk local`` runs ``ovnk webhook`` itself, with a
certificate of its own, and points the API server at it.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
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
    NODE_AGENT,
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
# the webhook's Service and configurations: ovnk local runs `ovnk webhook` itself and
# configures the API server to call it (ovnk_local.admission_webhook)
WEBHOOK_KINDS = ("Service", "ValidatingWebhookConfiguration")
OVS_RUN = "/var/run/openvswitch"  # the DaemonSet mounts it at /var/run/ovn too
NETNS = "/var/run/netns"
NODE_KUBECONFIG = "/etc/ovn/ovnkube-node-certs/kubeconfig"
CNI_RUN = "/var/run/ovn-kubernetes"
CNI_SOCKET = f"{CNI_RUN}/cni/ovn-cni-server.sock"
CNI_RUN_ROOT = Path("/run/ovnk-local")


def apply(cluster: LocalCluster, admin: KubeClient, state: ClusterState) -> list[JSON]:
    """Create or replace every object of ``state.manifests``; wait for the aggregated
    roles to hold the rules the manifests' plugin roles contribute."""
    objects = render_and_apply(admin, Path(state.manifests), WEBHOOK_KINDS)
    wait_for_aggregation(admin, objects)
    return objects


def host_root(cluster: LocalCluster, node: str) -> Path:
    return cluster.dir / "hosts" / node


def _node_ip(admin: KubeClient, node: str) -> str:
    addresses = admin.get(NODES, node).get("status", {}).get("addresses") or []
    return next((a["address"] for a in addresses if a.get("type") == "InternalIP"), "")


def host_paths(cluster: LocalCluster, node: str) -> dict[str, Path]:
    """The node's host paths that are not under its ``host_root``."""
    # the CNI socket's directory is short and does not grow with the cluster's directory: a
    # unix socket's path has at most 107 bytes (under DIR it overflowed in a pytest-xdist
    # worker's temporary directory)
    return {OVS_RUN: cluster.dataplane.dir / node, NETNS: Path(NETNS),
            CNI_RUN: cni_run_root(cluster) / node}


def cni_run_root(cluster: LocalCluster) -> Path:
    """The nodes' ``/var/run/ovn-kubernetes`` directories of ``cluster`` (removed by ``down``)."""
    return CNI_RUN_ROOT / cluster.dataplane.prefix


def cni_socket(cluster: LocalCluster, node: str) -> Path:
    """Where the node agent the DaemonSet declares serves CNI, as the host sees it."""
    return host_paths(cluster, node)[CNI_RUN] / Path(CNI_SOCKET).relative_to(CNI_RUN)


def _pod(cluster: LocalCluster, admin: KubeClient, name: str, node: str) -> Pod:
    return Pod(name, OVN_NAMESPACE, node, _node_ip(admin, node), host_root(cluster, node),
               cluster.dir / "manifest-pods" / name, API_HOST, cluster.state().api_port,
               pki.CertificateAuthority.load(cluster.pki_dir).cert_pem,
               host_paths(cluster, node))


def _admin(cluster: LocalCluster) -> KubeClient:
    return KubeClient(api_client_from_kubeconfig(str(cluster.kubeconfig)))


def record(cluster: LocalCluster, name: str) -> ProcessRecord:
    """The record of ``cluster-manager`` or ``NODE/controller`` from the manifests."""
    admin = _admin(cluster)
    node, _, daemon = name.partition("/")
    if daemon != zones.ZONE_CONTROLLER:
        pod = _pod(cluster, admin, "ovnkube-control-plane-0", cluster.state().nodes[0])
        return container_record(admin, CLUSTER_MANAGER, pod, name,
                                cluster.log_dir / f"{name}.log", cluster.ready_file(name))
    ovs_dir = host_paths(cluster, node)[OVS_RUN]
    provision_node_host({ovs_dir / "ovnnb_db.sock": zones.nb_socket(cluster.ovn_dir, node),
                         ovs_dir / "ovnsb_db.sock": zones.sb_socket(cluster.ovn_dir, node)})
    made = container_record(admin, ZONE_CONTROLLER, _pod(cluster, admin,
                                                         f"ovnkube-node-{node}", node),
                            name, cluster.log_dir / f"{node}-controller.log",
                            cluster.ready_file(f"{node}-controller"))
    made.role = "node"
    made.requires = [f"{node}/nb-ovsdb"]  # it renders into its zone's NB
    return made


def agent_record(cluster: LocalCluster, node: str, local_args: Sequence[str],
                 ready_file: Path, log: Path) -> ProcessRecord:
    """The record of ``node``'s agent, the DaemonSet's ``ovnkube-node`` container, with its
    node's certificate kubeconfig provisioned where the container reads it."""
    certificate = host_root(cluster, node) / NODE_KUBECONFIG.lstrip("/")
    certificate.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cluster.component_kubeconfig(f"node-agent-{node}"), certificate)
    certificate.chmod(0o600)
    admin = _admin(cluster)
    made = container_record(admin, NODE_AGENT, _pod(cluster, admin, f"ovnkube-node-{node}",
                                                    node),
                            f"{node}/node-agent", log, ready_file, local_args)
    made.role = "node"
    return made


__all__ = ["agent_record", "apply", "cni_socket", "host_paths", "host_root", "record"]
