"""A second floor: the same rows as one raw OVSDB ``transact`` per network, from Python.

``ovn-nbctl`` pays for its process start and its own read of the tables it
touches; this writes the same ``DesiredRow`` lists over one JSON-RPC
connection (stdlib JSON, no IDL, no monitor), children before parents with
``named-uuid`` references.  It shows what a Python client costs when it does
not decode the updates of its own writes: the design a leaner ovnk NB client
would follow (bench/README.md).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Sequence
from typing import Any

from nbctl_floor import plan_batch

from ovnk_core.ovn.declarative import DesiredRow, Ref


def _datum(value: Any, names: dict[tuple[str, str], str]) -> Any:
    if isinstance(value, Ref):
        return ["named-uuid", names[(value.table, value.primary_id)]]
    if isinstance(value, dict):
        return ["map", [[key, _datum(item, names)] for key, item in value.items()]]
    if isinstance(value, list | tuple):
        return ["set", [_datum(item, names) for item in value]]
    return value


def transact_ops(rows: Sequence[DesiredRow]) -> list[dict[str, Any]]:
    """``insert`` operations creating ``rows`` (links inside the batch) in one transaction."""
    ordered, position, children = plan_batch(rows)
    names = {key: f"r{index}" for key, index in position.items()}
    ops = []
    for row in ordered:
        key = (row.table, row.ids.primary_id)
        values = {column: _datum(value, names) for column, value in row.columns.items()}
        values["external_ids"] = ["map", [[k, v] for k, v in row.external_ids().items()]]
        for column, members in children.get(key, {}).items():
            values[column] = ["set", [["named-uuid", names[m]] for m in members]]
        ops.append({"op": "insert", "table": row.table, "row": values,
                    "uuid-name": names[key]})
    return ops


class RawConnection:
    """One JSON-RPC connection to a unix socket; requests answered one at a time."""

    def __init__(self, remote: str) -> None:
        if not remote.startswith("unix:"):
            raise ValueError(f"raw transactions need a unix: remote, not {remote!r}")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(remote.removeprefix("unix:"))
        self._id = 0

    def transact(self, database: str, ops: list[dict[str, Any]]) -> list[Any]:
        self._id += 1
        self.sock.sendall(json.dumps({"method": "transact", "params": [database, *ops],
                                      "id": self._id}).encode())
        buffer = ""
        decoder = json.JSONDecoder()
        while True:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("ovsdb-server closed the connection")
            buffer += chunk.decode()
            if not buffer.rstrip().endswith("}"):
                continue
            messages, position = [], 0
            try:
                while position < len(buffer):
                    message, position = decoder.raw_decode(buffer, position)
                    messages.append(message)
                    while position < len(buffer) and buffer[position].isspace():
                        position += 1
            except ValueError:
                pass  # the last message is not complete yet
            buffer = buffer[position:]
            for message in messages:
                if message.get("method") == "echo":
                    self.sock.sendall(json.dumps({"result": message["params"], "error": None,
                                                  "id": message["id"]}).encode())
                    continue
                if message.get("id") != self._id:
                    continue
                errors = [r for r in message.get("result") or [] if isinstance(r, dict)
                          and "error" in r]
                if message.get("error") or errors:
                    raise RuntimeError("transaction failed: "
                                       f"{message.get('error') or errors[:3]}")
                return list(message["result"])

    def close(self) -> None:
        self.sock.close()
