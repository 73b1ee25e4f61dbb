"""The API server's front door: TLS, who is asking, and whether they may.

``SecurityOptions`` names the files (serving certificate and key, client CA,
service-account signing key, optional static token file); ``in_directory``
creates a cluster's CA and keys on first use, as ``kube-apiserver --cert-dir``
does for its serving pair.  ``Security`` puts the pieces together for one
server: the TLS context (client certificates optional, verified against the
client CA), the authenticator, impersonation, the RBAC authorizer, the
service-account token issuer and the review kinds.  The server serves HTTPS
only: there is no insecure port.
"""

from __future__ import annotations

import ipaddress
import logging
import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ovnk_local.apiserver import pki
from ovnk_local.apiserver.authn import MASTERS, Authenticator, TokenFile, TokenVerifier, UserInfo
from ovnk_local.apiserver.authz import Attributes, Decision, forbidden_error
from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.impersonation import impersonated
from ovnk_local.apiserver.kubeconfig import build_kubeconfig, write_kubeconfig
from ovnk_local.apiserver.rbac import RbacAuthorizer
from ovnk_local.apiserver.reviews import Reviews
from ovnk_local.apiserver.serviceaccount_tokens import ServiceAccountTokens
from ovnk_local.apiserver.store import Store

log = logging.getLogger(__name__)

ADMIN_USER = "kubernetes-admin"
SERVICE_ACCOUNTS = "/serviceaccounts"
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class SecurityOptions:
    """The files of the server's TLS and authentication (``kube-apiserver`` flag names)."""

    tls_cert_file: Path          # --tls-cert-file
    tls_private_key_file: Path   # --tls-private-key-file
    client_ca_file: Path         # --client-ca-file
    service_account_key_file: Path   # --service-account-signing-key-file (EC, PEM)
    token_auth_file: Path | None = None  # --token-auth-file
    ca_key_file: Path | None = None      # lets the handle issue client certificates

    @classmethod
    def in_directory(cls, directory: Path | str, hosts: tuple[str, ...] = LOOPBACK_HOSTS,
                     token_auth_file: Path | None = None) -> SecurityOptions:
        """The cluster CA, a serving certificate for ``hosts`` and the service-account key
        kept in ``directory`` (created when missing; keys 0600)."""
        folder = Path(directory)
        folder.mkdir(parents=True, exist_ok=True)
        ca = pki.CertificateAuthority.load_or_create(folder)
        cert, key = folder / "apiserver.crt", folder / "apiserver.key"
        wanted = sorted(set(hosts) | set(LOOPBACK_HOSTS))
        hosts_file = folder / "apiserver.hosts"
        if not (cert.exists() and key.exists() and hosts_file.exists()
                and hosts_file.read_text().split() == wanted):
            ca.issue_server(wanted).write(cert, key)
            hosts_file.write_text(" ".join(wanted) + "\n")
        pki.load_or_create_signing_key(folder)
        return cls(cert, key, folder / pki.CA_CERT, folder / pki.SA_KEY, token_auth_file,
                   folder / pki.CA_KEY)


class Security:
    """Authentication, impersonation and authorization of one running server."""

    def __init__(self, options: SecurityOptions, store: Store) -> None:
        self.options = options
        self.store = store
        key = serialization.load_pem_private_key(
            options.service_account_key_file.read_bytes(), None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{options.service_account_key_file}: the service-account "
                             "signing key must be an EC (P-256) private key")
        self.tokens = ServiceAccountTokens(key, self._service_account_uid)
        verifiers: list[TokenVerifier] = [self.tokens.verify]
        if options.token_auth_file is not None:
            verifiers.insert(0, TokenFile(options.token_auth_file).lookup)
        self.authenticator = Authenticator(verifiers)
        self.rbac = RbacAuthorizer(store)
        self.reviews = Reviews(self.authorize, self.rbac, self.lookup_token)

    def _service_account_uid(self, namespace: str, name: str) -> str | None:
        account = self.store.get(SERVICE_ACCOUNTS, namespace, name)
        return None if account is None else str(account["metadata"].get("uid") or "")

    def lookup_token(self, token: str) -> UserInfo | None:
        for verify in self.authenticator.token_verifiers:
            found = verify(token)
            if found is not None:
                return found
        return None

    def ssl_context(self) -> ssl.SSLContext:
        """Server side: our certificate; client certificates optional, verified if sent."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.options.tls_cert_file, self.options.tls_private_key_file)
        context.load_verify_locations(cafile=str(self.options.client_ca_file))
        context.verify_mode = ssl.CERT_OPTIONAL
        return context

    def authenticate(self, path: str, headers: Any,
                     peer_cert: Mapping[str, Any] | None) -> UserInfo:
        """The requester after impersonation; raises 401/403/400 as the real server does."""
        user = self.authenticator.authenticate(path, headers, peer_cert)
        return impersonated(user, headers, self.authorize)

    def authorize(self, attrs: Attributes) -> Decision:
        return self.rbac.authorize(attrs)

    def require(self, attrs: Attributes) -> None:
        """Raise the 403 a refused request gets."""
        decision = self.authorize(attrs)
        if not decision.allowed:
            log.info("forbidden: %s %s %s/%s %s (%s)", attrs.user.name, attrs.verb,
                     attrs.namespace, attrs.resource_and_subresource,
                     attrs.name or attrs.path, decision.reason or "no rule")
            raise forbidden_error(attrs, decision.reason)

    # -- credentials for clients -----------------------------------------------------------
    def certificate_authority(self) -> pki.CertificateAuthority:
        if self.options.ca_key_file is None:
            raise RuntimeError("this server was given no CA key: it cannot issue client "
                               "certificates")
        return pki.CertificateAuthority.load(self.options.ca_key_file.parent)

    def client_kubeconfig(self, server: str, user: str, groups: tuple[str, ...] = ()) -> JSON:
        """A kubeconfig that authenticates as ``user`` with a fresh client certificate."""
        ca = self.certificate_authority()
        return build_kubeconfig(server, self.options.client_ca_file.read_bytes(), user,
                                client=ca.issue_client(user, groups))


def admin_kubeconfig(directory: Path | str, server: str, path: Path | str) -> Path:
    """Write the cluster administrator's kubeconfig (``kubernetes-admin``, system:masters)
    from the CA kept in ``directory``."""
    folder = Path(directory)
    ca = pki.CertificateAuthority.load(folder)
    config = build_kubeconfig(server, ca.cert_pem, ADMIN_USER,
                              client=ca.issue_client(ADMIN_USER, (MASTERS,)))
    return write_kubeconfig(path, config)


__all__ = ["ADMIN_USER", "Security", "SecurityOptions", "admin_kubeconfig", "is_loopback"]
