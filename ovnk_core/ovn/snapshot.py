"""A comparable picture of the rows ovnk owns in Northbound, independent of row UUIDs.

Two NBs rendered from the same cluster state have the same snapshot, even
though their row UUIDs differ: every row is keyed by table and
``k8s.ovn.org/id``, and every reference is replaced by the referenced row's
id.  Tests use it to prove that an NB that lived through node, pod and
network churn and restarts equals a clean render; the benchmark uses it to
check that the two writers it compares wrote the same rows.
"""

from __future__ import annotations

import uuid
from typing import Any

from ovnk_core.ovn.nb import NbClient, committed_external_ids, committed_value, stable_rows
from ovnk_core.ovn.ownership import ID_KEY, is_owned

Snapshot = dict[tuple[str, str], dict[str, Any]]

# Columns other daemons write (ovn-northd sets a port's state and the addresses it assigns):
# not ovnk's desired state, so not compared.
RUNTIME_COLUMNS = frozenset({"up", "dynamic_addresses", "status"})

OWNED_TABLES = ("Logical_Router", "Logical_Router_Port", "Logical_Router_Static_Route",
                "Logical_Router_Policy", "NAT", "Logical_Switch", "Logical_Switch_Port", "ACL",
                "Address_Set", "Port_Group", "Load_Balancer", "Load_Balancer_Group",
                "Gateway_Chassis")


def _plain(value: Any, refs: Any) -> Any:
    """``value`` with references replaced by ``<table>:<k8s.ovn.org/id>``."""
    if isinstance(value, uuid.UUID):
        for table in refs:
            row = table.rows.get(value)
            if row is not None:
                ext = committed_external_ids(row) or {}
                return f"{table.name}:{ext.get(ID_KEY, '<not ovnk>')}"
        return "<dangling>"
    if isinstance(value, dict):
        return tuple(sorted((str(k), _plain(v, refs)) for k, v in value.items()))
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(sorted((_plain(v, refs) for v in value), key=repr))
    return value


def snapshot(nb: NbClient, tables: tuple[str, ...] = OWNED_TABLES) -> Snapshot:
    """Every owned row of ``tables``, keyed by (table, id), columns in plain values.

    Reads the rows' committed data only (never a transaction's pending changes), so it is
    safe while a controller writes.
    """
    result: Snapshot = {}
    idl_tables = nb.idl.tables
    for table in tables:
        schema = idl_tables.get(table)
        if schema is None:
            continue
        for row in stable_rows(schema.rows):
            ext = committed_external_ids(row)
            if ext is None or not is_owned(ext):
                continue
            columns = {}
            for name, column in schema.columns.items():
                if name in RUNTIME_COLUMNS:
                    continue
                ref_names = {t.ref_table_name for t in (column.type.key, column.type.value)
                             if t is not None and t.ref_table_name}
                refs = [idl_tables[n] for n in sorted(ref_names) if n in idl_tables]
                columns[name] = _plain(committed_value(row, name), refs)
            result[(table, ext[ID_KEY])] = columns
    return result


def difference(left: Snapshot, right: Snapshot) -> list[str]:
    """Human-readable differences (empty when equal)."""
    lines = []
    for key in sorted(set(left) | set(right)):
        if key not in right:
            lines.append(f"only left: {key}")
        elif key not in left:
            lines.append(f"only right: {key}")
        else:
            for column in sorted(set(left[key]) | set(right[key])):
                if left[key].get(column) != right[key].get(column):
                    lines.append(f"{key} {column}: {left[key].get(column)!r} != "
                                 f"{right[key].get(column)!r}")
    return lines


def committed_names(nb: NbClient, table: str) -> set[str]:
    """The ``name`` of every row of ``table`` as committed (safe while others write)."""
    names = set()
    for row in nb.row_list(table):
        name = committed_value(row, "name")
        if name is not None:
            names.add(str(name))
    return names
