"""Authentication: who is asking.  Client certificates, bearer tokens, and nobody else.

As kube-apiserver does it: a client certificate the cluster CA signed names
the user (subject CN) and its groups (subject O); otherwise an
``Authorization: Bearer`` token is looked up in the static token file
(``--token-auth-file`` format) or verified as a service-account token.  A
request with bad credentials, or without any on a path that does not admit
anonymous requests, is refused with the 401 Status a real server sends.  Only
the health endpoints admit anonymous requests (Kubernetes'
``AuthenticationConfiguration`` ``anonymous.conditions`` shape), so probing
``/healthz`` needs no key but nothing else does.
"""

from __future__ import annotations

import csv
import logging
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ovnk_core.admission.contract import MASTERS, UserInfo
from ovnk_local.apiserver.errors import ApiStatusError

log = logging.getLogger(__name__)

AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
ANONYMOUS_USER = "system:anonymous"
ANONYMOUS_PATHS = ("/healthz", "/livez", "/readyz")


ANONYMOUS = UserInfo(ANONYMOUS_USER, (UNAUTHENTICATED,))


def with_authenticated(groups: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """``groups`` plus ``system:authenticated`` (added once, last), as authenticators do."""
    result = tuple(dict.fromkeys(groups))
    return result if AUTHENTICATED in result else (*result, AUTHENTICATED)


def unauthorized() -> ApiStatusError:
    """401 exactly as kube-apiserver words it (kubectl: "You must be logged in ...")."""
    return ApiStatusError(401, "Unauthorized", "Unauthorized")


def user_from_certificate(peer: Mapping[str, Any] | None) -> UserInfo | None:
    """The user a verified peer certificate names (``ssl.getpeercert()`` form)."""
    if not peer:
        return None
    common_name = ""
    organizations: list[str] = []
    for rdn in peer.get("subject") or ():
        for key, value in rdn:
            if key == "commonName":
                common_name = value
            elif key == "organizationName":
                organizations.append(value)
    if not common_name:
        return None
    return UserInfo(common_name, with_authenticated(organizations))


class TokenFile:
    """Static bearer tokens: CSV lines ``token,user,uid[,"group1,group2"]``.

    The file is read again when it changes, so ``ovnk local`` can hand out a token
    without restarting the server.  Malformed lines are skipped with a log line.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._tokens: dict[str, UserInfo] = {}

    def _reload(self) -> None:
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self._tokens, self._stamp = {}, None
            return
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return
        tokens: dict[str, UserInfo] = {}
        with self.path.open(newline="") as handle:
            for number, row in enumerate(csv.reader(handle), 1):
                if not row or row[0].startswith("#"):
                    continue
                if len(row) < 3 or not row[0] or not row[1]:
                    log.warning("%s:%d: expected token,user,uid[,groups]; line skipped",
                                self.path, number)
                    continue
                groups = [g.strip() for g in (row[3] if len(row) > 3 else "").split(",")
                          if g.strip()]
                tokens[row[0]] = UserInfo(row[1], with_authenticated(groups), row[2])
        self._tokens, self._stamp = tokens, stamp

    def lookup(self, token: str) -> UserInfo | None:
        with self._lock:
            self._reload()
            return self._tokens.get(token)


TokenVerifier = Callable[[str], UserInfo | None]


class Authenticator:
    """Client certificate first, then bearer token; anonymous only on ``anonymous_paths``."""

    def __init__(self, token_verifiers: list[TokenVerifier],
                 anonymous_paths: tuple[str, ...] = ANONYMOUS_PATHS) -> None:
        self.token_verifiers = token_verifiers
        self.anonymous_paths = anonymous_paths

    def authenticate(self, path: str, headers: Mapping[str, str],
                     peer_cert: Mapping[str, Any] | None) -> UserInfo:
        """The requester, or 401 ``Unauthorized``."""
        user = user_from_certificate(peer_cert)
        if user is not None:
            return user
        authorization = headers.get("Authorization") or ""
        if authorization:
            scheme, _, token = authorization.strip().partition(" ")
            token = token.strip()
            if scheme.lower() != "bearer" or not token:
                raise unauthorized()
            for verify in self.token_verifiers:
                found = verify(token)
                if found is not None:
                    return found
            log.info("authentication failed: unknown or invalid bearer token for %s", path)
            raise unauthorized()
        if path in self.anonymous_paths or path.startswith(
                tuple(p + "/" for p in self.anonymous_paths)):
            return ANONYMOUS
        raise unauthorized()


__all__ = ["ANONYMOUS", "AUTHENTICATED", "MASTERS", "UNAUTHENTICATED", "Authenticator",
           "TokenFile", "TokenVerifier", "UserInfo", "unauthorized", "user_from_certificate",
           "with_authenticated"]
