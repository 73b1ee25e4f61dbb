"""``ovnk webhook``'s HTTPS server: AdmissionReviews in, answers out, whatever the client sends.

What upstream's ovnkube-identity serves with controller-runtime, on the standard library:

* HTTPS only, with the certificate and key of ``--webhook-cert-dir`` (``tls.crt``,
  ``tls.key``); the files are read again when they change (as controller-runtime's
  certwatcher does), so a renewed certificate needs no restart.  TLS 1.2 at least
  (``--tls-min-version`` raises it).  The handshake runs on the connection's own thread,
  bounded by a timeout: a silent client cannot stall the accept loop.
* ``POST <path>`` of each registered rule (``/node``, ``/pod``) with
  ``Content-Type: application/json``: the AdmissionReview answer (``endpoints``), HTTP 200.
* A body that is not an AdmissionReview request gets HTTP 400, with an AdmissionReview
  whose response is refused with code 400 and says what is wrong; a body over
  ``MAX_REQUEST_BYTES`` gets 413 without being read, one without a length 411, a wrong
  content type 415, an unknown path 404, another method 405.  Nothing a client sends
  ends the server: an unexpected error answers 500 and is logged.
* Reads time out (``READ_TIMEOUT``: a client that stops sending in the middle of a
  request loses its connection); idle keep-alive connections are closed after
  ``IDLE_TIMEOUT``.
* ``GET /healthz`` and ``/readyz`` answer ``ok`` (probes).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import ssl
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ovnk_core.webhook.endpoints import WebhookRules
from ovnk_core.webhook.review import (
    MAX_REQUEST_BYTES,
    BadReview,
    decode,
    parse_request,
    response_review,
)

log = logging.getLogger(__name__)

DEFAULT_PORT = 9443  # controller-runtime's webhook.DefaultPort, upstream's
CERT_NAME, KEY_NAME = "tls.crt", "tls.key"
HANDSHAKE_TIMEOUT = 10.0
READ_TIMEOUT = 30.0
IDLE_TIMEOUT = 90.0  # upstream's http.Server IdleTimeout
TLS_VERSIONS = {"VersionTLS12": ssl.TLSVersion.TLSv1_2, "VersionTLS13": ssl.TLSVersion.TLSv1_3}
HEALTH_PATHS = ("/healthz", "/readyz")


@dataclass(frozen=True)
class WebhookOptions:
    """Where and how the server listens (``ovnk webhook`` flags, upstream's names)."""

    cert_dir: Path                     # --webhook-cert-dir: tls.crt and tls.key
    host: str = "localhost"            # --webhook-host
    port: int = DEFAULT_PORT           # --webhook-port (0: any free port)
    min_tls_version: str = "VersionTLS12"  # --tls-min-version

    @property
    def cert_file(self) -> Path:
        return self.cert_dir / CERT_NAME

    @property
    def key_file(self) -> Path:
        return self.cert_dir / KEY_NAME


class _Certificates:
    """The server's TLS context, made again when ``tls.crt``/``tls.key`` change."""

    def __init__(self, options: WebhookOptions) -> None:
        if options.min_tls_version not in TLS_VERSIONS:
            raise ValueError(f"--tls-min-version {options.min_tls_version!r} is not one of "
                             f"{', '.join(TLS_VERSIONS)}")
        self.options = options
        self._stamp: tuple[float, float] = (0.0, 0.0)
        self._context = self._load()

    def _files_stamp(self) -> tuple[float, float]:
        return (os.stat(self.options.cert_file).st_mtime,
                os.stat(self.options.key_file).st_mtime)

    def _load(self) -> ssl.SSLContext:
        stamp = self._files_stamp()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = TLS_VERSIONS[self.options.min_tls_version]
        context.load_cert_chain(self.options.cert_file, self.options.key_file)
        self._stamp = stamp
        return context

    def context(self) -> ssl.SSLContext:
        try:
            if self._files_stamp() != self._stamp:
                self._context = self._load()
                log.info("webhook: serving certificate reloaded from %s", self.options.cert_dir)
        except (OSError, ssl.SSLError) as exc:  # half-written files: keep the last good one
            log.warning("webhook: certificate in %s not reloaded: %s", self.options.cert_dir,
                        exc)
        return self._context


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: WebhookHTTPServer
    timeout = IDLE_TIMEOUT  # waiting for the next request of a keep-alive connection
    disable_nagle_algorithm = True  # headers and body go out without waiting for an ACK

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(HANDSHAKE_TIMEOUT)
            self.request.do_handshake()
        super().setup()

    def do_POST(self) -> None:
        rules = self.server.rules
        path = self.path.split("?", 1)[0]
        if path not in rules.paths:
            self._reply(404, {"message": f"no webhook at {path} (served: "
                                         f"{', '.join(rules.paths)})"}, close=True)
            return
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        length_text = self.headers.get("Content-Length")
        if length_text is None or not length_text.strip().isdigit():
            self._reply(411, {"message": "a request body with a Content-Length is required"},
                        close=True)
            return
        length = int(length_text)
        if length > MAX_REQUEST_BYTES:
            self._reply(413, self._bad(f"request entity is too large; limit is "
                                       f"{MAX_REQUEST_BYTES} bytes", code=413,
                                       reason="RequestEntityTooLarge"), close=True)
            return
        self.connection.settimeout(READ_TIMEOUT)
        body = self.rfile.read(length)
        self.connection.settimeout(IDLE_TIMEOUT)
        if len(body) < length:
            self.close_connection = True
            return
        if content_type != "application/json":
            self._reply(415, self._bad(f"contentType={content_type}, expected "
                                       "application/json", code=415,
                                       reason="UnsupportedMediaType"))
            return
        try:
            request = parse_request(decode(body))
        except BadReview as exc:
            log.info("webhook: %s: bad AdmissionReview: %s", path, exc)
            self._reply(400, self._bad(str(exc), exc.uid))
            return
        self._reply(200, rules.answer(path, request))

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] in HEALTH_PATHS:
            self._reply_bytes(200, b"ok", "text/plain; charset=utf-8")
        else:
            self._reply(404, {"message": f"{self.path} not found"})

    def _not_allowed(self) -> None:
        self._reply(405, {"message": f"method {self.command} not allowed"}, close=True)

    do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _not_allowed

    @staticmethod
    def _bad(message: str, uid: str = "", code: int = 400,
             reason: str = "BadRequest") -> dict[str, Any]:
        return response_review(uid, False, code, message, reason)

    def _reply(self, code: int, body: dict[str, Any], close: bool = False) -> None:
        self._reply_bytes(code, json.dumps(body, separators=(",", ":")).encode(),
                          "application/json", close)

    def _reply_bytes(self, code: int, data: bytes, content_type: str,
                     close: bool = False) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(data)

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (TimeoutError, ConnectionError, ssl.SSLError):
            self.close_connection = True  # a client that stalled or went away
        except Exception:
            log.exception("webhook: request %r failed", self.requestline)
            self.close_connection = True
            try:
                self._reply(500, {"message": "internal error"}, close=True)
            except OSError:
                pass

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)


class WebhookHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, options: WebhookOptions, rules: WebhookRules) -> None:
        self.rules = rules
        self.certificates = _Certificates(options)
        infos = socket.getaddrinfo(options.host, options.port, type=socket.SOCK_STREAM)
        family, _, _, _, address = infos[0]
        self.address_family = family
        super().__init__((str(address[0]), int(address[1])), _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        return self.certificates.context().wrap_socket(
            sock, server_side=True, do_handshake_on_connect=False), address

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed before its first request (its TLS handshake, usually:
        a client that does not trust the certificate, or speaks plain HTTP)."""
        log.debug("webhook: connection from %s failed", client_address, exc_info=True)


class WebhookServer:
    """A running server: ``port``, ``url``, ``stop()``."""

    def __init__(self, options: WebhookOptions, rules: WebhookRules) -> None:
        self.http = WebhookHTTPServer(options, rules)
        self.port = int(self.http.server_address[1])
        host = str(self.http.server_address[0])
        self.url = f"https://[{host}]:{self.port}" if ":" in host \
            else f"https://{host}:{self.port}"
        self._thread = threading.Thread(target=self.http.serve_forever,
                                        kwargs={"poll_interval": 0.1},
                                        name=f"webhook-{self.port}", daemon=True)

    def start(self) -> WebhookServer:
        self._thread.start()
        log.info("webhook: serving %s on %s", ", ".join(self.http.rules.paths), self.url)
        return self

    def stop(self) -> None:
        self.http.shutdown()
        self.http.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> WebhookServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


__all__ = ["DEFAULT_PORT", "MAX_REQUEST_BYTES", "WebhookOptions", "WebhookServer"]
