"""Who each process of the local cluster is, and the kubeconfig it gets.

Every process runs as its own identity, bound to the least it needs: the
cluster manager and the zone controller as the service accounts of
``ovnk_core/manifests/rbac`` (a TokenRequest token, signed by the API server),
each node agent with a per-node client certificate (``system:ovn-node:<node>``
in ``system:ovn-nodes``), the scheduler, kubelet and EndpointSlice stand-ins
with client certificates bound by ``local/rbac``.  The ClusterRoles the
enabled plugins contribute (their ``rbac_rules``) are applied with ovnk's, and
the components start only once the API server has aggregated them into the
components' ``<role>-plugins`` roles.  The administrator's kubeconfig
(``kubernetes-admin``, ``system:masters``) is the one people use.  Every
kubeconfig is written 0600 under ``DIR/kubeconfigs``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovnk_core.config import Config
from ovnk_core.identities import (
    CLUSTER_MANAGER_SA,
    CONTROLLER_SA,
    NODES_GROUP,
    OVN_NAMESPACE,
    node_agent_user,
)
from ovnk_core.kube.apply import apply_documents
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import CLUSTER_ROLES, SERVICE_ACCOUNTS
from ovnk_core.manifests.plugin_rbac import missing_aggregated_rules
from ovnk_core.manifests.rbac import documents_in, ovnk_rbac_documents
from ovnk_local.apiserver import pki
from ovnk_local.apiserver.kubeconfig import build_kubeconfig, write_kubeconfig

log = logging.getLogger(__name__)

LOCAL_RBAC_DIR = Path(__file__).resolve().parent / "rbac"
TOKEN_SECONDS = 365 * 24 * 3600
AGGREGATION_TIMEOUT = 10.0


@dataclass(frozen=True)
class Identity:
    """One process's identity: a service account (token) or a user (certificate)."""

    user: str
    groups: tuple[str, ...] = ()
    service_account: str = ""   # name in OVN_NAMESPACE; empty: client certificate


SERVICE_ACCOUNT_COMPONENTS = {
    "cluster-manager": Identity("", service_account=CLUSTER_MANAGER_SA),
    "controller": Identity("", service_account=CONTROLLER_SA),
}
CERTIFICATE_COMPONENTS = {
    "scheduler": Identity("system:kube-scheduler"),
    "kubelet": Identity("system:ovnk-local:kubelet"),
    "endpointslice-controller": Identity(
        "system:kube-controller-manager:endpointslice-controller"),
}


def node_identity(node: str) -> Identity:
    return Identity(node_agent_user(node), (NODES_GROUP,))


def rbac_documents(config: Config | None = None) -> list[dict[str, Any]]:
    """The RBAC a deployment ships for ovnk (with ``config``: and the ClusterRoles of the
    plugins it enables), then the local stand-ins' roles."""
    return [*ovnk_rbac_documents(config), *documents_in(LOCAL_RBAC_DIR)]


def wait_for_aggregation(admin: KubeClient, documents: list[dict[str, Any]],
                         timeout: float = AGGREGATION_TIMEOUT) -> list[str]:
    """Wait until the components' aggregated roles hold the rules ``documents`` contribute
    (the API server aggregates them in the background); the roles still lacking some when
    ``timeout`` passes (logged: a component then meets 403s until they catch up)."""
    deadline = time.monotonic() + timeout
    while True:
        late = missing_aggregated_rules(admin.list(CLUSTER_ROLES)["items"], documents)
        if not late or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    if late:
        log.warning("ClusterRoles %s do not hold the rules plugins contribute after %.0fs",
                    ", ".join(late), timeout)
    return late


class Credentials:
    """Issues the kubeconfigs of one local cluster (its CA lives in ``pki_dir``)."""

    def __init__(self, pki_dir: Path, kubeconfig_dir: Path, server: str) -> None:
        self.pki_dir = pki_dir
        self.dir = kubeconfig_dir
        self.server = server

    def path(self, component: str) -> Path:
        return self.dir / f"{component.replace('/', '-')}.kubeconfig"

    def _ca(self) -> pki.CertificateAuthority:
        return pki.CertificateAuthority.load(self.pki_dir)

    def write_certificate(self, component: str, identity: Identity) -> Path:
        ca = self._ca()
        config = build_kubeconfig(self.server, ca.cert_pem, identity.user,
                                  client=ca.issue_client(identity.user, identity.groups))
        return write_kubeconfig(self.path(component), config)

    def write_token(self, component: str, admin: KubeClient, account: str) -> Path:
        """A kubeconfig with a year-long token of ``account`` (requested as the admin)."""
        reply = admin.create_subresource(
            SERVICE_ACCOUNTS, account, "token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
             "spec": {"expirationSeconds": TOKEN_SECONDS}}, OVN_NAMESPACE)
        config = build_kubeconfig(self.server, self._ca().cert_pem,
                                  f"system:serviceaccount:{OVN_NAMESPACE}:{account}",
                                  token=reply["status"]["token"])
        return write_kubeconfig(self.path(component), config)

    def issue_all(self, admin: KubeClient, nodes: list[str],
                  config: Config | None = None, ovnk_rbac: bool = True) -> dict[str, Path]:
        """Apply the RBAC manifests (and the plugins' ``config`` enables), then write every
        process's kubeconfig.  ``ovnk_rbac=False``: only the stand-ins' roles (ovnk's came
        from ``dist/``, ``ovnk local up --from-manifests``)."""
        documents = rbac_documents(config) if ovnk_rbac else documents_in(LOCAL_RBAC_DIR)
        apply_documents(admin, documents)
        wait_for_aggregation(admin, documents)
        paths = {name: self.write_token(name, admin, identity.service_account)
                 for name, identity in SERVICE_ACCOUNT_COMPONENTS.items()}
        paths.update({name: self.write_certificate(name, identity)
                      for name, identity in CERTIFICATE_COMPONENTS.items()})
        for node in nodes:
            paths[f"node-agent-{node}"] = self.write_certificate(f"node-agent-{node}",
                                                                 node_identity(node))
        return paths


__all__ = ["CERTIFICATE_COMPONENTS", "SERVICE_ACCOUNT_COMPONENTS", "Credentials", "Identity",
           "node_identity", "rbac_documents", "wait_for_aggregation"]
