"""One ``apply`` as one OVSDB transaction: the diff of desired rows against the owned rows.

``plan_apply`` compares what the owners want (``DesiredRow``) with what the
writer knows of their rows (``OwnedRows``) and produces the operations of
one transaction, in this order:

* ``insert`` for missing rows (reference sets of new parents are written in
  the insert, naming their members by ``named-uuid``);
* ``update`` of the declared columns whose value differs (undeclared columns
  are never written);
* ``mutate`` of owned parents' reference sets: members added, members no
  longer declared removed (other members are left alone);
* ``delete`` of the rows their owner no longer wants.

``TxnPlan.commit`` reads the server's reply: on an error nothing was
written and nothing is remembered; on success the store learns the new rows,
their fingerprints and links, forgets deleted rows and the children OVSDB
garbage-collected with them, and checks that every ``update``, ``mutate``
and ``delete`` met its row.  A row that was not there means someone else
changed NB behind the writer's back: ``StaleRows`` tells the writer to read
NB again before the next attempt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ovnk_core.errors import OvnTransactionError
from ovnk_core.ovn.datum import (
    ColumnCodec,
    DatumError,
    Unresolved,
    canonical_columns,
    column_hash,
    fingerprint,
    fingerprint_hashes,
    uuid_int,
    uuid_text,
)
from ovnk_core.ovn.declarative import (
    ApplyResult,
    DesiredRow,
    DesiredStateError,
    MissingReference,
    Ref,
)
from ovnk_core.ovn.owned_rows import OwnedRows, RowRecord, strong_referrers
from ovnk_core.ovn.ownership import Owner

Codecs = Mapping[str, Mapping[str, ColumnCodec]]


class StaleRows(OvnTransactionError):
    """A row the writer knew was not in NB (changed by another writer); read NB again."""


@dataclass(eq=False)
class _NewRow:
    row: DesiredRow
    name: str
    op: dict[str, Any] = field(default_factory=dict)
    op_index: int = -1
    record: RowRecord | None = None


Target = RowRecord | _NewRow


@dataclass(eq=False)
class _SetChange:
    inserts: list[Any] = field(default_factory=list)
    deletes: list[Any] = field(default_factory=list)


@dataclass(eq=False)
class TxnPlan:
    """The operations of one transaction and what to remember once it committed."""

    store: OwnedRows
    codecs: Codecs
    non_root: frozenset[str]
    ops: list[dict[str, Any]] = field(default_factory=list)
    result: ApplyResult = field(default_factory=ApplyResult)
    new_rows: list[_NewRow] = field(default_factory=list)
    updated: list[tuple[DesiredRow, RowRecord]] = field(default_factory=list)
    # existing rows another owner (or none: a name-identified row read from NB) had
    adopted: list[tuple[DesiredRow, RowRecord]] = field(default_factory=list)
    targets: dict[tuple[str, str], Target] = field(default_factory=dict)
    link_adds: list[tuple[Target, str, Target]] = field(default_factory=list)
    link_removes: list[tuple[RowRecord, str, RowRecord]] = field(default_factory=list)
    deleting: list[RowRecord] = field(default_factory=list)
    checked: list[tuple[int, str]] = field(default_factory=list)  # op index, what it is

    def commit(self, replies: Sequence[Any]) -> None:
        """Learn what the committed transaction did.

        :raises OvnTransactionError: the transaction failed (nothing was written).
        :raises StaleRows: it committed, but some rows were not where the store said.
        """
        failure = _failure(replies, self.ops)
        if failure:
            raise OvnTransactionError(f"OVN Northbound transaction failed: {failure}")
        store = self.store
        for new in self.new_rows:
            reply = replies[new.op_index]
            record = RowRecord(uuid_int(reply["uuid"][1]), new.row.table,
                               new.row.ids.primary_id, store.intern(new.row.ids.owner), b"")
            new.record = record
            store.add(record)
        for new in self.new_rows:
            assert new.record is not None
            new.record.fp = self._fingerprint(new.row)
        for row, record in self.updated:
            record.fp = self._fingerprint(row)
            store.set_owner(record, store.intern(row.ids.owner))
        for row, record in self.adopted:
            store.set_owner(record, store.intern(row.ids.owner))
        for parent, column, child in self.link_adds:
            store.link(self._record(parent), column, self._record(child))
        for parent_record, column, child_record in self.link_removes:
            store.unlink(parent_record, column, child_record)
        candidates = [child for _, _, child in self.link_removes]
        for record in self.deleting:
            candidates += store.remove(record)
        self._collect_garbage(candidates)
        missed = [what for index, what in self.checked
                  if not isinstance(replies[index], dict) or replies[index].get("count", 0) < 1]
        if missed:
            raise StaleRows(f"{len(missed)} row(s) were changed in OVN Northbound by someone "
                            f"else (first: {missed[0]}); reading it again")

    def _record(self, target: Target) -> RowRecord:
        if isinstance(target, _NewRow):
            assert target.record is not None
            return target.record
        return target

    def target(self, ref: Ref) -> Target:
        """The row a reference names: written by this transaction, or known to the store."""
        key = (ref.table, ref.primary_id)
        target = self.targets.get(key) or self.store.find(*key)
        if target is None:
            raise MissingReference(f"{ref.table} {ref.primary_id} does not exist (yet) or is "
                                   "not owned by ovnk")
        return target

    def _resolved_uuid(self, ref: Any) -> int:
        return self._record(self.target(ref)).uuid

    def _fingerprint(self, row: DesiredRow) -> bytes:
        return fingerprint(canonical_columns(self.codecs[row.table], _declared(row),
                                             self._resolved_uuid))

    def _collect_garbage(self, candidates: list[RowRecord]) -> None:
        """OVSDB deletes a row of a non-root table that no strong reference holds."""
        store = self.store
        while candidates:
            record = candidates.pop()
            if record.table not in self.non_root or not store.holds(record):
                continue
            if any(True for _ in strong_referrers(store, record, self.codecs)):
                continue
            candidates += store.remove(record)


def _declared(row: DesiredRow) -> dict[str, Any]:
    return row.declared_columns()


def _failure(replies: Sequence[Any], ops: Sequence[dict[str, Any]]) -> str:
    for index, reply in enumerate(replies):
        if isinstance(reply, dict) and reply.get("error"):
            detail = reply.get("details") or ""
            where = ""
            if index < len(ops):
                op = ops[index]
                where = f" ({op['op']} {op['table']})"
            return f"{reply['error']}{where}: {detail}".rstrip(": ")
    if len(replies) < len(ops):
        return "the server answered fewer operations than were sent"
    return ""


def plan_apply(store: OwnedRows, codecs: Codecs, non_root: frozenset[str],
               desired: Mapping[Owner, Sequence[DesiredRow]]) -> TxnPlan:
    """The transaction converging every owner in ``desired`` (empty ``ops``: nothing to do).

    :raises MissingReference: a desired row refers to a row that is not there.
    :raises DesiredStateError: a value does not fit its column.
    """
    plan = TxnPlan(store, codecs, non_root)
    try:
        _Planner(plan).run(desired)
    except DatumError as exc:
        raise DesiredStateError(str(exc)) from None
    return plan


class _Planner:
    def __init__(self, plan: TxnPlan) -> None:
        self.plan = plan
        self.store = plan.store
        self.codecs = plan.codecs
        self.sets: dict[tuple[RowRecord, str], _SetChange] = {}

    # -- references ----------------------------------------------------------------------
    def _wire(self, target: Target) -> list[str]:
        if isinstance(target, _NewRow):
            return ["named-uuid", target.name]
        return ["uuid", uuid_text(target.uuid)]

    def _wire_ref(self, ref: Any) -> list[str]:
        return self._wire(self.plan.target(ref))

    def _canonical_ref(self, ref: Any) -> int:
        target = self.plan.target(ref)
        if isinstance(target, _NewRow):
            raise Unresolved(ref)
        return target.uuid

    def _set(self, parent: RowRecord, column: str) -> _SetChange:
        key = (parent, column)
        change = self.sets.get(key)
        if change is None:
            change = self.sets[key] = _SetChange()
        return change

    # -- the run -------------------------------------------------------------------------
    def run(self, desired: Mapping[Owner, Sequence[DesiredRow]]) -> None:
        plan = self.plan
        rows = [row for owner_rows in desired.values() for row in owner_rows]
        existing: list[tuple[DesiredRow, RowRecord]] = []
        for row in rows:
            key = (row.table, row.ids.primary_id)
            record = self.store.find(*key)
            if record is None:
                new = _NewRow(row, f"row{len(plan.new_rows)}")
                plan.new_rows.append(new)
                plan.targets[key] = new
            else:
                plan.targets[key] = record
                existing.append((row, record))
                if record.owner != row.ids.owner:
                    plan.adopted.append((row, record))
        for new in plan.new_rows:
            self._insert(new)
        for row, record in existing:
            self._update(row, record)
        for row in rows:
            self._links(row)
        self._stale(desired)
        self._emit_sets()
        for record in plan.deleting:
            self._check(len(plan.ops), record)
            plan.ops.append({"op": "delete", "table": record.table,
                             "where": [["_uuid", "==", ["uuid", uuid_text(record.uuid)]]]})

    def _insert(self, new: _NewRow) -> None:
        codecs = self.codecs[new.row.table]
        values = {name: codecs[name].to_wire(value, self._wire_ref)
                  for name, value in _declared(new.row).items()}
        new.op = {"op": "insert", "table": new.row.table, "row": values,
                  "uuid-name": new.name}
        new.op_index = len(self.plan.ops)
        self.plan.ops.append(new.op)
        self.plan.result.created += 1

    def _update(self, row: DesiredRow, record: RowRecord) -> None:
        codecs = self.codecs[row.table]
        have = fingerprint_hashes(record.fp)
        changed = {}
        for name, value in _declared(row).items():
            codec = codecs[name]
            try:
                if column_hash(name, codec.from_python(value, self._canonical_ref)) in have:
                    continue
            except Unresolved:
                pass  # refers to a row inserted now: written, whatever it was
            changed[name] = codec.to_wire(value, self._wire_ref)
        if not changed:
            return
        self._check(len(self.plan.ops), record)
        self.plan.ops.append({"op": "update", "table": row.table, "row": changed,
                              "where": [["_uuid", "==", ["uuid", uuid_text(record.uuid)]]]})
        self.plan.updated.append((row, record))
        self.plan.result.updated += 1

    def _links(self, row: DesiredRow) -> None:
        plan = self.plan
        child = plan.targets[(row.table, row.ids.primary_id)]
        wanted: set[tuple[Target, str]] = set()
        for link in row.links:
            parent = self.plan.target(link.parent)
            if (parent, link.column) in wanted:
                continue
            wanted.add((parent, link.column))
            if isinstance(parent, _NewRow):
                members = parent.op["row"].setdefault(link.column, ["set", []])
                members[1].append(self._wire(child))
            elif isinstance(child, RowRecord) and child.is_member(parent, link.column):
                continue
            else:
                self._set(parent, link.column).inserts.append(self._wire(child))
            plan.link_adds.append((parent, link.column, child))
            plan.result.linked += 1
        if isinstance(child, RowRecord):
            for parent_record, column in self.store.parents(child):
                if (parent_record, column) not in wanted:
                    self._set(parent_record, column).deletes.append(self._wire(child))
                    plan.link_removes.append((parent_record, column, child))
                    plan.result.unlinked += 1

    def _stale(self, desired: Mapping[Owner, Sequence[DesiredRow]]) -> None:
        plan = self.plan
        targeted = {id(target) for target in plan.targets.values()}
        deleting: dict[int, RowRecord] = {}
        for owner in desired:
            for record in self.store.rows_of(owner):
                if id(record) not in targeted:
                    deleting[id(record)] = record
        for record in deleting.values():
            for parent, column in self.store.parents(record):
                if id(parent) not in deleting:
                    self._set(parent, column).deletes.append(self._wire(record))
            plan.result.deleted += 1
        plan.deleting = sorted(deleting.values(), key=lambda r: (r.table, r.primary_id))

    def _emit_sets(self) -> None:
        for (parent, column), change in self.sets.items():
            mutations = []
            if change.inserts:
                mutations.append([column, "insert", ["set", change.inserts]])
            if change.deletes:
                mutations.append([column, "delete", ["set", change.deletes]])
            self._check(len(self.plan.ops), parent)
            self.plan.ops.append({"op": "mutate", "table": parent.table,
                                  "where": [["_uuid", "==", ["uuid", uuid_text(parent.uuid)]]],
                                  "mutations": mutations})

    def _check(self, index: int, record: RowRecord) -> None:
        self.plan.checked.append((index, f"{record.table} {record.primary_id}"))
