"""Calling the validating admission webhooks of the ValidatingWebhookConfigurations.

What kube-apiserver's validating webhook dispatcher does, for every write a user makes
(the server's own writes, ``user`` None, are not sent: nothing outside it may hold the
server up while it starts or collects garbage):

* the webhooks of every configuration, ordered by configuration name then position, that
  match the request (``webhook_matching``) are called with an ``admission.k8s.io/v1``
  AdmissionReview (``ovnk_core.webhook.review``) carrying the object, the old object, the
  operation, ``dryRun`` and the requester's ``userInfo`` as authentication found it;
* over HTTPS only, trusting ``clientConfig.caBundle`` (the system's CAs when empty), to
  ``clientConfig.url`` or to a service reference.  Every component of this server's
  cluster runs on this host, so a service reference ``name.namespace`` port ``P`` is
  resolved to ``127.0.0.1`` and the ``targetPort`` of the Service's port ``P`` (``P``
  when it has none, or there is no such Service), and its certificate is checked for
  ``name.namespace.svc``, as kube-apiserver checks it;
* ``?timeout=<timeoutSeconds>s`` is added to the path, and the call is abandoned after
  that long;
* a refusal is returned as kube-apiserver words it (``admission webhook "<name>" denied
  the request: <message>``, the webhook's code, at least 400, and reason); the first one
  ends the request;
* a call that fails (cannot connect, times out, TLS not trusted, not a 200, not a valid
  AdmissionReview answer for this request) follows ``failurePolicy``: ``Fail`` refuses the
  request with 500 ``Internal error occurred: failed calling webhook "<name>": ...``,
  ``Ignore`` admits it (logged);
* a dry-run request to a webhook whose ``sideEffects`` are not ``None``/``NoneOnDryRun``
  is refused with 400 (never the case for a v1 configuration: validation requires them).

kube-apiserver calls the webhooks of one request in parallel; these are called one after
the other, which changes when the answer comes, not what it is.  Warnings in an answer are
logged, not passed on to the client.
"""

from __future__ import annotations

import base64
import binascii
import functools
import http.client
import json
import logging
import socket
import ssl
import time
import uuid
from collections.abc import Mapping
from urllib.parse import urlsplit

from ovnk_core.admission.contract import UserInfo, webhook_denial
from ovnk_core.webhook.review import (
    API_VERSION,
    KIND,
    BadReview,
    ReviewResponse,
    decode,
    parse_response,
)
from ovnk_local.apiserver.errors import JSON, ApiStatusError, bad_request
from ovnk_local.apiserver.resources import ResourceType
from ovnk_local.apiserver.store import Store
from ovnk_local.apiserver.webhook_configs import DEFAULT_TIMEOUT, GROUP, webhooks_of
from ovnk_local.apiserver.webhook_matching import Attributes, webhook_matches

log = logging.getLogger(__name__)

CONFIGURATIONS = f"{GROUP}/validatingwebhookconfigurations"
MAX_RESPONSE_BYTES = 3 * 1024 * 1024
LOCAL_SERVICE_HOST = "127.0.0.1"


class CallFailed(Exception):
    """A webhook call that did not produce an answer (``ErrCallingWebhook``'s reason)."""


class _Connection(http.client.HTTPSConnection):
    """HTTPS to ``host:port`` checking the certificate for ``tls_name``."""

    def __init__(self, host: str, port: int, tls_name: str, context: ssl.SSLContext,
                 timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=context)
        self.tls_name = tls_name
        self.tls_context = context

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as http.client does
        self.sock = self.tls_context.wrap_socket(sock, server_hostname=self.tls_name)


class WebhookCaller:
    """Sends the matching writes to the configured webhooks."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def validate(self, rt: ResourceType, subresource: str, operation: str, obj: JSON | None,
                 old: JSON | None, user: UserInfo, dry_run: bool = False) -> None:
        """Raise the ``ApiStatusError`` of the first refusal or failed ``Fail`` call."""
        subject = obj if obj is not None else old or {}
        meta = subject.get("metadata") or {}
        name = str(meta.get("name") or "")
        attrs = Attributes(
            rt.group, rt.version, rt.plural, subresource, operation,
            name if rt.plural == "namespaces" else str(meta.get("namespace") or ""),
            name, rt.kind, obj, old, user, dry_run)
        if attrs.exempt:
            return
        configurations, _ = self.store.objects(CONFIGURATIONS)
        for configuration in configurations:
            for hook in webhooks_of(configuration):
                if webhook_matches(hook, attrs, self._namespace_labels):
                    self._call(hook, attrs)

    def _namespace_labels(self, namespace: str) -> Mapping[str, str]:
        found = self.store.get("/namespaces", "", namespace)
        labels = ((found or {}).get("metadata") or {}).get("labels")
        return labels if isinstance(labels, dict) else {}

    def _call(self, hook: JSON, attrs: Attributes) -> None:
        name = str(hook.get("name") or "")
        if attrs.dry_run and hook.get("sideEffects") not in ("None", "NoneOnDryRun"):
            raise bad_request(f"admission webhook {json.dumps(name)} does not support dry run")
        uid = str(uuid.uuid4())
        try:
            answer = self._post(hook, _review(uid, attrs), uid)
        except CallFailed as failed:
            reason = f"failed calling webhook {json.dumps(name)}: {failed}"
            if hook.get("failurePolicy", "Fail") == "Ignore":
                log.warning("Failed calling webhook, failing open %s: %s", name, reason)
                return
            log.warning("Failed calling webhook, failing closed %s: %s", name, reason)
            raise ApiStatusError(500, "InternalError", f"Internal error occurred: {reason}",
                                 {"causes": [{"message": reason}]}) from None
        for warning in answer.warnings:
            log.info("webhook %s warns: %s", name, warning)
        if not answer.allowed:
            log.info("admission: %s %s/%s denied by webhook %s", attrs.operation,
                     attrs.namespace, attrs.name, name)
            raise _denial(name, answer.status)

    def _post(self, hook: JSON, body: JSON, uid: str) -> ReviewResponse:
        timeout = float(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT)
        config = hook.get("clientConfig") or {}
        host, port, path, tls_name = self._target(config)
        path = f"{path or '/'}{'&' if '?' in path else '?'}timeout={int(timeout)}s"
        display = f"https://{host if ':' not in host else f'[{host}]'}:{port}{path}"
        if config.get("url"):
            shown = urlsplit(str(config["url"]))
            display = f"{shown.scheme}://{shown.netloc}{path}"
        context = _trust(config.get("caBundle"))
        deadline = time.monotonic() + timeout
        connection = _Connection(host, port, tls_name, context, timeout)
        try:
            connection.request("POST", path, json.dumps(body).encode(),
                               {"Content-Type": "application/json",
                                "Accept": "application/json"})
            response = connection.getresponse()
            data = response.read(MAX_RESPONSE_BYTES + 1)
        except TimeoutError:
            raise CallFailed(f'failed to call webhook: Post "{display}": context deadline '
                             "exceeded") from None
        except ConnectionRefusedError:
            raise CallFailed(f'failed to call webhook: Post "{display}": dial tcp '
                             f"{host}:{port}: connect: connection refused") from None
        except ssl.SSLCertVerificationError as exc:
            problem = _GO_X509.get(exc.verify_code, exc.verify_message)
            raise CallFailed(f'failed to call webhook: Post "{display}": tls: failed to '
                             f"verify certificate: x509: {problem}") from None
        except (OSError, http.client.HTTPException) as exc:
            raise CallFailed(f'failed to call webhook: Post "{display}": {exc}') from None
        finally:
            connection.close()
        if time.monotonic() > deadline:
            raise CallFailed(f'failed to call webhook: Post "{display}": context deadline '
                             "exceeded")
        if response.status != 200:
            raise CallFailed(f"failed to call webhook: the server responded with the status "
                             f"code {response.status} but did not return more information")
        if len(data) > MAX_RESPONSE_BYTES:
            raise CallFailed("received invalid webhook response: larger than "
                             f"{MAX_RESPONSE_BYTES} bytes")
        try:
            return parse_response(decode(data), uid)
        except BadReview as exc:
            raise CallFailed(f"received invalid webhook response: {exc}") from None

    def _target(self, config: JSON) -> tuple[str, int, str, str]:
        """host, port, path and the name the certificate must carry."""
        url = config.get("url")
        if url:
            parts = urlsplit(str(url))
            host = parts.hostname or ""
            return host, parts.port or 443, parts.path, host
        service = config.get("service") or {}
        name, namespace = str(service.get("name")), str(service.get("namespace"))
        port = int(service.get("port") or 443)
        return (LOCAL_SERVICE_HOST, self._target_port(namespace, name, port),
                str(service.get("path") or "/"), f"{name}.{namespace}.svc")

    def _target_port(self, namespace: str, name: str, port: int) -> int:
        found = self.store.get("/services", namespace, name)
        for entry in ((found or {}).get("spec") or {}).get("ports") or []:
            if entry.get("port") == port and isinstance(entry.get("targetPort"), int):
                return int(entry["targetPort"])
        return port


def _trust(ca_bundle: object) -> ssl.SSLContext:
    """Trust ``caBundle`` (base64 PEM as stored), or the system's CAs when there is none."""
    try:
        return _context(str(ca_bundle or ""))
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError) as exc:
        raise CallFailed(f"failed to call webhook: caBundle: {exc}") from None


@functools.lru_cache(maxsize=64)
def _context(ca_bundle: str) -> ssl.SSLContext:
    """One client context per bundle (loading CAs costs more than the call itself)."""
    if not ca_bundle:
        return ssl.create_default_context()
    pem = base64.b64decode(ca_bundle, validate=True).decode()
    return ssl.create_default_context(cadata=pem)


def _review(uid: str, attrs: Attributes) -> JSON:
    kind = {"group": attrs.group, "version": attrs.version, "kind": attrs.kind}
    resource = {"group": attrs.group, "version": attrs.version, "resource": attrs.resource}
    request: JSON = {
        "uid": uid, "kind": kind, "resource": resource, "requestKind": kind,
        "requestResource": resource, "name": attrs.name, "operation": attrs.operation,
        "userInfo": attrs.user.as_json(), "object": attrs.object,
        "oldObject": attrs.old_object, "dryRun": attrs.dry_run,
        "options": {"kind": _OPTIONS.get(attrs.operation, "CreateOptions"),
                    "apiVersion": "meta.k8s.io/v1"}}
    if attrs.subresource:
        request["subResource"] = request["requestSubResource"] = attrs.subresource
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    return {"apiVersion": API_VERSION, "kind": KIND, "request": request}


# OpenSSL's verification failures that Go reports as an unknown authority
_GO_X509 = {code: "certificate signed by unknown authority" for code in (18, 19, 20, 21)}
_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


def _denial(webhook: str, status: JSON) -> ApiStatusError:
    """``ToStatusErr``: the webhook's status with kube-apiserver's prefix, at least 400."""
    code = status.get("code")
    code = code if isinstance(code, int) and code >= 400 else 400
    detail = str(status.get("message") or status.get("reason") or "")
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return ApiStatusError(code, str(status.get("reason") or ""),
                          webhook_denial(webhook, detail), details)


__all__ = ["CONFIGURATIONS", "CallFailed", "WebhookCaller"]
