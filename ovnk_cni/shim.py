"""``ovn-k8s-cni-overlay``: the CNI plugin a container runtime executes for each pod.

It answers VERSION itself, checks the invocation (``ovnk_cni.spec``), and forwards every
other command to the node agent as upstream's shim does: ``POST /cni`` over the unix
socket ``/var/run/ovn-kubernetes/cni/ovn-cni-server.sock`` (the netconf's
``server-socket`` names another) with ``{"env": {CNI_* variables}, "config": <the
netconf, base64>}``.  The agent answers 200 with the result, or the spec error it prints.
An agent that cannot be reached is error 11 (try again later; 50, not available, for
STATUS).  Exit status 0 on success, 1 with the error on stdout otherwise.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import socket
import sys
from collections.abc import Mapping
from typing import Any

from ovnk_cni import spec

SERVER_SOCKET = "/var/run/ovn-kubernetes/cni/ovn-cni-server.sock"
SOCKET_KEY = "server-socket"
TIMEOUT = 120.0  # an ADD waits for ovn-controller to bind the pod's ports


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def forward(socket_path: str, env: Mapping[str, str], stdin: bytes,
            timeout: float = TIMEOUT) -> tuple[int, dict[str, Any]]:
    """``(HTTP status, JSON body)`` of the agent's answer to one call."""
    body = json.dumps({"env": {k: v for k, v in env.items() if k.startswith("CNI_")},
                       "config": base64.b64encode(stdin).decode()})
    connection = _UnixConnection(socket_path, timeout)
    try:
        connection.request("POST", "/cni", body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        return response.status, json.loads(data) if data.strip() else {}
    finally:
        connection.close()


def run(env: Mapping[str, str], stdin: bytes) -> dict[str, Any] | None:
    """The plugin's output for one invocation (None: nothing to print).

    :raises spec.CniError: what the spec says to print, and exit 1.
    """
    if env.get("CNI_COMMAND") == "VERSION":
        try:
            requested = json.loads(stdin or b"{}").get("cniVersion", "")
        except (ValueError, AttributeError):
            requested = ""
        return spec.version_info(str(requested))
    call = spec.parse_call(env, stdin)
    socket_path = str(call.netconf.get(SOCKET_KEY) or SERVER_SOCKET)
    try:
        status, answer = forward(socket_path, env, stdin)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        code = spec.PLUGIN_NOT_AVAILABLE if call.command == "STATUS" else spec.TRY_AGAIN_LATER
        raise spec.CniError(code, "the ovnk node agent cannot be reached",
                            f"{socket_path}: {exc}") from None
    if status != 200:
        raise spec.CniError(int(answer.get("code") or spec.PLUMBING_FAILED),
                            str(answer.get("msg") or f"the node agent answered {status}"),
                            str(answer.get("details") or ""))
    return answer if call.command in ("ADD", "CHECK") and answer else None


def _requested_version(stdin: bytes) -> str:
    try:
        version = json.loads(stdin).get("cniVersion")
    except (ValueError, AttributeError):
        return spec.CURRENT_VERSION
    return version if version in spec.SUPPORTED_VERSIONS else spec.CURRENT_VERSION


def main() -> int:
    stdin = b"" if os.environ.get("CNI_COMMAND") == "VERSION" and sys.stdin.isatty() \
        else sys.stdin.buffer.read()
    try:
        output = run(os.environ, stdin)
    except spec.CniError as exc:
        json.dump(exc.to_json(_requested_version(stdin)), sys.stdout)
        sys.stdout.write("\n")
        return 1
    if output is not None:
        json.dump(output, sys.stdout)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
