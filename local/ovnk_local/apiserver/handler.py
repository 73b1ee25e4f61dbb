"""HTTPS/1.1 plumbing on the stdlib server: TLS, request bodies, JSON replies, chunked streams.

Kept apart from the API logic so that ``server.py`` reads as "which request
does what".  Every connection is TLS: the handshake runs on the connection's
own thread (bounded by a timeout, so a silent client cannot stall the accept
loop) and the client's verified certificate, if it sent one, is kept for
authentication.  Keep-alive connections are tracked so that ``stop()`` can
cut them (clients of a stopped server must see it go away, not hang).
"""

from __future__ import annotations

import json
import logging
import select
import socket
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

from ovnk_local.apiserver import nesting, protobuf
from ovnk_local.apiserver.authn import UserInfo
from ovnk_local.apiserver.errors import JSON, ApiStatusError, bad_request, internal
from ovnk_local.apiserver.negotiation import Output

log = logging.getLogger(__name__)

HANDSHAKE_TIMEOUT = 10.0


class Request:
    """One decoded request, plus the reply methods the API layer uses."""

    def __init__(self, handler: ApiRequestHandler, method: str) -> None:
        self.handler = handler
        self.method = method
        url = urlsplit(handler.path)
        self.path = url.path
        self.query = {k: v[0] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        self.headers = handler.headers
        self.content_type = (handler.headers.get("Content-Type") or "").split(";")[0].strip()
        self.accept = handler.headers.get("Accept") or ""
        self.body = handler.read_body()
        self.warnings: list[str] = []
        self.user: UserInfo | None = None  # set once authenticated
        # how replies are encoded (negotiated from Accept for resource requests)
        self.output = Output()
        # the (apiVersion, kind) a body to this resource decodes to; custom: a CRD kind
        self.expected_kind: tuple[str, str] = ("", "")
        self.custom = False

    def peer_certificate(self) -> dict[str, Any] | None:
        """The client's verified certificate (``getpeercert()`` form), if it sent one."""
        connection = self.handler.connection
        if not isinstance(connection, ssl.SSLSocket):
            return None
        return connection.getpeercert() or None

    def json_body(self, expected_kind: str = "") -> Any:
        """The body as JSON (or YAML or protobuf, when sent as such); ``None`` when empty.
        ``expected_kind``: what the body must be when not the resource's own kind (e.g.
        ``DeleteOptions``)."""
        if not self.body.strip():
            return None
        if self.content_type.lower() == protobuf.MEDIA_TYPE:
            expected = (self.expected_kind[0], expected_kind or self.expected_kind[1])
            return protobuf.decode_request(self.body, expected,
                                           self.custom and not expected_kind)
        if "cbor" in self.content_type:
            raise ApiStatusError(
                415, "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types "
                f"include: application/json, application/yaml (got {self.content_type})")
        if "yaml" not in self.content_type:
            return nesting.loads(self.body, "request body")
        try:
            value = yaml.safe_load(self.body.decode())
        except RecursionError:
            raise bad_request(f"error decoding request body: {nesting.TOO_DEEP}") from None
        except (ValueError, yaml.YAMLError) as exc:
            raise bad_request(f"error decoding request body: {exc}") from exc
        nesting.check_decoded(value, "request body")
        return value

    def reply(self, code: int, body: JSON | str, content_type: str = "application/json") -> None:
        data = body.encode() if isinstance(body, str) else self._encode(body, content_type)
        if isinstance(body, str):
            content_type = "text/plain; charset=utf-8"
        elif self.output.protobuf and data.startswith(protobuf.MAGIC):
            content_type = protobuf.MEDIA_TYPE
        h = self.handler
        h.send_response(code)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Cache-Control", "no-cache, private")
        for warning in self.warnings:
            h.send_header("Warning", f'299 - {json.dumps(warning)}')
        h.end_headers()
        if self.method != "HEAD":
            h.wfile.write(data)

    def _encode(self, body: JSON, content_type: str) -> bytes:
        """``body`` as protobuf when negotiated and the kind has a protobuf form (a Table,
        a discovery document or a custom resource does not: JSON), else as JSON."""
        api_version, kind = str(body.get("apiVersion") or ""), str(body.get("kind") or "")
        if self.output.protobuf and content_type == "application/json" and \
                protobuf.encodable(api_version, kind):
            try:
                return protobuf.encode(body)
            except protobuf.ProtobufError as exc:
                log.error("%s %s: reply not encodable as protobuf, sent as JSON: %s",
                          self.method, self.path, exc)
        return json.dumps(body, separators=(",", ":")).encode()

    def start_stream(self) -> None:
        h = self.handler
        h.send_response(200)
        h.send_header("Content-Type", f"{protobuf.MEDIA_TYPE};stream=watch"
                      if self.output.protobuf else "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.send_header("Cache-Control", "no-cache, private")
        h.end_headers()
        h.wfile.flush()

    def send_event(self, data: bytes) -> None:
        """One watch event already encoded (a JSON line or a protobuf frame), as one chunk."""
        self.handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.handler.wfile.flush()

    def end_stream(self) -> None:
        self.handler.wfile.write(b"0\r\n\r\n")
        self.handler.wfile.flush()
        self.handler.close_connection = True

    def client_alive(self) -> bool:
        """False once the client closed its end (checked while a watch is idle).

        A watch client sends nothing, so anything readable is its TLS close_notify or
        the end of the connection; a partial TLS record means it is still there.
        """
        sock = self.handler.connection
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            if not readable:
                return True
            if not isinstance(sock, ssl.SSLSocket):
                return bool(sock.recv(1, socket.MSG_PEEK))
            sock.setblocking(False)
            try:
                return bool(sock.recv(1))
            except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
                return True
            finally:
                sock.setblocking(True)
        except (OSError, ValueError):
            return False


class ApiRequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ApiHTTPServer

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(HANDSHAKE_TIMEOUT)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)

    def read_body(self) -> bytes:
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self, method: str) -> None:
        request: Request | None = None
        try:
            request = Request(self, method)
            self.server.app(request)
        except ApiStatusError as exc:
            if request is not None:
                request.reply(exc.code, exc.status())
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
            self.close_connection = True  # the client went away (or closed its TLS session)
        except Exception as exc:
            log.exception("%s %s failed", method, self.path)
            if request is not None:
                error = internal(str(exc))
                request.reply(error.code, error.status())

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """The access log, at DEBUG (kube-apiserver's httplog is verbose-only too): the
        request line, its status and the client's User-Agent, which names the program a
        refused request came from (kubectl's ``kubectl/v1.32.4 ...``, upstream ovnkube's
        ``<host>/ovnkube@<commit> ...``)."""
        agent = self.headers.get("User-Agent", "-") if self.headers else "-"
        log.debug('%s "%s" %s %s', self.address_string(), self.requestline,
                  getattr(code, "value", code), agent)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)


class ApiHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: Any,
                 ssl_context: ssl.SSLContext) -> None:
        self.app = app
        self.ssl_context = ssl_context
        self._connections: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, ApiRequestHandler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = self.socket.accept()
        return self.ssl_context.wrap_socket(sock, server_side=True,
                                            do_handshake_on_connect=False), address

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that failed before its first request (usually its TLS handshake:
        a client that does not trust our CA, or speaks plain HTTP)."""
        log.debug("connection from %s failed", client_address, exc_info=True)

    def track(self, connection: socket.socket, active: bool) -> None:
        with self._conn_lock:
            if active:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        with self._conn_lock:
            connections = list(self._connections)
        for connection in connections:
            try:
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
