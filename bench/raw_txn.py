"""A second floor: the same rows as one raw OVSDB ``transact`` per network, from Python.

``ovn-nbctl`` pays for its process start and its own read of the tables it
touches; this writes the same ``DesiredRow`` lists over one JSON-RPC
connection (``ovnk_core.ovn.jsonrpc``: stdlib JSON, no IDL, no monitor) as
inserts only, with ``named-uuid`` references and nothing remembered.  It is
what any Python client must at least spend; ovnk's ``NbWriter`` adds its
diff and its memory of what it wrote on top (bench/README.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nbctl_floor import plan_batch

from ovnk_core.ovn.declarative import DesiredRow, Ref
from ovnk_core.ovn.jsonrpc import OvsdbConnection


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
        values = {column: _datum(value, names)
                  for column, value in row.declared_columns().items()}
        for column, members in children.get(key, {}).items():
            values[column] = ["set", [["named-uuid", names[m]] for m in members]]
        ops.append({"op": "insert", "table": row.table, "row": values,
                    "uuid-name": names[key]})
    return ops


def transact_checked(connection: OvsdbConnection, ops: list[dict[str, Any]]) -> None:
    """One transaction over ``connection``; raises when any operation failed."""
    results = connection.transact("OVN_Northbound", ops)
    errors = [r for r in results if isinstance(r, dict) and "error" in r]
    if errors:
        raise RuntimeError(f"transaction failed: {errors[:3]}")
