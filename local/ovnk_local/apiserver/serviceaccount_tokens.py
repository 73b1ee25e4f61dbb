"""Service-account tokens: ``kubectl create token NAME`` and bearer authentication with them.

The TokenRequest subresource (``serviceaccounts/NAME/token``) signs a JWT
(ES256, with the cluster's service-account key) carrying the claims
kube-apiserver puts in one; the verifier accepts a token only when its
signature, issuer, audience and expiry hold and the service account it names
still exists with the same uid, so deleting the account revokes its tokens.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from ovnk_local.apiserver.authn import UserInfo, with_authenticated
from ovnk_local.apiserver.errors import JSON, FieldError, invalid

ISSUER = "https://kubernetes.default.svc.cluster.local"
AUDIENCE = ISSUER
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
MAX_EXPIRATION = 2 ** 32
SA_PREFIX = "system:serviceaccount:"

UidLookup = Callable[[str, str], str | None]


def username(namespace: str, name: str) -> str:
    """``system:serviceaccount:<namespace>:<name>``."""
    return f"{SA_PREFIX}{namespace}:{name}"


def split_username(user: str) -> tuple[str, str] | None:
    """(namespace, name) of a service account user name, or None for any other user."""
    if not user.startswith(SA_PREFIX):
        return None
    namespace, sep, name = user[len(SA_PREFIX):].partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return namespace, name


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return with_authenticated(("system:serviceaccounts", f"system:serviceaccounts:{namespace}"))


class ServiceAccountTokens:
    """Issues and verifies the tokens of the service accounts ``lookup_uid`` knows."""

    def __init__(self, signing_key: ec.EllipticCurvePrivateKey, lookup_uid: UidLookup,
                 issuer: str = ISSUER, audiences: tuple[str, ...] = (AUDIENCE,)) -> None:
        self.signing_key = signing_key
        self.public_key = signing_key.public_key()
        self.lookup_uid = lookup_uid
        self.issuer = issuer
        self.audiences = audiences

    def token_request(self, service_account: JSON, request: Any) -> JSON:
        """The TokenRequest reply for ``request`` (its spec validated as the real server does)."""
        body = request if isinstance(request, dict) else {}
        spec = body.get("spec") or {}
        meta = service_account["metadata"]
        seconds = spec.get("expirationSeconds")
        if seconds is None:
            seconds = DEFAULT_EXPIRATION
        if not isinstance(seconds, int) or isinstance(seconds, bool):
            raise invalid("authentication.k8s.io", "TokenRequest", meta["name"], [FieldError(
                "Invalid", "spec.expirationSeconds", seconds, "must be an integer")])
        if seconds < MIN_EXPIRATION:
            raise invalid("authentication.k8s.io", "TokenRequest", meta["name"], [FieldError(
                "Invalid", "spec.expirationSeconds", seconds,
                "may not specify a duration less than 10 minutes")])
        if seconds > MAX_EXPIRATION:
            raise invalid("authentication.k8s.io", "TokenRequest", meta["name"], [FieldError(
                "TooLong", "spec.expirationSeconds", seconds,
                "may not specify a duration larger than 2^32 seconds")])
        audiences = [a for a in spec.get("audiences") or [] if isinstance(a, str)] or list(
            self.audiences)
        now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        expires = now + dt.timedelta(seconds=seconds)
        claims = {"iss": self.issuer, "sub": username(meta["namespace"], meta["name"]),
                  "aud": audiences, "iat": now, "nbf": now, "exp": expires,
                  "jti": str(uuid.uuid4()),
                  "kubernetes.io": {"namespace": meta["namespace"], "serviceaccount": {
                      "name": meta["name"], "uid": meta.get("uid", "")}}}
        token = jwt.encode(claims, self.signing_key, algorithm="ES256")
        return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"name": meta["name"], "namespace": meta["namespace"],
                             "creationTimestamp": None},
                "spec": {"audiences": audiences, "expirationSeconds": seconds,
                         "boundObjectRef": spec.get("boundObjectRef")},
                "status": {"token": token,
                           "expirationTimestamp": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}}

    def verify(self, token: str) -> UserInfo | None:
        """The service account a valid token names; None for anything else."""
        if token.count(".") != 2:
            return None
        try:
            claims = jwt.decode(token, self.public_key, algorithms=["ES256"],
                                audience=list(self.audiences), issuer=self.issuer,
                                options={"require": ["exp", "iss", "sub", "aud"]})
        except jwt.PyJWTError:
            return None
        private = claims.get("kubernetes.io")
        if not isinstance(private, dict):
            return None
        account = private.get("serviceaccount") or {}
        namespace, name = private.get("namespace"), account.get("name")
        if not isinstance(namespace, str) or not isinstance(name, str):
            return None
        if claims.get("sub") != username(namespace, name):
            return None
        uid = self.lookup_uid(namespace, name)
        if uid is None or uid != account.get("uid"):
            return None
        extra = {"authentication.kubernetes.io/credential-id": (f"JTI={claims.get('jti')}",)}
        return UserInfo(username(namespace, name), service_account_groups(namespace), uid, extra)


__all__ = ["ServiceAccountTokens", "service_account_groups", "split_username", "username"]
