"""pods/exec: WebSocket framing, the handshake's refusals, and a command over v5 channels."""

from __future__ import annotations

import base64
import io
import json
import os
import socket
import struct
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest
from ovnk_local.apiserver import websocket
from ovnk_local.apiserver.server import ServerHandle, ServerOptions
from ovnk_local.testing.apiserver_fixtures import ServerFactory, client_for, ssl_context_for

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import PODS, ROLE_BINDINGS, ROLES

pytestmark = pytest.mark.unit


def masked(opcode: int, payload: bytes, final: bool = True) -> bytes:
    mask = b"\x01\x02\x03\x04"
    header = bytes([(0x80 if final else 0) | opcode])
    if len(payload) < 126:
        header += bytes([0x80 | len(payload)])
    else:
        header += bytes([0x80 | 126]) + struct.pack("!H", len(payload))
    return header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def test_frames_round_trip_with_fragments_and_big_payloads() -> None:
    stream = io.BytesIO(masked(websocket.OP_BINARY, b"\x00he", final=False)
                        + masked(websocket.OP_CONTINUATION, b"llo")
                        + masked(websocket.OP_BINARY, b"x" * 300)
                        + masked(websocket.OP_CLOSE, b"\x03\xe8"))
    assert websocket.read_message(stream) == websocket.Message(websocket.OP_BINARY, b"\x00hello")
    assert websocket.read_message(stream).payload == b"x" * 300
    assert websocket.read_message(stream).opcode == websocket.OP_CLOSE
    with pytest.raises(EOFError):
        websocket.read_message(stream)
    assert websocket.encode_frame(websocket.OP_BINARY, b"ab") == b"\x82\x02ab"
    assert websocket.encode_frame(websocket.OP_BINARY, b"a" * 70000)[:2] == b"\x82\x7f"


def test_unmasked_client_frames_are_a_protocol_error() -> None:
    with pytest.raises(websocket.WebSocketError, match="must be masked"):
        websocket.read_message(io.BytesIO(b"\x82\x01a"))


def test_handshake_key_and_protocol_choice() -> None:
    # RFC 6455's own example
    assert websocket.accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert websocket.choose_protocol("v4.channel.k8s.io, v5.channel.k8s.io",
                                     ("v5.channel.k8s.io", "v4.channel.k8s.io")) == \
        "v5.channel.k8s.io"
    assert websocket.choose_protocol("channel.k8s.io", ("v5.channel.k8s.io",)) is None


def connect(handle: ServerHandle, user: str | None = "kubernetes-admin",
            groups: tuple[str, ...] | None = None) -> socket.socket:
    """A TLS connection to ``handle`` presenting ``user``'s client certificate."""
    raw = socket.create_connection((handle.host, handle.port), timeout=10)
    return ssl_context_for(handle, user, groups).wrap_socket(raw, server_hostname=handle.host)


def upgrade(handle: ServerHandle, path: str, protocol: str = "v5.channel.k8s.io",
            user: str | None = "kubernetes-admin",
            groups: tuple[str, ...] | None = None) -> tuple[socket.socket, bytes]:
    sock = connect(handle, user, groups)
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
                  f"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Protocol: {protocol}\r\n\r\n")
                 .encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    return sock, head

def exec_stdout(sock: socket.socket) -> bytes:
    """What an exec session wrote on stdout, up to its final status."""
    out, stream = b"", sock.makefile("rb")
    while True:
        first, second = stream.read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", stream.read(2))[0]
        payload = stream.read(length)
        if first & 0x0F == websocket.OP_CLOSE or (payload and payload[0] == 3):
            return out
        if payload and payload[0] == 1:
            out += payload[1:]


def pod(client: KubeClient) -> None:
    client.create(PODS, {"metadata": {"name": "web", "namespace": "default"},
                         "spec": {"nodeName": "n1",
                                  "containers": [{"name": "c", "image": "agnhost"}]}},
                  "default")


def test_exec_without_pod_namespaces_is_refused_with_the_reason(
        kube_apiserver: ServerHandle) -> None:
    client = KubeClient(client_for(kube_apiserver))
    pod(client)
    sock, head = upgrade(kube_apiserver,
                         "/api/v1/namespaces/default/pods/web/exec?command=true&stdout=true")
    assert head.startswith(b"HTTP/1.1 400")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length")))
    body = b""
    while len(body) < length:
        body += sock.recv(65536)
    body = body.decode()
    assert "exec is not available here; this API server runs no pods" in body
    sock.close()


@pytest.mark.netns
def test_exec_runs_the_command_in_the_pods_namespace(kube_apiserver_factory: ServerFactory,
                                                     netns: str) -> None:
    handle = kube_apiserver_factory(ServerOptions(bookmark_interval=1.0,
                                                  pod_netns_template=netns))
    client = KubeClient(client_for(handle))
    pod(client)
    subprocess.run(["ip", "-n", netns, "link", "add", "marker0", "type", "veth", "peer",
                    "name", "marker1"], check=True)
    sock, head = upgrade(handle, "/api/v1/namespaces/default/pods/web/exec?command=ip&"
                                 "command=-br&command=link&stdout=true&stderr=true")
    assert head.startswith(b"HTTP/1.1 101")
    assert b"Sec-WebSocket-Protocol: v5.channel.k8s.io" in head
    stream = sock.makefile("rb")
    out, status = b"", None
    while status is None:
        first, second = stream.read(2)
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", stream.read(2))[0]
        payload = stream.read(length)
        if first & 0x0F == websocket.OP_CLOSE:
            break
        if payload[0] == 1:
            out += payload[1:]
        elif payload[0] == 3:
            status = json.loads(payload[1:])
    assert b"marker0" in out
    assert status == {"metadata": {}, "status": "Success"}
    sock.close()


def test_exec_requires_an_upgrade(kube_apiserver_factory: ServerFactory, tmp_path: Path) -> None:
    handle = kube_apiserver_factory(ServerOptions(pod_netns_template="none-{name}"))
    client = KubeClient(client_for(handle))
    pod(client)
    with connect(handle) as sock:
        sock.sendall(b"POST /api/v1/namespaces/default/pods/web/exec?command=true HTTP/1.1\r\n"
                     b"Host: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
        reply = reply.decode()
    assert reply.startswith("HTTP/1.1 400") and "Upgrade request required" in reply


def test_exec_needs_create_on_pods_exec(kube_apiserver: ServerHandle) -> None:
    """A WebSocket upgrade (GET) to pods/exec is authorized as ``create``, as kube-apiserver
    does since 1.30: ``get`` on pods is not enough."""
    client = KubeClient(client_for(kube_apiserver))
    pod(client)
    client.create(ROLES, {"metadata": {"name": "viewer"}, "rules": [
        {"apiGroups": [""], "resources": ["pods", "pods/exec"], "verbs": ["get", "list"]}]},
        "default")
    client.create(ROLE_BINDINGS, {
        "metadata": {"name": "viewer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "viewer"},
        "subjects": [{"kind": "User", "name": "viewer"}]}, "default")
    sock, head = upgrade(kube_apiserver, "/api/v1/namespaces/default/pods/web/exec?command=id"
                         "&stdout=true", user="viewer")
    sock.close()
    assert head.startswith(b"HTTP/1.1 403")
    anonymous, head = upgrade(kube_apiserver, "/api/v1/namespaces/default/pods/web/exec?"
                              "command=id&stdout=true", user=None)
    anonymous.close()
    assert head.startswith(b"HTTP/1.1 401")


@pytest.mark.netns
def test_exec_runs_unprivileged(kube_apiserver_factory: ServerFactory, netns: str) -> None:
    """The pod's namespace is on the host's filesystem: the command runs as nobody, with no
    capabilities, so it can neither read root's files nor change the network."""
    handle = kube_apiserver_factory(ServerOptions(bookmark_interval=1.0,
                                                  pod_netns_template=netns))
    pod(KubeClient(client_for(handle)))
    script = ("id -u; id -G; grep CapEff /proc/self/status; cat /etc/shadow >/dev/null 2>&1 "
              "&& echo read-shadow; ip link add dummy9 type dummy 2>/dev/null && echo added")
    query = "&".join(f"command={quote(arg)}" for arg in ("sh", "-c", script))
    sock, head = upgrade(handle, f"/api/v1/namespaces/default/pods/web/exec?{query}"
                                 "&stdout=true&stderr=true")
    assert head.startswith(b"HTTP/1.1 101")
    out = exec_stdout(sock)
    sock.close()
    lines = out.decode().split()
    assert lines[:2] == ["65534", "65534"]
    assert "0000000000000000" in out.decode()
    assert b"read-shadow" not in out and b"added" not in out



@pytest.mark.netns
def test_exec_into_a_host_network_pod_runs_in_its_nodes_namespace(
        kube_apiserver_factory: ServerFactory, netns: str) -> None:
    handle = kube_apiserver_factory(ServerOptions(
        bookmark_interval=1.0, pod_netns_template="none-{node}-{name}",
        node_netns_template=netns.replace("ovnkt-", "{node}-")))
    KubeClient(client_for(handle)).create(PODS, {
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"nodeName": "ovnkt", "hostNetwork": True,
                 "containers": [{"name": "c", "image": "agnhost"}]}}, "default")
    subprocess.run(["ip", "-n", netns, "link", "add", "marker0", "type", "veth", "peer",
                    "name", "marker1"], check=True)
    sock, head = upgrade(handle, "/api/v1/namespaces/default/pods/agent/exec?command=ip&"
                                 "command=-br&command=link&stdout=true")
    assert head.startswith(b"HTTP/1.1 101")
    assert b"marker0" in exec_stdout(sock)
    sock.close()
