"""HTTP listeners that tell a load balancer how many local endpoints a service has.

One listener per service, on its health-check node port, on every address of the node
(``[::]`` dual-stack, or ``0.0.0.0`` where the kernel has no IPv6), as kube-proxy's and
upstream's health-check server (``pkg/kube/healthcheck``) serve them: any method and path
gets ``200`` when the service has local endpoints and ``503`` when it has none, with the
JSON body ``{ "service": { "namespace": "ns", "name": "svc" }, "localEndpoints": N }``
(upstream's bytes), ``Content-Type: application/json`` and, as kube-proxy sends it,
``X-Content-Type-Options: nosniff``.  The count is read at each request, so an update is
answered from the next request on.

The sockets are opened inside the node's network namespace (``netns.run_in_netns``) and
served from threads of this process, which may live elsewhere.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ovnk_core.node.netns import run_in_netns

log = logging.getLogger(__name__)
METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")


class HealthCheckPortError(OSError):
    """A health-check port could not be opened (in use, say); worded as Go's net.Listen."""


def health_response(namespace: str, name: str, local_endpoints: int) -> tuple[int, bytes]:
    """The status and body upstream answers for a service with ``local_endpoints``."""
    body = (f'{{ "service": {{ "namespace": {json.dumps(namespace)}, "name": '
            f'{json.dumps(name)} }}, "localEndpoints": {local_endpoints} }}')
    return (200 if local_endpoints > 0 else 503), body.encode()


def _listen(port: int) -> socket.socket:
    """A listening TCP socket on every address of the current namespace."""
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        address: tuple[str, int] = ("::", port)
    except OSError:  # a kernel without IPv6
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        address = ("0.0.0.0", port)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = (exc.strerror or str(exc)).lower()
        raise HealthCheckPortError(exc.errno, f"listen tcp :{port}: bind: {reason}") from None
    return sock


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, sock: socket.socket, listener: _Listener) -> None:
        super().__init__(sock.getsockname()[:2], _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.listener = listener


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def _answer(self) -> None:
        listener = self.server.listener
        status, body = health_response(listener.namespace, listener.name,
                                       listener.local_endpoints)
        self.send_response_only(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Date", self.date_time_string())
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("health check %s: " + format, self.server.listener.key, *args)


for _method in METHODS:
    setattr(_Handler, f"do_{_method}", _Handler._answer)


@dataclass
class _Listener:
    key: str
    port: int
    namespace: str
    name: str
    local_endpoints: int = 0
    server: _Server | None = None


class HealthCheckServer:
    """The health-check listeners of one node, by service key (``<ns>/<name>``)."""

    def __init__(self, netns: str | None = None) -> None:
        """:param netns: the node's network namespace (``None``: the current one)."""
        self.netns = netns
        self._listeners: dict[str, _Listener] = {}
        self._lock = threading.Lock()

    def ensure(self, key: str, port: int, local_endpoints: int) -> None:
        """Serve ``key`` on ``port`` with ``local_endpoints``; a listener of ``key`` on another
        port is closed first.

        :raises HealthCheckPortError: the port cannot be opened (in use, say).
        """
        with self._lock:
            current = self._listeners.get(key)
        if current is not None and current.port != port:
            self.remove(key)
            current = None
        if current is None:
            namespace, _, name = key.partition("/")
            sock = run_in_netns(self.netns, lambda: _listen(port))
            current = _Listener(key, port, namespace, name, local_endpoints)
            current.server = _Server(sock, current)
            threading.Thread(target=current.server.serve_forever, name=f"health-{key}",
                             daemon=True).start()
            with self._lock:
                self._listeners[key] = current
            log.info("health check %s: serving on port %d", key, port)
        if current.local_endpoints != local_endpoints:
            log.info("health check %s: %d local endpoints", key, local_endpoints)
        current.local_endpoints = local_endpoints

    def remove(self, key: str) -> None:
        """Stop serving ``key`` (nothing when it is not served)."""
        with self._lock:
            listener = self._listeners.pop(key, None)
        if listener is None or listener.server is None:
            return
        listener.server.shutdown()
        listener.server.server_close()
        log.info("health check %s: closed port %d", key, listener.port)

    def served(self) -> dict[str, tuple[int, int]]:
        """key → (port, local endpoints) of every listener."""
        with self._lock:
            return {key: (entry.port, entry.local_endpoints)
                    for key, entry in self._listeners.items()}

    def close(self) -> None:
        for key in list(self.served()):
            self.remove(key)
