"""The node agent's CNI endpoint: HTTP over a unix socket, as upstream's CNI server.

Upstream's kubelet runs the CNI binary, which forwards ADD and DEL to
ovnkube-node over a unix socket and waits for the answer.  The local
cluster's kubelet stand-in does the same with this server: ``POST /add`` and
``POST /del`` with the pod's namespace, name and UID.  An ADD answers 200
with the pod's interfaces once they exist and ovn-controller has bound them,
503 with the reason while that is not so yet (the kubelet retries), 400
for a request it cannot act on, and 500 when the kernel or OVS refused
something (logged in one line: a traceback only for what nobody expected).

``POST /cni`` is upstream's endpoint for its CNI plugin (``ovnk_cni.shim``,
``ovn-k8s-cni-overlay``): ``{"env": {CNI_* variables}, "config": <netconf, base64>}``,
checked again here as the spec says (``ovnk_cni.spec``); the answer is 200 with the
command's result, or the spec error ``{"code", "msg", "details"}`` the plugin prints
(400 for a bad call, 503 for "try again later", 500 when plumbing failed).
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import logging
import os
import socket
import socketserver
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from ovnk_cni import spec
from ovnk_core.errors import OvnkError

log = logging.getLogger(__name__)


class CniNotReady(Exception):
    """The pod's network is not ready yet (answered 503; the caller retries)."""


class CniRequestError(Exception):
    """The request cannot be served (answered 400; spec error ``code``, 100 unless said)."""

    code = spec.REFUSED
    msg = "the pod's networks cannot be attached"


class CniPodUnknown(CniRequestError):
    """The pod is not in the API, or is another pod now (spec error 3)."""

    code = spec.UNKNOWN_CONTAINER
    msg = "the pod does not exist"


@dataclass(frozen=True)
class CniRequest:
    """Which pod an ADD or DEL is for (the UID guards against a re-created namesake)."""

    namespace: str
    name: str
    uid: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


MAX_BODY = 1 << 20
"""The largest request body read (a netconf is a few KiB; more is refused with 413)."""

CniHandler = Callable[[CniRequest], dict[str, Any]]
SpecHandler = Callable[[spec.CniCall], dict[str, Any] | None]


def parse_cni_body(body: bytes) -> spec.CniCall:
    """The call a ``POST /cni`` body carries.

    :raises spec.CniError: the body, its environment or its netconf is bad.
    """
    try:
        request = json.loads(body or b"{}")
        env = request.get("env") or {}
        config = base64.b64decode(request.get("config") or "", validate=True)
    except (ValueError, AttributeError, binascii.Error) as exc:
        raise spec.CniError(spec.DECODING_FAILURE, f"malformed CNI request: {exc}") from None
    if not isinstance(env, dict):
        raise spec.CniError(spec.DECODING_FAILURE, "malformed CNI request: env is not an object")
    return spec.parse_call({str(k): str(v) for k, v in env.items()}, config)


def answer_cni(handler: SpecHandler, body: bytes) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, body)`` of one ``POST /cni``: the handler's result or a spec error."""
    call: spec.CniCall | None = None
    try:
        call = parse_cni_body(body)
        return 200, handler(call) or {}
    except spec.CniError as exc:
        error = exc
    except CniNotReady as exc:
        error = spec.CniError(spec.TRY_AGAIN_LATER, "the pod's network is not ready yet",
                              str(exc))
    except CniRequestError as exc:
        error = spec.CniError(exc.code, exc.msg, str(exc))
    except OvnkError as exc:  # the kernel or OVS refused: its message says why
        log.warning("CNI %s failed: %s", call.command if call else "", exc)
        error = spec.CniError(spec.PLUMBING_FAILED, "plumbing the pod's network failed",
                              str(exc))
    except Exception as exc:
        log.exception("CNI %s failed", call.command if call else "")
        error = spec.CniError(spec.PLUMBING_FAILED, "plumbing the pod's network failed",
                              f"{type(exc).__name__}: {exc}")
    status = 503 if error.code == spec.TRY_AGAIN_LATER else \
        500 if error.code == spec.PLUMBING_FAILED else 400
    return status, error.to_json(call.cni_version if call else spec.CURRENT_VERSION)


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


class CniServer:
    """Serves ``add`` and ``delete`` on ``socket_path`` until stopped."""

    def __init__(self, socket_path: Path, add: CniHandler, delete: CniHandler,
                 cni: SpecHandler | None = None) -> None:
        """:param cni: serves ``POST /cni``, the CNI plugin's calls."""
        self.socket_path = socket_path
        handlers = {"/add": add, "/del": delete}

        class Handler(BaseHTTPRequestHandler):
            """POST /add and /del: JSON in, JSON out, status codes as the module says."""

            def do_POST(self) -> None:
                # the body is read before any answer: a reply sent while the caller
                # still writes would reset its connection (a broken pipe, not a 404)
                try:
                    length = int(self.headers.get("Content-Length") or 0)
                except ValueError:
                    length = -1
                if not 0 <= length <= MAX_BODY:
                    self.close_connection = True
                    self._reply(413 if length > MAX_BODY else 400,
                                {"error": f"Content-Length must be 0..{MAX_BODY}"})
                    return
                raw = self.rfile.read(length)
                if self.path == "/cni" and cni is not None:
                    self._reply(*answer_cni(cni, raw))
                    return
                handler = handlers.get(self.path)
                if handler is None:
                    self._reply(404, {"error": f"no such endpoint {self.path}"})
                    return
                try:
                    body = json.loads(raw or b"{}")
                    request = CniRequest(str(body["namespace"]), str(body["name"]),
                                         str(body.get("uid", "")))
                except (ValueError, KeyError, TypeError) as exc:
                    self._reply(400, {"error": f"malformed CNI request: {exc}"})
                    return
                try:
                    self._reply(200, handler(request))
                except CniNotReady as exc:
                    self._reply(503, {"error": str(exc)})
                except CniRequestError as exc:
                    self._reply(400, {"error": str(exc)})
                except OvnkError as exc:  # the kernel or OVS refused: its message says why
                    log.warning("CNI %s %s failed: %s", self.path, request.key, exc)
                    self._reply(500, {"error": str(exc)})
                except Exception as exc:
                    log.exception("CNI %s %s failed", self.path, request.key)
                    self._reply(500, {"error": f"{type(exc).__name__}: {exc}"})

            def _reply(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("CNI server: " + format, *args)

        socket_path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        socket_path.unlink(missing_ok=True)
        self._server = _Server(str(socket_path), Handler)
        # wiring pods is for the kubelet (root) only, as upstream's ovn-cni-server.sock
        os.chmod(socket_path, 0o600)
        self._thread = threading.Thread(target=self._server.serve_forever, name="cni-server",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.socket_path.unlink(missing_ok=True)


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: Path, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = str(path)

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def cni_call(socket_path: Path, command: str, request: CniRequest,
             timeout: float = 30.0) -> tuple[int, dict[str, Any]]:
    """``(status, body)`` of ``POST /<command>`` to the node agent at ``socket_path``."""
    connection = _UnixConnection(socket_path, timeout)
    try:
        body = json.dumps({"namespace": request.namespace, "name": request.name,
                           "uid": request.uid})
        connection.request("POST", f"/{command}", body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")
    finally:
        connection.close()
