"""An HTTP proxy in front of an API server that injects the failures informers must survive.

Tests point a client at the proxy and then, at the moment they choose:

* ``fail_next(status, count, match)`` — answer the next matching requests
  with a Kubernetes ``Status`` error (500, 409, 410 ...) instead of forwarding;
* ``gone_next_watch()`` — answer the next watch with a stream carrying one
  ``ERROR`` event with a 410 ``Status``, as a server that compacted its
  history does;
* ``drop_watches()`` — cut every open watch stream mid-flight, without a
  clean end, as a dropped connection or restarted server would;
* ``delay(seconds, match, count)`` — hold the next matching requests that
  long before forwarding them, as a slow server does (an informer whose
  first list arrives late).

Everything else is forwarded unchanged (chunk by chunk for watches), and
every request is recorded in ``requests`` for assertions.  The test's client
speaks plain HTTP to the proxy on loopback; the proxy speaks HTTPS to the
server with ``upstream_context`` (whose client certificate is the identity
every proxied request carries).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit


@dataclass
class _Fault:
    status: int
    count: int
    match: str
    reason: str


class FaultProxy:
    def __init__(self, upstream: str, upstream_context: ssl.SSLContext | None = None) -> None:
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or (443 if parts.scheme == "https" else 80)
        self.upstream_context = upstream_context if parts.scheme == "https" else None
        self.requests: list[tuple[str, str]] = []
        self._faults: list[_Fault] = []
        self._delays: list[_Fault] = []  # status holds the delay in milliseconds
        self._gone_watches = 0
        self._lock = threading.Lock()
        self._streams: set[socket.socket] = set()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_args: Any) -> None:
                return

            def do_GET(self) -> None:
                proxy._handle(self)

            do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                return  # connections cut on purpose end in socket errors; nothing to report

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.drop_watches()
        self.server.shutdown()
        self.server.server_close()

    # -- controls --------------------------------------------------------------------------
    def fail_next(self, status: int, count: int = 1, match: str = "",
                  reason: str = "InternalError") -> None:
        with self._lock:
            self._faults.append(_Fault(status, count, match, reason))

    def delay(self, seconds: float, match: str = "", count: int = 1) -> None:
        """Hold the next ``count`` requests matching ``match`` for ``seconds`` each."""
        with self._lock:
            self._delays.append(_Fault(int(seconds * 1000), count, match, "Delay"))

    def clear_faults(self) -> None:
        """Forget every pending injected fault and delay."""
        with self._lock:
            self._faults.clear()
            self._delays.clear()
            self._gone_watches = 0

    def gone_next_watch(self, count: int = 1) -> None:
        with self._lock:
            self._gone_watches += count

    def drop_watches(self) -> int:
        with self._lock:
            streams = list(self._streams)
            self._streams.clear()
        for sock in streams:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        return len(streams)

    def open_watches(self) -> int:
        """Watch streams currently being relayed."""
        with self._lock:
            return len(self._streams)

    def watch_count(self) -> int:
        return sum(1 for method, path in self.requests if method == "GET" and "watch=" in path)

    # -- serving ---------------------------------------------------------------------------
    def _take_fault(self, method: str, path: str, delays: bool = False) -> _Fault | None:
        with self._lock:
            for fault in self._delays if delays else self._faults:
                if fault.match in f"{method} {path}" and fault.count > 0:
                    fault.count -= 1
                    return fault
        return None

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        method, path = handler.command, handler.path
        self.requests.append((method, path))
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        is_watch = "watch=true" in path or "watch=1" in path
        delay = self._take_fault(method, path, delays=True)
        if delay is not None:
            time.sleep(delay.status / 1000)
        fault = self._take_fault(method, path)
        if fault is not None:
            self._reply_status(handler, fault.status, fault.reason, "injected fault")
            return
        if is_watch:
            with self._lock:
                gone = self._gone_watches > 0
                self._gone_watches -= 1 if gone else 0
            if gone:
                self._reply_gone_watch(handler)
                return
        upstream: http.client.HTTPConnection
        if self.upstream_context is not None:
            upstream = http.client.HTTPSConnection(
                self.upstream_host, self.upstream_port, timeout=None if is_watch else 30,
                context=self.upstream_context)
        else:
            upstream = http.client.HTTPConnection(self.upstream_host, self.upstream_port,
                                                  timeout=None if is_watch else 30)
        headers = {k: v for k, v in handler.headers.items()
                   if k.lower() not in ("host", "connection", "accept-encoding")}
        upstream.request(method, path, body=body, headers=headers)
        response = upstream.getresponse()
        if not is_watch:
            data = response.read()
            handler.send_response(response.status)
            for key, value in response.getheaders():
                if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                    handler.send_header(key, value)
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
            upstream.close()
            return
        handler.send_response(response.status)
        handler.send_header("Content-Type", response.getheader("Content-Type",
                                                               "application/json"))
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        client_socket = handler.connection
        with self._lock:
            self._streams.add(client_socket)
        try:
            while True:
                chunk = response.read1(65536)
                if not chunk:
                    break
                handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                handler.wfile.flush()
            handler.wfile.write(b"0\r\n\r\n")
            handler.wfile.flush()
        except OSError:
            pass
        finally:
            with self._lock:
                self._streams.discard(client_socket)
            upstream.close()
            handler.close_connection = True

    @staticmethod
    def _status(code: int, reason: str, message: str) -> bytes:
        return json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                           "status": "Failure", "message": message, "reason": reason,
                           "code": code}).encode()

    def _reply_status(self, handler: BaseHTTPRequestHandler, code: int, reason: str,
                      message: str) -> None:
        data = self._status(code, reason, message)
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _reply_gone_watch(self, handler: BaseHTTPRequestHandler) -> None:
        event = json.dumps({"type": "ERROR", "object": json.loads(self._status(
            410, "Expired", "too old resource version"))}).encode() + b"\n"
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        handler.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n0\r\n\r\n")
        handler.wfile.flush()
        handler.close_connection = True
