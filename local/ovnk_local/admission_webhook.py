"""``ovnk webhook`` in the local cluster: its certificates, its process, its configurations.

A real cluster runs ovnk's annotation rules as upstream runs ovnkube-identity: a
validating webhook server that kube-apiserver calls through ValidatingWebhookConfigurations.
``ovnk local`` does the same with its API server: ``up`` gives the webhook its own CA and a
serving certificate (``DIR/pki/webhook``: ``ca.crt``/``ca.key``, ``tls.crt``/``tls.key``
for ``localhost``, ``127.0.0.1`` and the in-cluster name ``ovnkube-webhook.ovn-kubernetes.svc``),
runs ``ovnk webhook`` on a free loopback port as a supervised process (``webhook``,
restarted when it dies, like upstream's Deployment), waits for it, and applies the two
configurations upstream's chart ships (``ovn-kubernetes-admission-webhook-node`` and
``-pod``: ``clientConfig.url`` on localhost, as upstream's, with the CA as ``caBundle``,
``failurePolicy: Fail``).  Unlike upstream's (``nodes/status`` and ``pods/status`` only) they
cover the main resources too, as ovnk's rules always did: a pod created with a forged
``pod-networks`` is refused.  The API server loads no annotation rule in-process any more.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

from ovnk_core.admission.annotations import NODE_PATH, NODE_WEBHOOK, POD_PATH, POD_WEBHOOK
from ovnk_core.identities import OVN_NAMESPACE
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import AlreadyExists
from ovnk_core.kube.resources import VALIDATING_WEBHOOK_CONFIGURATIONS
from ovnk_core.webhook.server import CERT_NAME, KEY_NAME
from ovnk_local.apiserver.pki import CA_CERT, CA_KEY, CertificateAuthority, KeyPair, key_pem
from ovnk_local.state import ProcessRecord

WEBHOOK = "webhook"
SERVICE_NAME = "ovnkube-webhook"
HOSTS = ["localhost", "127.0.0.1", f"{SERVICE_NAME}.{OVN_NAMESPACE}.svc"]


class LocalWebhook:
    """The webhook of one ``up``: its certificate directory and port."""

    def __init__(self, cert_dir: Path, port: int) -> None:
        self.cert_dir = cert_dir
        self.port = port

    def ensure_certificates(self) -> CertificateAuthority:
        """The webhook's own CA (kept) and a serving certificate it signed."""
        folder = self.cert_dir
        if (folder / CA_CERT).exists() and (folder / CA_KEY).exists():
            ca = CertificateAuthority.load(folder)
        else:
            ca = CertificateAuthority.create("ovnk-webhook-ca")
            KeyPair(ca.cert_pem, key_pem(ca.key)).write(folder / CA_CERT, folder / CA_KEY)
        if not (folder / CERT_NAME).exists() or not (folder / KEY_NAME).exists():
            ca.issue_server(HOSTS, SERVICE_NAME).write(folder / CERT_NAME, folder / KEY_NAME)
        return ca

    def record(self, log_dir: Path, ready_file: Path) -> ProcessRecord:
        """``ovnk webhook`` as the supervisor runs it (certificates made first)."""
        self.ensure_certificates()
        return ProcessRecord(
            WEBHOOK, "component",
            [sys.executable, "-m", "ovnk_core.cli.main", "webhook", "--webhook-cert-dir",
             str(self.cert_dir), "--webhook-host", "127.0.0.1", "--webhook-port",
             str(self.port), "--ready-file", str(ready_file)],
            str(log_dir / f"{WEBHOOK}.log"), supervised=True, ready_file=str(ready_file))

    def configurations(self) -> list[dict[str, Any]]:
        """The node and pod ValidatingWebhookConfigurations pointing at this webhook."""
        bundle = base64.b64encode((self.cert_dir / CA_CERT).read_bytes()).decode()
        return [_configuration(NODE_WEBHOOK, "nodes", f"https://localhost:{self.port}"
                               f"{NODE_PATH}", bundle),
                _configuration(POD_WEBHOOK, "pods", f"https://localhost:{self.port}"
                               f"{POD_PATH}", bundle)]

    def configure(self, admin: KubeClient) -> None:
        """Create the configurations, or point the kept ones at today's port."""
        for document in self.configurations():
            try:
                admin.create(VALIDATING_WEBHOOK_CONFIGURATIONS, document)
            except AlreadyExists:
                current = admin.get(VALIDATING_WEBHOOK_CONFIGURATIONS,
                                    document["metadata"]["name"])
                document["metadata"]["resourceVersion"] = current["metadata"][
                    "resourceVersion"]
                admin.update(VALIDATING_WEBHOOK_CONFIGURATIONS, document)


def _configuration(webhook: str, resource: str, url: str, bundle: str) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": webhook.removesuffix(".k8s.io")},
        "webhooks": [{
            "name": webhook,
            "clientConfig": {"url": url, "caBundle": bundle},
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "timeoutSeconds": 10,
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                       "apiVersions": ["v1"], "resources": [resource, f"{resource}/status"],
                       "scope": "*"}],
        }],
    }


__all__ = ["WEBHOOK", "LocalWebhook"]
