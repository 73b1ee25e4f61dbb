"""What the writer knows of ovnk's own Northbound rows, in as little memory as possible.

The zone controller at scale owns hundreds of thousands of rows (1000
networks x 20 nodes is about 420,000).  Keeping each as a decoded OVSDB row
costs kilobytes; the writer only ever needs, per owned row:

* its uuid, table, primary id (``k8s.ovn.org/id``) and owner, to find it;
* a fingerprint of its column values (``datum.fingerprint``), to tell whether
  a declared column already holds the declared value;
* the owned rows whose reference sets hold it (``referrers``) and the owned
  rows it holds (``children``), to link, unlink and delete without reading.

Rows without ovnk's ownership keys are never recorded, so they can never be
changed or deleted.  ``load_owned_rows`` builds the store from streamed
``select`` rows (startup, resync); the writer keeps it current from the
transactions it commits.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ovnk_core.ovn.datum import (
    ColumnCodec,
    column_hash,
    fingerprint,
    fingerprint_hashes,
    uuid_int,
)
from ovnk_core.ovn.ownership import (
    DECLARED_REFERENCE_COLUMNS,
    ID_KEY,
    NAME_IDENTIFIED_TABLES,
    OWNER_CONTROLLER_KEY,
    OWNER_KEY,
    UNCLAIMED,
    Owner,
)


class RowRecord:
    """One owned row.

    Links name other rows by uuid, flat, so that they hold no object the garbage
    collector must visit (tuples of ints and strings are untracked): ``referrers`` is
    ``(parent uuid, column, parent uuid, column, ...)`` — the owned rows whose reference
    sets hold this row — and ``children`` is ``(column, child uuid, ...)`` or ``None``.
    One tracked object per row keeps the collector's full passes cheap at 400,000 rows.
    """

    __slots__ = ("children", "fp", "owner", "primary_id", "referrers", "table", "uuid")

    def __init__(self, row_uuid: int, table: str, primary_id: str, owner: Owner,
                 fp: bytes) -> None:
        self.uuid = row_uuid
        self.table = table
        self.primary_id = primary_id
        self.owner = owner
        self.fp = fp
        self.referrers: tuple[int | str, ...] = ()
        self.children: tuple[str | int, ...] | None = None

    def __repr__(self) -> str:
        return f"<{self.table} {self.primary_id}>"

    def is_member(self, parent: RowRecord, column: str) -> bool:
        refs = self.referrers
        return any(refs[i] == parent.uuid and refs[i + 1] == column
                   for i in range(0, len(refs), 2))


def _without_pair(items: Sequence[int | str], first: int | str, second: int | str
                  ) -> tuple[int | str, ...]:
    flat: list[int | str] = []
    for index in range(0, len(items), 2):
        if not (items[index] == first and items[index + 1] == second):
            flat += (items[index], items[index + 1])
    return tuple(flat)


class OwnedRows:
    """The owned rows, found by uuid, by (table, primary id) and by owner."""

    def __init__(self) -> None:
        self.by_uuid: dict[int, RowRecord] = {}
        self.by_id: dict[str, dict[str, RowRecord]] = {}
        self.by_owner: dict[Owner, list[RowRecord]] = {}
        self._owners_of_controller: dict[str, set[Owner]] = {}
        self._owners_of_key: dict[str, set[Owner]] = {}
        self._interned: dict[Owner, Owner] = {}

    def intern(self, owner: Owner) -> Owner:
        """One shared ``Owner`` object per owner (a row keeps a pointer, not a copy)."""
        return self._interned.setdefault(owner, owner)

    def __len__(self) -> int:
        return len(self.by_uuid)

    # -- queries --------------------------------------------------------------------------
    def find(self, table: str, primary_id: str) -> RowRecord | None:
        rows = self.by_id.get(table)
        return rows.get(primary_id) if rows is not None else None

    def rows_of(self, owner: Owner) -> Sequence[RowRecord]:
        return self.by_owner.get(owner, ())

    def holds(self, record: RowRecord) -> bool:
        """Whether ``record`` is still known (not removed)."""
        return self.by_uuid.get(record.uuid) is record

    def parents(self, record: RowRecord) -> Iterator[tuple[RowRecord, str]]:
        """``(parent, column)`` for every owned reference set holding ``record``."""
        refs = record.referrers
        for index in range(0, len(refs), 2):
            parent = self.by_uuid.get(refs[index])  # type: ignore[arg-type]
            if parent is not None:
                yield parent, refs[index + 1]  # type: ignore[misc]

    def owners(self, controller: str | None = None, owner_key: str | None = None
               ) -> set[Owner]:
        """Owners with rows, of one controller and/or one owner key."""
        if controller is None and owner_key is None:
            raise ValueError("owners() needs a controller or an owner key")
        if controller is not None:
            found = set(self._owners_of_controller.get(controller, ()))
            if owner_key is not None:
                found = {owner for owner in found if owner.key == owner_key}
            return found
        return set(self._owners_of_key.get(owner_key or "", ()))

    def controllers(self) -> set[str]:
        return set(self._owners_of_controller)

    def owner_keys(self) -> set[str]:
        return set(self._owners_of_key)

    # -- changes --------------------------------------------------------------------------
    def add(self, record: RowRecord, primary: bool = True) -> None:
        """Record a row; ``primary=False`` for a second row with a known id (a duplicate,
        kept only so that its owner deletes it)."""
        self.by_uuid[record.uuid] = record
        if primary:
            self.by_id.setdefault(record.table, {})[record.primary_id] = record
        self._attach_owner(record)

    def claim(self, table: str, primary_id: str, owner: Owner) -> bool:
        """Give an unclaimed name-identified row to ``owner`` (see ``NbWriter.claim``)."""
        record = self.find(table, primary_id)
        if record is None or record.owner != UNCLAIMED:
            return False
        self.set_owner(record, self.intern(owner))
        return True

    def keep_claims(self, before: OwnedRows) -> None:
        """After NB was read again: name-identified rows (read unclaimed) that ``before``
        knew, as the same row, keep the owner they had there."""
        for table in NAME_IDENTIFIED_TABLES:
            for primary_id, record in self.by_id.get(table, {}).items():
                known = before.find(table, primary_id)
                if known is not None and known.uuid == record.uuid \
                        and record.owner == UNCLAIMED:
                    self.set_owner(record, self.intern(known.owner))

    def set_owner(self, record: RowRecord, owner: Owner) -> None:
        if record.owner == owner:
            return
        self._detach_owner(record)
        record.owner = owner
        self._attach_owner(record)

    def remove(self, record: RowRecord) -> list[RowRecord]:
        """Forget a row and its links; returns the children it held."""
        if self.by_uuid.get(record.uuid) is record:
            del self.by_uuid[record.uuid]
        rows = self.by_id.get(record.table)
        if rows is not None and rows.get(record.primary_id) is record:
            del rows[record.primary_id]
        self._detach_owner(record)
        refs = record.referrers
        for index in range(0, len(refs), 2):
            parent = self.by_uuid.get(refs[index])  # type: ignore[arg-type]
            if parent is not None and parent.children is not None:
                parent.children = _without_pair(parent.children, refs[index + 1],
                                                record.uuid) or None
        record.referrers = ()
        orphans: list[RowRecord] = []
        children = record.children or ()
        for index in range(0, len(children), 2):
            child = self.by_uuid.get(children[index + 1])  # type: ignore[arg-type]
            if child is not None:
                child.referrers = _without_pair(child.referrers, record.uuid, children[index])
                orphans.append(child)
        record.children = None
        return orphans

    def link(self, parent: RowRecord, column: str, child: RowRecord) -> None:
        if child.is_member(parent, column):
            return
        child.referrers = (*child.referrers, parent.uuid, column)
        parent.children = (*(parent.children or ()), column, child.uuid)

    def unlink(self, parent: RowRecord, column: str, child: RowRecord) -> None:
        if parent.children is not None:
            parent.children = _without_pair(parent.children, column, child.uuid) or None
        child.referrers = _without_pair(child.referrers, parent.uuid, column)

    def _attach_owner(self, record: RowRecord) -> None:
        owner = record.owner
        rows = self.by_owner.get(owner)
        if rows is None:
            rows = self.by_owner[owner] = []
            self._owners_of_controller.setdefault(owner.controller, set()).add(owner)
            self._owners_of_key.setdefault(owner.key, set()).add(owner)
        rows.append(record)

    def _detach_owner(self, record: RowRecord) -> None:
        owner = record.owner
        rows = self.by_owner.get(owner)
        if rows is None:
            return
        for index, row in enumerate(rows):
            if row is record:
                del rows[index]
                break
        if rows:
            return
        del self.by_owner[owner]
        self._interned.pop(owner, None)
        for index_map, key in ((self._owners_of_controller, owner.controller),
                               (self._owners_of_key, owner.key)):
            members = index_map.get(key)
            if members is not None:
                members.discard(owner)
                if not members:
                    del index_map[key]


class OwnedRowsLoader:
    """Builds ``OwnedRows`` from the rows of full-table selects, one row at a time.

    Read the tables of children (non-root: ports, routes, NATs) before those of their
    parents: a parent's members are then linked as soon as it is read.
    """

    def __init__(self, codecs: Mapping[str, Mapping[str, ColumnCodec]]) -> None:
        self.codecs = codecs
        self.store = OwnedRows()
        self._pending_links: list[tuple[RowRecord, str, int]] = []
        self.rows_read = 0

    def add_row(self, table: str, row: Mapping[str, Any]) -> None:
        self.rows_read += 1
        codecs = self.codecs[table]
        if table in NAME_IDENTIFIED_TABLES:
            # identified by name; ovnk's once an owner declares that name (``claim``)
            primary_id = str(row.get("name", ""))
            if not primary_id:
                return
            owner = UNCLAIMED
        else:
            external = row.get("external_ids")
            if external is None:
                return
            ext = dict(codecs["external_ids"].from_wire(external))
            primary_id = ext.get(ID_KEY, "")
            controller = ext.get(OWNER_CONTROLLER_KEY)
            if not primary_id or not controller:
                return  # not ovnk's: never recorded, so never touched
            owner = self.store.intern(Owner(controller, ext.get(OWNER_KEY, "")))
        hashes = []
        links = []
        for column, datum in row.items():
            codec = codecs.get(column)
            if codec is None:
                continue  # _uuid, _version
            if codec.is_reference_set and (table, column) not in DECLARED_REFERENCE_COLUMNS:
                members = codec.wire_uuids(datum)
                if members:
                    links.append((column, members))
                continue
            hashes.append(column_hash(column, codec.from_wire(datum)))
        row_uuid = row_uuid_of(row)
        record = RowRecord(row_uuid, table, primary_id, owner, fingerprint(hashes))
        primary = self.store.find(table, primary_id) is None
        self.store.add(record, primary=primary)
        for column, members in links:
            for member in members:
                child = self.store.by_uuid.get(member)
                if child is not None:
                    self.store.link(record, column, child)
                else:  # read later (or not ovnk's)
                    self._pending_links.append((record, column, member))

    def finish(self) -> OwnedRows:
        """Resolve links between owned rows (a parent may be read before its children)."""
        for parent, column, member in self._pending_links:
            child = self.store.by_uuid.get(member)
            if child is not None:
                self.store.link(parent, column, child)
        self._pending_links = []
        return self.store


def row_uuid_of(row: Mapping[str, Any]) -> int:
    return uuid_int(row["_uuid"][1])


def changed_owners(old: OwnedRows, new: OwnedRows) -> set[Owner]:
    """Owners whose rows differ between two views of NB: rows added, gone, replaced,
    a remembered column value changed, or a link changed."""
    changed: set[Owner] = set()
    for owner in set(old.by_owner) | set(new.by_owner):
        before = {(r.table, r.primary_id): r for r in old.rows_of(owner)}
        after = {(r.table, r.primary_id): r for r in new.rows_of(owner)}
        if before.keys() != after.keys() or len(before) != len(old.rows_of(owner)) \
                or len(after) != len(new.rows_of(owner)):
            changed.add(owner)
            continue
        for key, was in before.items():
            now = after[key]
            if was.uuid != now.uuid or not fingerprint_hashes(was.fp) <= \
                    fingerprint_hashes(now.fp) or _links(was) != _links(now):
                changed.add(owner)
                break
    return changed


def _links(record: RowRecord) -> set[tuple[int | str, int | str]]:
    refs = record.referrers
    return {(refs[i], refs[i + 1]) for i in range(0, len(refs), 2)}


def strong_referrers(store: OwnedRows, record: RowRecord,
                     codecs: Mapping[str, Mapping[str, ColumnCodec]]) -> Iterable[RowRecord]:
    return (parent for parent, column in store.parents(record)
            if codecs[parent.table][column].is_strong)
