"""Declarative writes: describe the rows one owner should have, and converge NB to it.

A caller (a ``build_*`` function) describes, for one ``Owner``, every row
that owner should have: table, ``ObjectIDs``, the columns it cares about,
and the reference sets of other rows it must be a member of (``Link``: a
port is a member of its switch's ``ports``, an ACL of its port group's
``acls``).  ``apply`` then, in one transaction:

* inserts missing rows, and rewrites only the declared columns that differ
  (columns not declared — such as those ``snapshot.RUNTIME_COLUMNS`` lists — are
  never touched);
* adds missing links with set mutations (so rows of other owners in the same
  parent column are left alone) and removes links the row no longer declares.
  Reference sets (``ports``, ``acls``, ``nat``, ``static_routes``...) are built
  only this way, from the members' side, never declared as a column — so one
  owner's switch and another owner's pod ports never fight over ``ports``;
* deletes rows of the owner that are no longer desired, unlinking them from
  their owned parents first.

Rows are matched by ``k8s.ovn.org/id``; rows without ovnk's ownership keys
are never read as "ours", never changed, never deleted, and a desired link
into such a row is refused (``MissingReference``).  When nothing differs no
transaction is sent: a restart with nothing changed writes nothing.  A value OVSDB
cannot hold (NUL, a lone surrogate: ``storable``) refuses its owner alone
(``UnstorableValue``) and is never sent.  The
diff and the transaction are the writer's (``writer.NbWriter``,
``txn_plan``); this module is the model callers build.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ovnk_core.errors import OvnkError
from ovnk_core.ovn import storable
from ovnk_core.ovn.ownership import (
    DECLARED_REFERENCE_COLUMNS,
    NAME_IDENTIFIED_TABLES,
    ObjectIDs,
    Owner,
)


class DesiredStateError(OvnkError):
    """The desired rows are inconsistent (a programming error in a ``build_*`` function)."""


class MissingReference(OvnkError):
    """A desired row refers to a row that does not exist yet; retry later (not-ready)."""


class UnstorableValue(OvnkError):
    """Some owners declared values OVSDB cannot hold (``storable``): they were not written
    (their rows stay as they were); every other owner of the same ``apply_many`` was.

    :ivar problems: owner → what is wrong (table, row, column, value).
    :ivar result: what the other owners' transaction changed.
    :ivar not_ready: why the other owners could not be written either, when they refer to
        rows that do not exist (yet) — a refused owner's, say; else empty.
    """

    def __init__(self, problems: Mapping[Owner, str], result: ApplyResult,
                 not_ready: str = "") -> None:
        super().__init__("; ".join(f"{str(owner)!a}: {problem}"
                                   for owner, problem in sorted(problems.items())))
        self.problems = dict(problems)
        self.result = result
        self.not_ready = not_ready


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

    def declared_columns(self) -> dict[str, Any]:
        """The columns written: the declared ones and ``external_ids`` (which a table of
        ``NAME_IDENTIFIED_TABLES`` does not have)."""
        values = dict(self.columns)
        if self.table not in NAME_IDENTIFIED_TABLES:
            values["external_ids"] = self.external_ids()
        return values


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


class RowWriter(Protocol):
    """What ``apply`` needs: the NB schema and a way to converge owners."""

    @property
    def schema(self) -> Any: ...

    def apply_many(self, desired: Mapping[Owner, Sequence[DesiredRow]]) -> ApplyResult: ...


def apply(nb: RowWriter, owner: Owner, rows: Iterable[DesiredRow]) -> ApplyResult:
    """Converge the rows of ``owner`` to ``rows`` in one transaction."""
    return apply_many(nb, {owner: list(rows)})


def apply_many(nb: RowWriter, desired: Mapping[Owner, Sequence[DesiredRow]]) -> ApplyResult:
    """Converge several owners in one transaction.

    :raises UnstorableValue: some owners declared values OVSDB cannot hold; the others
        were written (never is such a value sent: it would cost the connection).
    """
    for owner, rows in desired.items():
        validate(owner, rows, nb.schema.tables)
    refused = {owner: problem for owner, rows in desired.items()
               if (problem := storable.rows_problem(rows)) is not None}
    if not refused:
        return nb.apply_many(desired)
    rest = {owner: rows for owner, rows in desired.items() if owner not in refused}
    try:
        result = nb.apply_many(rest) if rest else ApplyResult()
    except MissingReference as exc:
        raise UnstorableValue(refused, ApplyResult(), str(exc)) from exc
    raise UnstorableValue(refused, result)


def delete_owner(nb: RowWriter, owner: Owner) -> ApplyResult:
    """Remove every row of ``owner`` (the same as applying an empty set)."""
    return apply(nb, owner, [])


def validate(owner: Owner, rows: Sequence[DesiredRow], tables: Mapping[str, Any]) -> None:
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
        if row.table in NAME_IDENTIFIED_TABLES and (
                row.columns.get("name") != row.ids.primary_id or row.extra_external_ids):
            raise DesiredStateError(
                f"row {row.table} {row.ids.primary_id}: a {row.table} row is identified by "
                "its name: give it as the primary id and the name column, with no "
                "external_ids")
        for name in row.columns:
            if is_reference_set(table.columns[name]) and \
                    (row.table, name) not in DECLARED_REFERENCE_COLUMNS:
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


def is_reference_set(column: Any) -> bool:
    """A column holding a set of references (``ports``, ``acls``, ``nat`` ...)."""
    ctype = column.type
    return bool(ctype.key.ref_table_name) and ctype.value is None and ctype.n_max > 1
