"""The server side of RFC 6455 WebSockets, as much as ``kubectl exec`` uses.

kubectl (1.30 and later) runs ``exec`` over a WebSocket with the
``v5.channel.k8s.io`` subprotocol: binary messages whose first byte is the
channel (0 stdin, 1 stdout, 2 stderr, 3 error/status, 4 terminal resize,
255 close of a stream).  This module does the handshake and frames; the exec
session (``exec_session``) speaks the channels.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import threading
from dataclasses import dataclass
from io import BufferedIOBase

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
OP_CONTINUATION, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
MAX_MESSAGE = 16 * 1024 * 1024


class WebSocketError(Exception):
    """The peer broke the protocol (bad frame, unmasked client frame, oversized message)."""


def accept_key(client_key: str) -> str:
    """``Sec-WebSocket-Accept`` for the client's ``Sec-WebSocket-Key``."""
    return base64.b64encode(hashlib.sha1((client_key + GUID).encode()).digest()).decode()


def choose_protocol(offered: str, supported: tuple[str, ...]) -> str | None:
    """The first of ``supported`` that the client offered (``Sec-WebSocket-Protocol``)."""
    wanted = [item.strip() for item in offered.split(",") if item.strip()]
    return next((protocol for protocol in supported if protocol in wanted), None)


def encode_frame(opcode: int, payload: bytes) -> bytes:
    """One final, unmasked frame (servers never mask)."""
    header = bytes([0x80 | opcode])
    length = len(payload)
    if length < 126:
        header += bytes([length])
    elif length < 1 << 16:
        header += bytes([126]) + struct.pack("!H", length)
    else:
        header += bytes([127]) + struct.pack("!Q", length)
    return header + payload


def _read_exact(stream: BufferedIOBase, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return data


@dataclass(frozen=True)
class Message:
    """One whole WebSocket message (or control frame) from the client."""

    opcode: int
    payload: bytes


def read_message(stream: BufferedIOBase) -> Message:
    """The next complete message (fragments joined; control frames returned as they come).

    :raises EOFError: the connection closed.
    :raises WebSocketError: a protocol violation.
    """
    opcode = None
    payload = b""
    while True:
        first, second = _read_exact(stream, 2)
        final, frame_opcode = bool(first & 0x80), first & 0x0F
        if not second & 0x80:
            raise WebSocketError("client frames must be masked")
        length = second & 0x7F
        if length == 126:
            length = struct.unpack("!H", _read_exact(stream, 2))[0]
        elif length == 127:
            length = struct.unpack("!Q", _read_exact(stream, 8))[0]
        if len(payload) + length > MAX_MESSAGE:
            raise WebSocketError(f"message larger than {MAX_MESSAGE} bytes")
        mask = _read_exact(stream, 4)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(_read_exact(stream, length)))
        if frame_opcode >= OP_CLOSE:
            return Message(frame_opcode, data)
        if frame_opcode != OP_CONTINUATION:
            opcode = frame_opcode
        elif opcode is None:
            raise WebSocketError("continuation frame without a message")
        payload += data
        if final:
            return Message(opcode, payload)


class WebSocket:
    """A server-side connection after the handshake: thread-safe sends, blocking receives."""

    def __init__(self, reader: BufferedIOBase, writer: BufferedIOBase) -> None:
        self.reader = reader
        self.writer = writer
        self._send_lock = threading.Lock()
        self.closed = False

    def send(self, opcode: int, payload: bytes) -> None:
        with self._send_lock:
            if self.closed:
                return
            self.writer.write(encode_frame(opcode, payload))
            self.writer.flush()

    def close(self, code: int = 1000, reason: str = "") -> None:
        try:
            self.send(OP_CLOSE, struct.pack("!H", code) + reason.encode())
        except OSError:
            pass
        self.closed = True

    def receive(self) -> Message:
        """The next data or close message; pings are answered here."""
        while True:
            message = read_message(self.reader)
            if message.opcode == OP_PING:
                self.send(OP_PONG, message.payload)
                continue
            if message.opcode == OP_PONG:
                continue
            return message
