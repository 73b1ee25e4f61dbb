"""agnhost netexec, the part upstream's e2e tests rely on, as a small Python server.

Runs inside a pod's network namespace (started by ``ovnk_local.workloads.launch``),
as upstream's ``agnhost netexec`` does:

* HTTP on ``--http-port`` (all addresses, IPv4 and IPv6):
  ``/`` ``NOW: <time>``; ``/hostname`` (and ``/hostName``) the pod's hostname;
  ``/clientip`` the client's ``ip:port``; ``/echo?msg=x`` ``x`` (``&code=N`` answers
  with status N); ``/header?key=K`` the request's header K; ``/healthz`` 200;
  ``/exit?code=N`` exits the process with N (as upstream, without answering).
  Anything else is 404.
* UDP on ``--udp-port`` unless it is -1: ``hostname`` → the hostname, ``echo x`` → ``x``,
  ``clientip`` → the client's ``ip:port``; anything else is ignored.

SIGTERM and SIGINT end it with status 0.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


def client_address(host: str, port: int) -> str:
    """``ip:port`` as Go prints a remote address (IPv4-mapped IPv6 shown as IPv4)."""
    if host.startswith("::ffff:") and "." in host:
        host = host[len("::ffff:"):]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def udp_reply(message: str, hostname: str, client: str) -> str | None:
    """The answer to one UDP datagram, None for no answer."""
    text = message.strip()
    if text == "hostname":
        return hostname
    if text == "clientip":
        return client
    if text.startswith("echo "):
        return text[len("echo "):]
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def server_bind(self) -> None:
        # HTTPServer's own looks the host name up (getfqdn), which needs no DNS here
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = "netexec", int(self.server_address[1])


class _Server6(_Server):
    address_family = socket.AF_INET6

    def server_bind(self) -> None:
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def _dual_stack(port: int, handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    """An HTTP server on every IPv6 and IPv4 address, or IPv4 only when IPv6 is off."""
    if socket.has_ipv6:
        try:
            return _Server6(("::", port), handler)
        except OSError:
            pass
    return _Server(("0.0.0.0", port), handler)


def http_server(port: int, hostname: str) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "netexec"

        def _answer(self, body: str, code: int = 200) -> None:
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            path = url.path
            if path == "/":
                self._answer(f"NOW: {time.strftime('%Y-%m-%d %H:%M:%S %z')}")
            elif path in ("/hostname", "/hostName"):
                self._answer(hostname)
            elif path == "/clientip":
                self._answer(client_address(str(self.client_address[0]),
                                            int(self.client_address[1])))
            elif path == "/echo":
                try:
                    code = int(query.get("code", "200"))
                except ValueError:
                    code = 200
                self._answer(query.get("msg", ""), code)
            elif path == "/header":
                self._answer(self.headers.get(query.get("key", "")) or "")
            elif path == "/healthz":
                self._answer("")
            elif path == "/exit":
                try:
                    code = int(query.get("code", "0"))
                except ValueError:
                    code = 0
                sys.stdout.flush()
                os._exit(code)
            else:
                self._answer("404 page not found\n", 404)

        do_POST = do_GET
        do_HEAD = do_GET

        def log_message(self, format: str, *args: object) -> None:
            sys.stdout.write(f"{self.address_string()} {format % args}\n")
            sys.stdout.flush()

    return _dual_stack(port, Handler)


def udp_socket(port: int) -> socket.socket:
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(("::", port))
        return sock
    except OSError:
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind(("0.0.0.0", port))
        return sock


def serve_udp(sock: socket.socket, hostname: str) -> None:
    while True:
        data, peer = sock.recvfrom(65535)
        reply = udp_reply(data.decode(errors="replace"), hostname,
                          client_address(str(peer[0]), int(peer[1])))
        if reply is not None:
            sock.sendto(reply.encode(), peer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="netexec")
    parser.add_argument("--http-port", type=int, default=8080)
    parser.add_argument("--udp-port", type=int, default=8081)
    parser.add_argument("--sctp-port", type=int, default=-1)
    args = parser.parse_args(argv)
    hostname = socket.gethostname()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server = http_server(args.http_port, hostname)
    threading.Thread(target=server.serve_forever, name="http", daemon=True).start()
    print(f"Started HTTP server on port {args.http_port}", flush=True)
    if args.udp_port != -1:
        sock = udp_socket(args.udp_port)
        threading.Thread(target=serve_udp, args=(sock, hostname), name="udp",
                         daemon=True).start()
        print(f"Started UDP server on port {args.udp_port}", flush=True)
    while not stop.wait(3600):
        pass
    print("Received SIGTERM, shutting down", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
