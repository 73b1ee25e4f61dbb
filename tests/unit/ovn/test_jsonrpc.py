"""The JSON-RPC framing of the NB writer: messages split anywhere, rows handed out while they
arrive, echoes answered, replies matched to their request."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import pytest

from ovnk_core.ovn.jsonrpc import (
    MessageScanner,
    OvsdbConnection,
    OvsdbConnectionError,
    OvsdbRequestError,
    parse_remote,
)

pytestmark = pytest.mark.unit

ROWS_A = [{"_uuid": ["uuid", "6c1a3f1e-0000-4000-8000-000000000001"], "name": "ä-switch"},
          {"_uuid": ["uuid", "6c1a3f1e-0000-4000-8000-000000000002"],
           "external_ids": ["map", [["k", "a \"rows\":[ in a string"]]]}]
ROWS_B = [{"_uuid": ["uuid", "6c1a3f1e-0000-4000-8000-000000000003"], "ports": ["set", []]}]
ECHO = {"method": "echo", "params": [], "id": "echo"}
REPLY = {"id": 7, "result": [{"rows": ROWS_A}, {"count": 1}, {"rows": ROWS_B}], "error": None}


def stream() -> bytes:
    return (json.dumps(ECHO) + json.dumps(REPLY, separators=(",", ":")) + " " +
            json.dumps({"id": 8, "result": [], "error": None})).encode()


def test_every_split_point_gives_the_same_messages_and_rows() -> None:
    data = stream()
    for split in range(1, len(data)):
        scanner = MessageScanner()
        rows: list[tuple[int, Any]] = []
        scanner.on_row = lambda index, row: rows.append((index, row))  # noqa: B023
        messages = scanner.feed(data[:split]) + scanner.feed(data[split:])
        assert messages == [ECHO, {"id": 7, "result": [{"rows": []}, {"count": 1},
                                                        {"rows": []}], "error": None},
                            {"id": 8, "result": [], "error": None}], split
        assert rows == [(0, ROWS_A[0]), (0, ROWS_A[1]), (1, ROWS_B[0])], split


def test_byte_by_byte() -> None:
    scanner = MessageScanner()
    rows: list[Any] = []
    scanner.on_row = lambda index, row: rows.append(row)
    messages = []
    for byte in stream():
        messages += scanner.feed(bytes([byte]))
    assert len(messages) == 3 and rows == [*ROWS_A, *ROWS_B]


def test_remotes() -> None:
    assert parse_remote("unix:/run/nb.sock") == (socket.AF_UNIX, "/run/nb.sock")
    assert parse_remote("tcp:127.0.0.1:6641") == (socket.AF_INET, ("127.0.0.1", 6641))
    assert parse_remote("tcp:[::1]:6641") == (socket.AF_INET6, ("::1", 6641))
    with pytest.raises(OvsdbConnectionError, match="ssl remotes"):
        parse_remote("ssl:10.0.0.1:6641")
    with pytest.raises(OvsdbConnectionError, match="not tcp:HOST:PORT"):
        parse_remote("tcp:6641")
    with pytest.raises(OvsdbConnectionError, match="not an OVSDB remote"):
        parse_remote("http://x")


class FakeServer:
    """Answers each request with an echo request first, then the scripted reply."""

    def __init__(self, replies: list[dict[str, Any] | None]) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.replies = replies
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        scanner = MessageScanner()
        with conn:
            while data := conn.recv(65536):
                for message in scanner.feed(data):
                    self.seen.append(message)
                    if message.get("method") is None:
                        continue  # the client's answer to our echo
                    conn.sendall(json.dumps({"method": "echo", "params": ["x"],
                                             "id": "probe"}).encode())
                    reply = self.replies.pop(0)
                    if reply is None:
                        return  # hang up without answering
                    conn.sendall(json.dumps({**reply, "id": message["id"]}).encode())


def test_echo_is_answered_and_the_reply_matched() -> None:
    server = FakeServer([{"result": [{"count": 1}], "error": None},
                         {"result": None, "error": "unknown database"}, None])
    conn = OvsdbConnection(f"tcp:127.0.0.1:{server.port}", timeout=5)
    assert conn.transact("OVN_Northbound", [{"op": "comment", "comment": "x"}]) == [{"count": 1}]
    with pytest.raises(OvsdbRequestError, match="unknown database"):
        conn.transact("nope", [])
    with pytest.raises(OvsdbConnectionError, match="closed the connection|reset by peer"):
        conn.transact("OVN_Northbound", [])
    assert conn.closed
    assert {"result": ["x"], "error": None, "id": "probe"} in server.seen


def test_a_server_that_stays_silent_times_out_and_closes_the_connection() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(listener.accept()[0]), daemon=True).start()
    conn = OvsdbConnection(f"tcp:127.0.0.1:{listener.getsockname()[1]}", timeout=0.3)
    with pytest.raises(OvsdbConnectionError, match="nothing received for 0s"):
        conn.transact("OVN_Northbound", [])
    assert conn.closed
    listener.close()
