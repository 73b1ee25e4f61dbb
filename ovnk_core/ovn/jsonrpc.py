"""One OVSDB JSON-RPC connection (RFC 7047) for a client that keeps no monitor.

The write path of the zone controller does not need the server to echo every
row it writes back to it (``writer.NbWriter``), so it talks to ovsdb-server
with plain requests: ``get_schema`` and ``transact``.  This module is that
connection:

* ``unix:PATH`` and ``tcp:HOST:PORT`` remotes (``ssl:`` needs certificates ovnk
  has no options for yet, and is refused with a clear error);
* the server's ``echo`` requests are answered, both while waiting for a reply
  and before each request (an idle TCP connection is probed by the server);
* replies of ``select`` operations can be consumed row by row while they
  arrive (``MessageScanner``), so reading a table of 200,000 rows never holds
  its whole JSON text or all of its decoded rows in memory;
* a request that fails half-way (timeout, connection lost) closes the
  connection: a late reply can never be taken for the answer to a later
  request.
"""

from __future__ import annotations

import codecs
import json
import select
import socket
from collections.abc import Callable
from typing import Any

from ovnk_core.errors import OvnkError

JSONValue = Any
RowCallback = Callable[[int, dict[str, Any]], None]

ROWS_TOKEN = '"rows":['
_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


class OvsdbConnectionError(OvnkError):
    """The OVSDB server could not be reached, or the connection broke during a request."""


class OvsdbRequestError(OvnkError):
    """The server answered a request with an error."""


class MessageScanner:
    """Splits the bytes of a connection into JSON-RPC messages.

    Every ``"rows":[...]`` array of a message (the result of one ``select``
    operation) is not kept in the message: each row is handed to ``on_row(k,
    row)`` as soon as it is complete, ``k`` counting the rows arrays of the
    message from 0, and the message is returned with empty arrays in their
    place.  The key ``"rows"`` cannot occur elsewhere in OVSDB traffic: maps
    are sent as ``["map", ...]`` pairs, never as JSON objects, and a quote
    inside a string is always escaped.
    """

    def __init__(self) -> None:
        self.on_row: RowCallback | None = None
        self._utf8 = codecs.getincrementaldecoder("utf-8")()
        self._text = ""
        self._pos = 0
        self._skeleton: list[str] = []  # the message so far, outside its rows arrays
        self._in_rows = False
        self._rows_index = -1

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """Take more bytes; return the messages they complete, in order."""
        self._text = self._text[self._pos:] + self._utf8.decode(data)
        self._pos = 0
        messages = []
        while True:
            if self._in_rows:
                if not self._scan_rows():
                    break
                continue
            message = self._scan_message()
            if message is None:
                break
            if message is not _CONTINUE:
                messages.append(message)
        return messages

    def _scan_rows(self) -> bool:
        """Hand out complete rows; True when the array ended, False when more bytes are needed."""
        text, pos, end = self._text, self._pos, len(self._text)
        while True:
            while pos < end and (text[pos] in _WHITESPACE or text[pos] == ","):
                pos += 1
            if pos >= end:
                self._pos = pos
                return False
            if text[pos] == "]":
                self._skeleton.append("]")
                self._pos = pos + 1
                self._in_rows = False
                return True
            try:
                row, pos_after = _DECODER.raw_decode(text, pos)
            except json.JSONDecodeError:
                self._pos = pos  # the row is not complete yet
                return False
            if self.on_row is not None:
                self.on_row(self._rows_index, row)
            pos = pos_after

    def _scan_message(self) -> Any:
        text, pos = self._text, self._pos
        found = text.find(ROWS_TOKEN, pos)
        # A whole message (an echo request) may come before the rows of the reply.
        message = self._complete(text, pos, found if found >= 0 else len(text))
        if message is not None:
            return message
        if found >= 0:
            self._skeleton.append(text[pos:found + len(ROWS_TOKEN)])
            self._pos = found + len(ROWS_TOKEN)
            self._rows_index += 1
            self._in_rows = True
            return _CONTINUE
        return None

    def _complete(self, text: str, pos: int, limit: int) -> dict[str, Any] | None:
        rest = text[pos:limit]
        if "}" not in rest:
            return None
        head = "".join(self._skeleton)
        joined = head + rest
        document = joined.lstrip()
        try:
            message, used = _DECODER.raw_decode(document)
        except json.JSONDecodeError:
            return None  # not complete yet
        # Of what was used, everything beyond the skeleton came from ``rest``.
        self._pos = pos + (len(joined) - len(document)) + used - len(head)
        self._skeleton = []
        self._rows_index = -1
        if not isinstance(message, dict):
            raise OvsdbConnectionError(f"not a JSON-RPC message: {str(message)[:200]}")
        return message


_CONTINUE: Any = object()


def parse_remote(remote: str) -> tuple[int, Any]:
    """``(address family, address)`` of an OVSDB remote.

    :raises OvsdbConnectionError: ``ssl:`` (no certificate options) or an unknown form.
    """
    if remote.startswith("unix:"):
        return socket.AF_UNIX, remote.removeprefix("unix:")
    if remote.startswith("tcp:"):
        host, _, port = remote.removeprefix("tcp:").rpartition(":")
        if not host or not port.isdigit():
            raise OvsdbConnectionError(f"{remote!r} is not tcp:HOST:PORT")
        if host.startswith("["):
            return socket.AF_INET6, (host.strip("[]"), int(port))
        return socket.AF_INET, (host, int(port))
    if remote.startswith("ssl:"):
        raise OvsdbConnectionError(
            f"{remote}: ssl remotes need client certificates, which ovnk has no options for "
            "yet; use tcp: or unix:")
    raise OvsdbConnectionError(f"{remote!r} is not an OVSDB remote (unix:PATH, tcp:HOST:PORT)")


class OvsdbConnection:
    """A connected JSON-RPC session with one ovsdb-server; one request at a time.

    :param timeout: seconds a request may wait for the server without receiving anything
        (a long reply that keeps arriving, such as a full read of a large NB, is not cut).
    """

    def __init__(self, remote: str, timeout: float = 60.0) -> None:
        self.remote = remote
        self.timeout = timeout
        family, address = parse_remote(remote)
        self._sock: socket.socket | None = socket.socket(family, socket.SOCK_STREAM)
        self._sock.settimeout(min(timeout, 10.0))
        try:
            self._sock.connect(address)
        except OSError as exc:
            self._sock.close()
            self._sock = None
            raise OvsdbConnectionError(f"cannot connect to {remote}: {exc}") from None
        self._scanner = MessageScanner()
        self._next_id = 0

    @property
    def closed(self) -> bool:
        return self._sock is None

    def close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            finally:
                self._sock = None

    def _socket(self) -> socket.socket:
        if self._sock is None:
            raise OvsdbConnectionError(f"connection to {self.remote} is closed")
        return self._sock

    def _send(self, message: dict[str, Any]) -> None:
        self._socket().sendall(json.dumps(message, separators=(",", ":")).encode())

    def _handle(self, message: dict[str, Any]) -> None:
        """A message that is not the awaited reply: answer echoes, drop the rest."""
        if message.get("method") == "echo":
            self._send({"result": message.get("params", []), "error": None,
                        "id": message.get("id")})

    def poll(self) -> None:
        """Answer what the server sent while we were idle; notice a closed connection."""
        sock = self._socket()
        try:
            while select.select([sock], [], [], 0)[0]:
                data = sock.recv(1 << 16)
                if not data:
                    raise OvsdbConnectionError(f"{self.remote} closed the connection")
                for message in self._scanner.feed(data):
                    self._handle(message)
        except OSError as exc:
            self.close()
            raise OvsdbConnectionError(f"connection to {self.remote} failed: {exc}") from None
        except OvsdbConnectionError:
            self.close()
            raise

    def request(self, method: str, params: list[Any],
                on_row: RowCallback | None = None, timeout: float | None = None) -> Any:
        """Send one request and return its ``result``.

        :param on_row: receives the rows of ``select`` results while they arrive
            (``(k, row)``, k counting the rows arrays of the reply); without it
            the rows stay in the result.
        :param timeout: this request's own timeout (default: the connection's).
        :raises OvsdbRequestError: the reply carries a JSON-RPC error.
        :raises OvsdbConnectionError: no (complete) reply within the timeout; the
            connection is closed.
        """
        self.poll()
        self._next_id += 1
        request_id = self._next_id
        collected: dict[int, list[dict[str, Any]]] = {}

        def collect(index: int, row: dict[str, Any]) -> None:
            collected.setdefault(index, []).append(row)

        self._scanner.on_row = on_row or collect
        sock = self._socket()
        try:
            self._send({"method": method, "params": params, "id": request_id})
            wait = self.timeout if timeout is None else timeout
            sock.settimeout(wait)
            while True:
                try:
                    data = sock.recv(1 << 20)
                except TimeoutError:
                    raise OvsdbConnectionError(
                        f"{self.remote}: nothing received for {wait:.0f}s while waiting "
                        f"for the reply to {method}") from None
                if not data:
                    raise OvsdbConnectionError(f"{self.remote} closed the connection")
                for message in self._scanner.feed(data):
                    if message.get("id") == request_id and "method" not in message:
                        return self._result(method, message, None if on_row else collected)
                    self._handle(message)
        except (OSError, OvsdbConnectionError) as exc:
            self.close()
            if isinstance(exc, OvsdbConnectionError):
                raise
            raise OvsdbConnectionError(f"connection to {self.remote} failed: {exc}") from None
        finally:
            self._scanner.on_row = None

    @staticmethod
    def _result(method: str, message: dict[str, Any],
                collected: dict[int, list[dict[str, Any]]] | None) -> Any:
        if message.get("error") is not None:
            raise OvsdbRequestError(f"{method}: {message['error']}")
        result = message.get("result")
        if collected and isinstance(result, list):
            arrays = [entry for entry in result if isinstance(entry, dict) and "rows" in entry]
            for index, entry in enumerate(arrays):
                entry["rows"] = collected.get(index, [])
        return result

    def transact(self, database: str, operations: list[dict[str, Any]],
                 on_row: RowCallback | None = None) -> list[Any]:
        """One OVSDB transaction; ``on_row`` gets ``(operation index, row)`` of its selects.

        The per-operation results are returned as they came: callers check them
        (an ``error`` entry, or ``count`` of updates).
        """
        selects = [i for i, op in enumerate(operations) if op.get("op") == "select"]
        callback = None
        if on_row is not None:
            def callback(k: int, row: dict[str, Any]) -> None:
                on_row(selects[k], row)
        result = self.request("transact", [database, *operations], on_row=callback)
        if not isinstance(result, list):
            raise OvsdbRequestError(f"transact: unexpected reply {str(result)[:200]}")
        return result

    def echo(self, timeout: float | None = None) -> None:
        """A round trip that proves the server answers (RFC 7047's ``echo``)."""
        self.request("echo", ["ovnk"], timeout=timeout)

    def get_schema(self, database: str) -> dict[str, Any]:
        schema = self.request("get_schema", [database])
        if not isinstance(schema, dict):
            raise OvsdbRequestError(f"get_schema {database}: unexpected reply")
        return schema

    def is_leader(self, database: str) -> bool:
        """False only when ``database`` is clustered and this server is not its
        connected leader (``_Server`` database)."""
        result = self.transact("_Server", [{
            "op": "select", "table": "Database", "where": [["name", "==", database]],
            "columns": ["model", "leader", "connected"]}])
        rows = result[0].get("rows", []) if result and isinstance(result[0], dict) else []
        if not rows:
            return False
        row = rows[0]
        return row.get("model") != "clustered" or (row.get("leader") is True
                                                   and row.get("connected") is True)
