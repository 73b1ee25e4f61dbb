"""Kubeconfig files: how a client finds the server, trusts it and proves who it is.

Every kubeconfig ovnk writes pins the cluster CA (``certificate-authority-data``)
and carries one credential, a client certificate (``client-certificate-data``
/ ``client-key-data``) or a bearer ``token``; files are written 0600 because
they hold a key.
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from ovnk_local.apiserver.pki import KeyPair, write_private


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def build_kubeconfig(server: str, ca_pem: bytes, user: str, *, client: KeyPair | None = None,
                     token: str | None = None, cluster: str = "ovnk-local") -> dict[str, object]:
    """A kubeconfig with one cluster, one user and one context (``<user>@<cluster>``)."""
    if (client is None) == (token is None):
        raise ValueError("a kubeconfig needs exactly one credential: a client certificate "
                         "or a token")
    credential: dict[str, str] = ({"token": token} if token is not None else {
        "client-certificate-data": _b64(client.cert_pem),  # type: ignore[union-attr]
        "client-key-data": _b64(client.key_pem)})  # type: ignore[union-attr]
    context = f"{user}@{cluster}"
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": context, "preferences": {},
        "clusters": [{"name": cluster, "cluster": {
            "server": server, "certificate-authority-data": _b64(ca_pem)}}],
        "users": [{"name": user, "user": credential}],
        "contexts": [{"name": context, "context": {"cluster": cluster, "user": user}}],
    }


def write_kubeconfig(path: Path | str, config: dict[str, object]) -> Path:
    """Write ``config`` to ``path`` (0600)."""
    return write_private(path, yaml.safe_dump(config, sort_keys=False))


__all__ = ["build_kubeconfig", "write_kubeconfig"]
