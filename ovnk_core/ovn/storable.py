"""Values OVSDB can hold, checked before they are sent.

OVSDB strings are UTF-8 without NUL.  A declared value holding a NUL, or a
lone UTF-16 surrogate (which Python strings can hold and JSON can spell as
``\\ud800``, but no UTF-8 can), is a JSON-RPC message ovsdb-server cannot
parse: it drops the connection, and every owner written in that
transaction — and every retry of it — fails with it, with nothing saying
which value was at fault.  Such values come from objects users write: a
network's name in a NAD's CNI config, a node's chassis or gateway
annotation.  So every string of a desired row (column values, map keys and
values, external_ids) is checked where rows are applied
(``declarative.apply_many``); a bad one refuses that row's owner, with a
message naming the table, row, column and what is wrong, and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ovnk_core.ovn.ownership import ObjectIDs


class DesiredRow(Protocol):
    """What this module reads of ``declarative.DesiredRow`` (declared here so the check
    sits below the declarative layer that calls it, not beside it)."""

    @property
    def table(self) -> str: ...

    @property
    def ids(self) -> ObjectIDs: ...

    @property
    def columns(self) -> Mapping[str, Any]: ...

    @property
    def extra_external_ids(self) -> Mapping[str, str]: ...


def string_problem(text: str) -> str | None:
    """Why OVSDB cannot hold ``text`` (``None``: it can)."""
    if "\x00" in text:
        return "holds a NUL character"
    if not text.isascii():  # O(1) in CPython; only non-ASCII text can hold a surrogate
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"holds an unpaired UTF-16 surrogate (U+{ord(text[exc.start]):04X})"
    return None


def value_problem(value: Any) -> str | None:
    """The first string inside ``value`` (lists, sets, map keys and values) OVSDB cannot
    hold, quoted, with why; ``None`` when every string is fine.  References and other
    atoms hold no text of their own."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, str):
            problem = string_problem(current)
            if problem:
                return f"{current!a} {problem}"
        elif isinstance(current, Mapping):
            stack.extend(current.keys())
            stack.extend(current.values())
        elif isinstance(current, list | tuple | set | frozenset):
            stack.extend(current)
    return None


def row_problem(row: DesiredRow) -> str | None:
    """What in ``row`` OVSDB cannot hold, naming the table, row and column."""
    ids = row.ids
    for text in (ids.owner.controller, ids.owner.key, ids.owner_type, ids.name, ids.network,
                 ids.topology, ids.role):
        problem = string_problem(text)
        if problem:
            return _where(row, "external_ids", f"{text!a} {problem}")
    for column, value in (*row.columns.items(), ("external_ids", row.extra_external_ids)):
        if type(value) is str:  # the common case, without the walk
            problem = string_problem(value)
            problem = f"{value!a} {problem}" if problem else None
        elif isinstance(value, Mapping | list | tuple | set | frozenset):
            problem = value_problem(value)
        else:
            continue
        if problem:
            return _where(row, column, problem)
    return None


def _where(row: DesiredRow, column: str, problem: str) -> str:
    return f"{row.table} row {row.ids.primary_id!a}: column {column}: {problem}"


def rows_problem(rows: Iterable[DesiredRow]) -> str | None:
    """The first problem among ``rows`` (one owner's), or ``None``."""
    for row in rows:
        problem = row_problem(row)
        if problem:
            return problem
    return None


__all__ = ["row_problem", "rows_problem", "string_problem", "value_problem"]
