"""The cluster's certificates: a CA, the API server's serving certificate, client certificates.

A kube-apiserver identifies clients by the certificates its client CA signed
(subject CN = user name, O = groups) and serves HTTPS with a certificate its
clients verify against the same CA.  ``ovnk local up`` and the test fixtures
create one CA per cluster with this module (keys are ECDSA P-256, made by the
``cryptography`` library) and keep every private key in a 0600 file.  The same
module holds the service-account signing key (ES256 tokens, see
``serviceaccount_tokens``).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=365)
CA_CERT, CA_KEY = "ca.crt", "ca.key"
SA_KEY, SA_PUB = "sa.key", "sa.pub"


def write_private(path: Path | str, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` readable by its owner only (0600), whatever the umask."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, raw)
    finally:
        os.close(fd)
    return target


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """A private key as unencrypted PKCS#8 PEM."""
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    """The public half of ``key`` as SubjectPublicKeyInfo PEM."""
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)


@dataclass(frozen=True)
class KeyPair:
    """A certificate and its private key, both PEM."""

    cert_pem: bytes
    key_pem: bytes

    def write(self, cert_path: Path, key_path: Path) -> None:
        cert_path.parent.mkdir(parents=True, exist_ok=True)
        cert_path.write_bytes(self.cert_pem)
        write_private(key_path, self.key_pem)


def subject_of(common_name: str, organizations: tuple[str, ...] = ()) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in organizations]
    attributes.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
    return x509.Name(attributes)


class CertificateAuthority:
    """A self-signed CA that signs the server's and the clients' certificates."""

    def __init__(self, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> None:
        self.cert = cert
        self.key = key

    @classmethod
    def create(cls, common_name: str = "ovnk-local-ca") -> CertificateAuthority:
        key = _new_key()
        name = subject_of(common_name)
        now = dt.datetime.now(dt.UTC)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - dt.timedelta(minutes=5))
                .not_valid_after(now + CA_VALIDITY)
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(
                    digital_signature=True, content_commitment=False, key_encipherment=False,
                    data_encipherment=False, key_agreement=False, key_cert_sign=True,
                    crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
                .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                               critical=False)
                .sign(key, hashes.SHA256()))
        return cls(cert, key)

    @classmethod
    def load(cls, directory: Path) -> CertificateAuthority:
        cert = x509.load_pem_x509_certificate((directory / CA_CERT).read_bytes())
        key = serialization.load_pem_private_key((directory / CA_KEY).read_bytes(), None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{directory / CA_KEY}: not an EC private key")
        return cls(cert, key)

    @classmethod
    def load_or_create(cls, directory: Path) -> CertificateAuthority:
        """The CA kept in ``directory`` (``ca.crt``/``ca.key``), created on first use."""
        if (directory / CA_CERT).exists() and (directory / CA_KEY).exists():
            return cls.load(directory)
        ca = cls.create()
        KeyPair(ca.cert_pem, key_pem(ca.key)).write(directory / CA_CERT, directory / CA_KEY)
        return ca

    @property
    def cert_pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def _leaf(self, subject: x509.Name, usage: x509.ObjectIdentifier,
              sans: list[x509.GeneralName]) -> KeyPair:
        key = _new_key()
        now = dt.datetime.now(dt.UTC)
        builder = (x509.CertificateBuilder().subject_name(subject)
                   .issuer_name(self.cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - dt.timedelta(minutes=5))
                   .not_valid_after(now + LEAF_VALIDITY)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                                  critical=True)
                   .add_extension(x509.KeyUsage(
                       digital_signature=True, content_commitment=False, key_encipherment=True,
                       data_encipherment=False, key_agreement=False, key_cert_sign=False,
                       crl_sign=False, encipher_only=False, decipher_only=False),
                       critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                       self.key.public_key()), critical=False))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return KeyPair(cert.public_bytes(serialization.Encoding.PEM), key_pem(key))

    def issue_server(self, hosts: list[str], common_name: str = "kube-apiserver") -> KeyPair:
        """A serving certificate valid for every host name and IP address in ``hosts``."""
        sans: list[x509.GeneralName] = []
        for host in hosts:
            try:
                sans.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                sans.append(x509.DNSName(host))
        return self._leaf(subject_of(common_name), ExtendedKeyUsageOID.SERVER_AUTH, sans)

    def issue_client(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate that authenticates as ``user`` in ``groups`` (CN, O)."""
        if not user:
            raise ValueError("a client certificate needs a user name")
        return self._leaf(subject_of(user, groups), ExtendedKeyUsageOID.CLIENT_AUTH, [])


def load_or_create_signing_key(directory: Path) -> ec.EllipticCurvePrivateKey:
    """The service-account token signing key (``sa.key``, public half ``sa.pub``)."""
    path = directory / SA_KEY
    if path.exists():
        key = serialization.load_pem_private_key(path.read_bytes(), None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{path}: not an EC private key")
    else:
        key = _new_key()
        write_private(path, key_pem(key))
    (directory / SA_PUB).write_bytes(public_pem(key))
    return key


__all__ = ["CertificateAuthority", "KeyPair", "key_pem", "load_or_create_signing_key",
           "public_pem", "write_private"]
