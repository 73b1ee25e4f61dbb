"""Declarative writes: describe the rows one owner should have, and converge NB to it.

A caller (a ``build_*`` function) describes, for one ``Owner``, every row
that owner should have: table, ``ObjectIDs``, the columns it cares about,
and the reference sets of other rows it must be a member of (``Link``: a
port is a member of its switch's ``ports``, an ACL of its port group's
``acls``).  ``apply`` then, in one transaction:

* inserts missing rows, and rewrites only the declared columns that differ
  (columns not declared — ``up``, ``dynamic_addresses`` — are never touched);
* adds missing links with set mutations (so rows of other owners in the same
  parent column are left alone) and removes links the row no longer declares.
  Reference sets (``ports``, ``acls``, ``nat``, ``static_routes``...) are built
  only this way, from the members' side, never declared as a column — so one
  owner's switch and another owner's pod ports never fight over ``ports``;
* deletes rows of the owner that are no longer desired, unlinking them from
  their owned parents first.

Rows are matched by ``k8s.ovn.org/id`` through the IDL index; rows without
ovnk's ownership keys are never read as "ours", never changed, never
deleted, and a desired link into such a row is refused.  When nothing
differs the transaction is empty and nothing is sent to the server: a
restart with nothing changed writes nothing.

The diff runs inside the transaction's command, on the IDL thread, so when
the server answers "try again" (someone changed a row meanwhile) it is
recomputed from the new state.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ovsdbapp.backend.ovs_idl import command as ovsdbapp_command

from ovnk_core.errors import OvnkError
from ovnk_core.ovn.index import OWNER_SCOPE_KEY, owner_scope
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import (
    ID_KEY,
    OWNER_CONTROLLER_KEY,
    OWNER_KEY,
    ObjectIDs,
    Owner,
    is_owned,
)


class DesiredStateError(OvnkError):
    """The desired rows are inconsistent (a programming error in a ``build_*`` function)."""


class MissingReference(OvnkError):
    """A desired row refers to a row that does not exist yet; retry later (not-ready)."""


@dataclass(frozen=True)
class Ref:
    """A reference to an owned row by table and primary id (``k8s.ovn.org/id``)."""

    table: str
    primary_id: str

    @classmethod
    def to(cls, table: str, ids: ObjectIDs) -> Ref:
        return cls(table, ids.primary_id)


@dataclass(frozen=True)
class Link:
    """Membership of the described row in ``parent``'s reference-set column ``column``."""

    parent: Ref
    column: str


@dataclass(frozen=True)
class DesiredRow:
    """One row as its owner wants it.

    :ivar columns: declared columns; values may be ``Ref`` (or lists/dict values of ``Ref``)
        for reference columns.  ``external_ids`` must not be given here: it is the
        ownership keys plus ``extra_external_ids``.
    :ivar links: reference sets of other rows this row must be a member of.  A row of a
        non-root table needs at least one, or OVSDB would garbage-collect it.
    """

    table: str
    ids: ObjectIDs
    columns: Mapping[str, Any] = field(default_factory=dict)
    links: tuple[Link, ...] = ()
    extra_external_ids: Mapping[str, str] = field(default_factory=dict)

    @property
    def ref(self) -> Ref:
        return Ref(self.table, self.ids.primary_id)

    def external_ids(self) -> dict[str, str]:
        return {**self.extra_external_ids, **self.ids.external_ids()}


@dataclass
class ApplyResult:
    """What one ``apply`` changed (all zero: nothing was written)."""

    created: int = 0
    updated: int = 0
    deleted: int = 0
    linked: int = 0
    unlinked: int = 0

    @property
    def changed(self) -> bool:
        return any((self.created, self.updated, self.deleted, self.linked, self.unlinked))

    def add(self, other: ApplyResult) -> None:
        self.created += other.created
        self.updated += other.updated
        self.deleted += other.deleted
        self.linked += other.linked
        self.unlinked += other.unlinked


def apply(nb: NbClient, owner: Owner, rows: Iterable[DesiredRow]) -> ApplyResult:
    """Converge the rows of ``owner`` to ``rows`` in one transaction."""
    return apply_many(nb, {owner: list(rows)})


def apply_many(nb: NbClient, desired: Mapping[Owner, Sequence[DesiredRow]]) -> ApplyResult:
    """Converge several owners in one transaction (all or nothing)."""
    for owner, rows in desired.items():
        _validate(owner, rows, nb.idl.tables)
    cmd = _ApplyCommand(nb, desired)
    with nb.transaction() as txn:
        txn.add(cmd)
    result: ApplyResult = cmd.result
    if result.changed:
        nb.transactions += 1
    return result


def delete_owner(nb: NbClient, owner: Owner) -> ApplyResult:
    """Remove every row of ``owner`` (the same as applying an empty set)."""
    return apply(nb, owner, [])


def _validate(owner: Owner, rows: Sequence[DesiredRow], tables: Mapping[str, Any]) -> None:
    seen: set[tuple[str, str]] = set()
    for row in rows:
        table = tables.get(row.table)
        if table is None:
            raise DesiredStateError(f"no table {row.table!r} in the Northbound schema")
        unknown = sorted(set(row.columns) - set(table.columns))
        if unknown:
            raise DesiredStateError(
                f"row {row.table} {row.ids.primary_id}: table {row.table} has no column "
                f"{', '.join(map(repr, unknown))}")
        if not table.is_root and not row.links:
            raise DesiredStateError(
                f"row {row.table} {row.ids.primary_id}: {row.table} is not a root table, so "
                "the row needs a link to a parent or OVSDB would delete it")
        for name in row.columns:
            if is_reference_set(table.columns[name]):
                raise DesiredStateError(
                    f"row {row.table} {row.ids.primary_id}: {row.table}.{name} is a reference "
                    "set, maintained by links from its members; give each member a Link")
        for link in row.links:
            parent_table = tables.get(link.parent.table)
            if parent_table is None or link.column not in parent_table.columns:
                raise DesiredStateError(
                    f"row {row.table} {row.ids.primary_id}: no column "
                    f"{link.parent.table}.{link.column} to link into")
            if not is_reference_set(parent_table.columns[link.column]):
                raise DesiredStateError(
                    f"row {row.table} {row.ids.primary_id}: {link.parent.table}.{link.column} "
                    "is not a reference set")
        if row.ids.owner != owner:
            raise DesiredStateError(
                f"row {row.table} {row.ids.primary_id} belongs to {row.ids.owner}, "
                f"not to {owner}")
        key = (row.table, row.ids.primary_id)
        if key in seen:
            raise DesiredStateError(f"row {row.table} {row.ids.primary_id} is described twice")
        seen.add(key)
        if "external_ids" in row.columns:
            raise DesiredStateError(
                f"row {row.table} {row.ids.primary_id}: give extra_external_ids, "
                "not an external_ids column")


class _ApplyCommand(ovsdbapp_command.BaseCommand):  # type: ignore[misc]
    def __init__(self, nb: NbClient, desired: Mapping[Owner, Sequence[DesiredRow]]) -> None:
        super().__init__(nb.api)
        self.nb = nb
        self.desired = desired

    def run_idl(self, txn: Any) -> None:
        self.result = _Applier(self.nb, txn).run(self.desired)


class _Applier:
    """The diff-and-write of one transaction attempt (recomputed on TRY_AGAIN)."""

    def __init__(self, nb: NbClient, txn: Any) -> None:
        self.idl = nb.idl
        self.txn = txn
        self.result = ApplyResult()
        self.resolved: dict[tuple[str, str], Any] = {}
        self.new_rows: dict[uuid.UUID, Any] = {}
        self.pending_new_sets: dict[tuple[uuid.UUID, str], set[uuid.UUID]] = {}

    # -- lookups ---------------------------------------------------------------------------
    def _row(self, table: str, row_uuid: uuid.UUID) -> Any | None:
        return self.idl.tables[table].rows.get(row_uuid)

    def _by_id(self, table: str, primary_id: str) -> Any | None:
        with self.idl.index_lock:
            keys = self.idl.ids_index.find(ID_KEY, primary_id)
        for row_table, row_uuid in keys:
            if row_table == table:
                row = self._row(table, row_uuid)
                if row is not None and row.external_ids.get(ID_KEY) == primary_id:
                    return row
        return None

    def _owned_rows(self, owner: Owner) -> dict[tuple[str, str], Any]:
        with self.idl.index_lock:
            keys = self.idl.ids_index.find(OWNER_SCOPE_KEY,
                                           owner_scope(owner.controller, owner.key))
        found = {}
        for table, row_uuid in keys:
            row = self._row(table, row_uuid)
            if row is None:
                continue
            ext = row.external_ids
            if (ext.get(OWNER_CONTROLLER_KEY) == owner.controller
                    and ext.get(OWNER_KEY) == owner.key and ID_KEY in ext):
                found[(table, ext[ID_KEY])] = row
        return found

    def _resolve(self, ref: Ref) -> Any:
        row = self.resolved.get((ref.table, ref.primary_id))
        if row is None:
            row = self._by_id(ref.table, ref.primary_id)
        if row is None:
            raise MissingReference(f"{ref.table} {ref.primary_id} does not exist (yet)")
        return row

    # -- the run ---------------------------------------------------------------------------
    def run(self, desired: Mapping[Owner, Sequence[DesiredRow]]) -> ApplyResult:
        all_rows = [row for rows in desired.values() for row in rows]
        # 1. find or insert every desired row, so references can be resolved.
        for row in all_rows:
            existing = self._by_id(row.table, row.ids.primary_id)
            if existing is None:
                existing = self.txn.insert(self.idl.tables[row.table])
                self.new_rows[existing.uuid] = existing
                self.result.created += 1
            self.resolved[(row.table, row.ids.primary_id)] = existing
        # 2. columns
        for row in all_rows:
            self._write_columns(row)
        # 3. links
        wanted_links: dict[uuid.UUID, set[tuple[str, uuid.UUID, str]]] = {}
        for row in all_rows:
            target = self.resolved[(row.table, row.ids.primary_id)]
            wanted = wanted_links.setdefault(target.uuid, set())
            for link in row.links:
                parent = self._resolve(link.parent)
                if parent.uuid not in self.new_rows and not is_owned(parent.external_ids):
                    raise DesiredStateError(
                        f"{row.table} {row.ids.primary_id}: parent {link.parent.table} "
                        f"{link.parent.primary_id} is not owned by ovnk")
                wanted.add((link.parent.table, parent.uuid, link.column))
                self._link(parent, link.column, target)
            if target.uuid not in self.new_rows:
                self._unlink_unwanted(target, wanted)
        for (parent_uuid, column), members in self.pending_new_sets.items():
            setattr(self.new_rows[parent_uuid], column, sorted(members))
        # 4. stale rows of every owner
        for owner, rows in desired.items():
            keep = {(row.table, row.ids.primary_id) for row in rows}
            for key, stale in self._owned_rows(owner).items():
                if key not in keep and stale.uuid not in self.new_rows:
                    self._delete(key[0], stale)
        return self.result

    def _write_columns(self, row: DesiredRow) -> None:
        target = self.resolved[(row.table, row.ids.primary_id)]
        table = self.idl.tables[row.table]
        values = dict(row.columns)
        values["external_ids"] = row.external_ids()
        is_new = target.uuid in self.new_rows
        changed = False
        for name, value in values.items():
            column_type = table.columns[name].type
            wanted = self._to_python(value)
            if not is_new:
                current = target._data[name].to_python(_uuid_of_row) if target._data else None
                if _canonical(column_type, current) == _canonical(column_type, wanted):
                    continue
                changed = True
            setattr(target, name, _setter_value(column_type, wanted))
        if changed:
            self.result.updated += 1

    def _to_python(self, value: Any) -> Any:
        if isinstance(value, Ref):
            return self._resolve(value).uuid
        if isinstance(value, list | tuple | set | frozenset):
            return [self._to_python(item) for item in value]
        if isinstance(value, dict):
            return {key: self._to_python(item) for key, item in value.items()}
        return value

    def _link(self, parent: Any, column: str, child: Any) -> None:
        if parent.uuid in self.new_rows:
            self.pending_new_sets.setdefault((parent.uuid, column), set()).add(child.uuid)
            self.result.linked += 1
            return
        current = parent._data[column].to_python(_uuid_of_row) if parent._data else []
        if child.uuid in set(_as_list(current)):
            return
        parent.addvalue(column, child.uuid)
        self.result.linked += 1

    def _unlink_unwanted(self, target: Any, wanted: set[tuple[str, uuid.UUID, str]]) -> None:
        with self.idl.index_lock:
            referrers = self.idl.backrefs.referrers(target.uuid)
        for table, parent_uuid, column in referrers:
            if (table, parent_uuid, column) in wanted:
                continue
            if not is_reference_set(self.idl.tables[table].columns[column]):
                continue
            parent = self._row(table, parent_uuid)
            if parent is None or not is_owned(parent.external_ids):
                continue
            parent.delvalue(column, target.uuid)
            self.result.unlinked += 1

    def _delete(self, table: str, row: Any) -> None:
        with self.idl.index_lock:
            referrers = self.idl.backrefs.referrers(row.uuid)
        for parent_table, parent_uuid, column in referrers:
            parent = self._row(parent_table, parent_uuid)
            if parent is None or not is_owned(parent.external_ids):
                continue  # weak refs are dropped by the server; strong ones fail loudly
            parent.delvalue(column, row.uuid)
        row.delete()
        self.result.deleted += 1


def is_reference_set(column: Any) -> bool:
    """A column holding a set of references (``ports``, ``acls``, ``nat`` ...)."""
    ctype = column.type
    return bool(ctype.key.ref_table_name) and ctype.value is None and ctype.n_max > 1


def _uuid_of_row(row_uuid: uuid.UUID, _base: Any = None) -> uuid.UUID:
    return row_uuid


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list | tuple | set | frozenset):
        return list(value)
    return [value]


def _canonical(column_type: Any, value: Any) -> Any:
    """A comparable form of a column value, the same for the DB side and the desired side."""
    if column_type.is_map():
        return tuple(sorted((str(k), str(v)) for k, v in dict(value or {}).items()))
    if column_type.n_max == 1 and column_type.n_min == 1:
        return str(value)
    return tuple(sorted(str(item) for item in _as_list(value)))


def _setter_value(column_type: Any, value: Any) -> Any:
    if column_type.is_map():
        return dict(value or {})
    if column_type.n_max == 1 and column_type.n_min == 1:
        return value
    return _as_list(value)
