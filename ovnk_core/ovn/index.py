"""In-memory indexes over the IDL's rows, kept current by IDL notifications.

Two questions come up on every reconcile and must not cost a table scan:
"which rows carry ``k8s.ovn.org/<key>=<value>``" (owned rows of one owner,
one network, one primary id) and "which rows reference this row" (to unlink
a child from its parents before deleting it).  ``IndexedIdl.notify`` runs in
the IDL thread for every row created, updated or deleted — including the
full re-dump after a reconnect, when the IDL first clears its tables — so
the indexes are always those of the IDL's current view.

The ovs ``custom_index`` on a map-column key is deliberately not used: it
keeps references to dicts that ovsdbapp mutates in place and corrupts.
"""

from __future__ import annotations

import threading
import uuid
from collections import defaultdict
from typing import Any

from ovs.db import idl as ovs_idl
from ovsdbapp.backend.ovs_idl import connection

from ovnk_core.ovn.ownership import INDEXED_KEYS, OWNER_CONTROLLER_KEY, OWNER_KEY

RowKey = tuple[str, uuid.UUID]  # (table, row uuid)
# A synthetic key: (owner-controller, owner) together, so the rows of one owner are one
# lookup, not the intersection of two sets that grow with the number of networks and nodes.
OWNER_SCOPE_KEY = "\0owner-scope"


def owner_scope(controller: str, owner: str) -> str:
    return f"{controller}\0{owner}"


class ExternalIdsIndex:
    """(key, value) → {(table, uuid)} for the keys in ``INDEXED_KEYS``."""

    def __init__(self) -> None:
        self._by_pair: dict[tuple[str, str], set[RowKey]] = defaultdict(set)
        self._pairs_of: dict[RowKey, list[tuple[str, str]]] = {}

    def clear(self) -> None:
        self._by_pair.clear()
        self._pairs_of.clear()

    def update(self, table: str, row_uuid: uuid.UUID, external_ids: dict[str, str]) -> None:
        self.remove(table, row_uuid)
        pairs = [(key, external_ids[key]) for key in INDEXED_KEYS if key in external_ids]
        if OWNER_CONTROLLER_KEY in external_ids and OWNER_KEY in external_ids:
            pairs.append((OWNER_SCOPE_KEY, owner_scope(external_ids[OWNER_CONTROLLER_KEY],
                                                       external_ids[OWNER_KEY])))
        if not pairs:
            return
        row_key = (table, row_uuid)
        self._pairs_of[row_key] = pairs
        for pair in pairs:
            self._by_pair[pair].add(row_key)

    def remove(self, table: str, row_uuid: uuid.UUID) -> None:
        row_key = (table, row_uuid)
        for pair in self._pairs_of.pop(row_key, ()):
            members = self._by_pair.get(pair)
            if members is not None:
                members.discard(row_key)
                if not members:
                    del self._by_pair[pair]

    def find(self, key: str, value: str) -> set[RowKey]:
        return set(self._by_pair.get((key, value), ()))

    def values(self, key: str) -> set[str]:
        """Every value ``key`` has on some row."""
        return {value for (pair_key, value) in self._by_pair if pair_key == key}


class BackrefIndex:
    """child uuid → {(parent table, parent uuid, column)} over reference columns."""

    def __init__(self) -> None:
        self._referrers: dict[uuid.UUID, set[tuple[str, uuid.UUID, str]]] = defaultdict(set)
        self._refs_of: dict[tuple[str, uuid.UUID, str], set[uuid.UUID]] = {}

    def clear(self) -> None:
        self._referrers.clear()
        self._refs_of.clear()

    def set_refs(self, table: str, row_uuid: uuid.UUID, column: str,
                 targets: set[uuid.UUID]) -> None:
        slot = (table, row_uuid, column)
        old = self._refs_of.get(slot, set())
        for gone in old - targets:
            members = self._referrers.get(gone)
            if members is not None:
                members.discard(slot)
                if not members:
                    del self._referrers[gone]
        for new in targets - old:
            self._referrers[new].add(slot)
        if targets:
            self._refs_of[slot] = set(targets)
        else:
            self._refs_of.pop(slot, None)

    def referrers(self, target: uuid.UUID) -> set[tuple[str, uuid.UUID, str]]:
        return set(self._referrers.get(target, ()))


def _ref_columns(table: Any) -> list[str]:
    columns = []
    for name, column in table.columns.items():
        ctype = column.type
        if ctype.key.ref_table_name or (ctype.value is not None and ctype.value.ref_table_name):
            columns.append(name)
    return columns


def _datum_uuids(datum: Any) -> set[uuid.UUID]:
    found: set[uuid.UUID] = set()
    if datum is None:
        return found
    for key, value in datum.values.items():
        for atom in (key, value):
            if atom is not None and isinstance(getattr(atom, "value", None), uuid.UUID):
                found.add(atom.value)
    return found


class IndexedIdl(connection.OvsdbIdl):  # type: ignore[misc]
    """An ``OvsdbIdl`` that maintains ``ExternalIdsIndex`` and ``BackrefIndex``."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.ids_index = ExternalIdsIndex()
        self.backrefs = BackrefIndex()
        self.index_lock = threading.RLock()
        self._ref_columns: dict[str, list[str]] = {}
        super().__init__(*args, **kwargs)

    def notify(self, event: str, row: Any, updates: Any = None) -> None:
        table = row._table
        name = table.name
        with self.index_lock:
            if event == ovs_idl.ROW_DELETE:
                self.ids_index.remove(name, row.uuid)
                for column in self._columns_with_refs(table):
                    self.backrefs.set_refs(name, row.uuid, column, set())
                return
            changed = None if event == ovs_idl.ROW_CREATE else set(
                getattr(updates, "_data", {}) or {})
            if "external_ids" in table.columns and (changed is None or "external_ids" in changed):
                self.ids_index.update(name, row.uuid, dict(row.external_ids))
            for column in self._columns_with_refs(table):
                if changed is None or column in changed:
                    self.backrefs.set_refs(name, row.uuid, column,
                                           _datum_uuids(row._data.get(column)))
        super().notify(event, row, updates)

    def _columns_with_refs(self, table: Any) -> list[str]:
        columns = self._ref_columns.get(table.name)
        if columns is None:
            columns = self._ref_columns[table.name] = _ref_columns(table)
        return columns

    def _Idl__clear(self) -> None:  # the IDL's private "forget everything" before a re-dump
        with self.index_lock:
            self.ids_index.clear()
            self.backrefs.clear()
        super()._Idl__clear()  # type: ignore[misc]
