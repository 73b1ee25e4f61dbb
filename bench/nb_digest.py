"""A memory-light comparison of the ovnk-owned rows of two Northbound databases.

``ovnk_core.ovn.snapshot`` keeps every owned row decoded (through the IDL),
which is right for tests and too heavy for 400,000 rows.  This reads each
database twice with streamed ``select``s (``ovnk_core.ovn.jsonrpc``): first
the ``k8s.ovn.org/id`` of every owned row by uuid, then one SHA-1 per owned
row over its columns with references replaced by the referenced row's id, so
two NBs written by different writers (different uuids) compare equal exactly
when their owned rows do.  Columns other daemons write are left out, as in
``snapshot.RUNTIME_COLUMNS``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from ovnk_core.ovn.jsonrpc import OvsdbConnection
from ovnk_core.ovn.ownership import ID_KEY, NAME_IDENTIFIED_TABLES, OWNER_CONTROLLER_KEY
from ovnk_core.ovn.snapshot import OWNED_TABLES, RUNTIME_COLUMNS

Digest = dict[tuple[str, str], bytes]


def _ext(row: dict[str, Any]) -> dict[str, str]:
    value = row.get("external_ids") or ["map", []]
    return dict(value[1]) if isinstance(value, list) and value[:1] == ["map"] else {}


def _scan(remote: str, columns: list[str] | None,
          visit: Callable[[str, dict[str, Any]], None]) -> None:
    conn = OvsdbConnection(remote, timeout=3600)
    try:
        ops: list[dict[str, Any]] = [{"op": "select", "table": t, "where": []}
                                     for t in OWNED_TABLES]
        if columns is not None:
            for op in ops:  # a name-identified table has a name, not external_ids
                op["columns"] = [("name" if c == "external_ids" and op["table"] in
                                  NAME_IDENTIFIED_TABLES else c) for c in columns]
        conn.transact("OVN_Northbound", ops,
                      on_row=lambda index, row: visit(OWNED_TABLES[index], row))
    finally:
        conn.close()


def _owned_id(table: str, row: dict[str, Any]) -> str | None:
    """``<table>:<primary id>`` of an ovnk-owned row (a name-identified one: its name)."""
    if table in NAME_IDENTIFIED_TABLES:
        return f"{table}:{row['name']}" if row.get("name") else None
    ext = _ext(row)
    if ext.get(ID_KEY) and ext.get(OWNER_CONTROLLER_KEY):
        return f"{table}:{ext[ID_KEY]}"
    return None


def _plain(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, list) and len(value) == 2 and value[0] == "uuid":
        return ids.get(value[1], "<not ovnk>")
    if isinstance(value, list) and len(value) == 2 and value[0] == "set":
        items = [_plain(item, ids) for item in value[1]]
        return items[0] if len(items) == 1 else sorted(items, key=repr)
    if isinstance(value, list) and len(value) == 2 and value[0] == "map":
        return sorted(([_plain(k, ids), _plain(v, ids)] for k, v in value[1]), key=repr)
    return value


def digest(remote: str) -> Digest:
    """(table, k8s.ovn.org/id) → digest of the row, for every ovnk-owned row."""
    ids: dict[str, str] = {}

    def remember(table: str, row: dict[str, Any]) -> None:
        owned = _owned_id(table, row)
        if owned is not None:
            ids[row["_uuid"][1]] = owned

    _scan(remote, ["_uuid", "external_ids"], remember)
    result: Digest = {}

    def hash_row(table: str, row: dict[str, Any]) -> None:
        owned = _owned_id(table, row)
        if owned is None:
            return
        plain = {name: _plain(value, ids) for name, value in sorted(row.items())
                 if not name.startswith("_") and name not in RUNTIME_COLUMNS}
        result[(table, owned.split(":", 1)[1])] = hashlib.sha1(
            json.dumps(plain, sort_keys=True).encode()).digest()

    _scan(remote, None, hash_row)
    return result


def digest_difference(left: Digest, right: Digest, limit: int = 20) -> list[str]:
    """Up to ``limit`` rows that differ (empty when the owned rows are equal)."""
    lines = []
    for key in sorted(set(left) | set(right)):
        if left.get(key) != right.get(key):
            where = "only left" if key not in right else "only right" if key not in left \
                else "differs"
            lines.append(f"{where}: {key}")
            if len(lines) >= limit:
                break
    return lines
