"""The floor baseline: the same rows as ovnk's builders, written by one ovn-nbctl per batch.

``nbctl_commands(rows)`` turns ``DesiredRow`` lists into one ``ovn-nbctl``
transaction: every row is created with ``--id=@rN``, children before their
parents, and each parent is created with its reference sets (``ports``,
``nat``, ``static_routes``, ``policies``) already naming its children.  This
is the cheapest way to put those rows into an ovsdb-server, so ovnk's time
is reported as a ratio to it.  The benchmark checks that both writers
produced the same rows (``ovnk_core.ovn.snapshot``).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from typing import Any

from ovnk_core.ovn.declarative import DesiredRow, Ref
from ovnk_core.ovn.install import command


class _Raw(str):
    """An already formatted value (a ``@rN`` reference to a row of the batch)."""


def _quote(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))


def _value(value: Any, ids: dict[tuple[str, str], str]) -> str:
    if value is None:  # an optional column left empty
        return "[]"
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, Ref):
        return ids[(value.table, value.primary_id)]
    if isinstance(value, dict):
        return "{" + ",".join(f"{_quote(k)}={_value(v, ids)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple | set | frozenset):
        return "[" + ",".join(_value(v, ids) for v in value) + "]"
    return _quote(value)


RowKey = tuple[str, str]  # (table, primary id)


def plan_batch(rows: Sequence[DesiredRow]) -> tuple[list[DesiredRow], dict[RowKey, int],
                                                     dict[RowKey, dict[str, list[RowKey]]]]:
    """One transaction's plan: rows ordered children before parents, each row's position
    in ``rows`` (its batch-local name), and each parent's reference-set members by column.

    :raises ValueError: a link to a row outside the batch, or a reference cycle.
    """
    position = {(row.table, row.ids.primary_id): i for i, row in enumerate(rows)}
    children: dict[RowKey, dict[str, list[RowKey]]] = {}
    for row in rows:
        for link in row.links:
            parent = (link.parent.table, link.parent.primary_id)
            if parent not in position:
                raise ValueError(f"{row.table} {row.ids.primary_id}: parent {parent} is not in "
                                 "the batch")
            children.setdefault(parent, {}).setdefault(link.column, []).append(
                (row.table, row.ids.primary_id))
    ordered: list[DesiredRow] = []
    placed: set[RowKey] = set()
    pending = list(rows)
    while pending:
        progress = False
        for row in list(pending):
            key = (row.table, row.ids.primary_id)
            kids = {child for column in children.get(key, {}).values() for child in column}
            kids |= {ref for ref in _column_refs(row.columns.values()) if ref in position}
            if kids <= placed:
                ordered.append(row)
                placed.add(key)
                pending.remove(row)
                progress = True
        if not progress:
            raise ValueError("reference cycle among the rows")
    return ordered, position, children


def _column_refs(values: Any) -> list[RowKey]:
    """The rows a row's declared columns refer to (a switch's load balancer groups)."""
    found: list[RowKey] = []
    for value in values:
        if isinstance(value, Ref):
            found.append((value.table, value.primary_id))
        elif isinstance(value, dict):
            found += _column_refs(value.values())
        elif isinstance(value, list | tuple | set | frozenset):
            found += _column_refs(value)
    return found


def nbctl_commands(rows: Sequence[DesiredRow]) -> list[str]:
    """ovn-nbctl arguments creating ``rows`` (all links inside the batch) in one transaction."""
    ordered, position, children = plan_batch(rows)
    ids = {key: f"@r{index}" for key, index in position.items()}
    args: list[str] = []
    for row in ordered:
        key = (row.table, row.ids.primary_id)
        members = {column: [_Raw(ids[m]) for m in found]
                   for column, found in children.get(key, {}).items()}
        args += create_command(row, ids[key], ids, members)
    return args


def create_command(row: DesiredRow, name: str, ids: dict[RowKey, str] | None = None,
                   members: dict[str, Any] | None = None) -> list[str]:
    """``-- --id=<name> create <table> column=value ...`` for one row (its references to
    rows of the batch through ``ids``, reference sets given as ``members``)."""
    columns = {**row.declared_columns(), **(members or {})}
    return ["--", f"--id={name}", "create", row.table,
            *(f"{column}={_value(value, ids or {})}" for column, value in columns.items())]


def run_nbctl(remote: str, args: list[str]) -> None:
    subprocess.run(command("ovn-nbctl", f"--db={remote}", "--no-leader-only", *args), check=True,
                   capture_output=True, text=True)
