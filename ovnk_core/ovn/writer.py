"""The zone controller's Northbound writer: write-through, with no monitor.

The ovsdbapp IDL (``nb.NbClient``) keeps a full decoded copy of NB and
decodes every update the server sends back, including the echo of each of
its own writes; at 40,000 rows that costs about 19 KB and tens of
microseconds per row (bench/README.md).  The zone controller only writes its
own rows, so this writer instead:

* reads NB fully at start (``resync``): every table with ``external_ids``, in
  one transaction, streamed row by row, keeping only ovnk-owned rows as
  compact records (``owned_rows``);
* turns each ``apply`` into one raw ``transact`` (``txn_plan``) and, when it
  commits, remembers what it wrote — the server's echo is never asked for;
* notices another writer's hand when a row it knew is gone (an ``update``,
  ``mutate`` or ``delete`` that matched nothing), or when a reply was lost,
  and then reads NB again before the next attempt (once per ``apply``,
  which is retried);
* reconnects by itself (any remote; with ``leader_only`` only to a RAFT
  leader) and reads NB again after a connection broke during a request;
* says whether NB can be written now (``check``: a round trip when idle), which
  is the zone controller's readiness; a failed request says the same
  (``NbConnectError``, ``NbConnectionLost`` when it broke mid-way).

Changes made to owned rows by someone else that do not make a write miss
(a column edited by hand) are repaired by a periodic ``resync``: it returns
the owners whose rows differ from what the writer remembered, and the zone
controller reconciles them again.

Two locks: one transaction (or full read) at a time holds the write lock for
its whole round trip; the remembered rows have a lock of their own, held only
while a plan is computed or a reply is folded in.  Reads (``owners``,
``find``, ``holds``) never wait for a round trip: they see NB as of the last
committed transaction.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ovs.db import schema as ovs_schema

from ovnk_core.errors import OvnTransactionError
from ovnk_core.ovn.capabilities import NbCapabilities, of_schema
from ovnk_core.ovn.datum import (
    ColumnCodec,
    Unresolved,
    canonical_columns,
    codecs_of,
    fingerprint_hashes,
)
from ovnk_core.ovn.declarative import ApplyResult, DesiredRow
from ovnk_core.ovn.jsonrpc import OvsdbConnection, OvsdbConnectionError, OvsdbRequestError
from ovnk_core.ovn.nb import NB_SCHEMA_NAME, NbConnectError, NbConnectionLost
from ovnk_core.ovn.owned_rows import OwnedRows, OwnedRowsLoader, RowRecord, changed_owners
from ovnk_core.ovn.ownership import NAME_IDENTIFIED_TABLES, Owner
from ovnk_core.ovn.txn_plan import StaleRows, plan_apply

log = logging.getLogger(__name__)

# After a failed write that a stale view could explain, NB is read again at most this often.
SUSPECT_RESYNC_INTERVAL = 30.0


class NbWriter:
    """A write-through Northbound writer for ovnk-owned rows.

    :param remotes: OVSDB remotes (``unix:PATH``, ``tcp:HOST:PORT``); several = RAFT members.
    :param timeout: seconds one request (a transaction, a full read) may take.
    :param leader_only: with a RAFT cluster, connect only to the leader.
    """

    def __init__(self, remotes: Sequence[str], timeout: float = 60.0,
                 leader_only: bool = True) -> None:
        if not remotes:
            raise NbConnectError("no Northbound remote given")
        self.remotes = tuple(remotes)
        self.timeout = timeout
        self.leader_only = leader_only
        self.transactions = 0  # transactions that changed the database
        self.resyncs = 0  # full reads of NB
        self._lock = threading.RLock()  # one request to the server at a time
        self._store_lock = threading.Lock()  # the remembered rows; never across a round trip
        self._conn: OvsdbConnection | None = None
        self._schema: Any = None
        self._schema_document: dict[str, Any] = {}
        self._codecs: dict[str, dict[str, ColumnCodec]] = {}
        self._non_root: frozenset[str] = frozenset()
        self._owned_tables: list[str] = []
        self._store = OwnedRows()
        self._stale = True
        self._last_resync = 0.0
        self._problem: str | None = None  # why NB could not be used last time; None: it could
        # Told which owners' rows another writer changed, after every read of NB but the
        # first (called with the write lock held: it must only enqueue work).
        self.on_drift: Callable[[set[Owner]], None] | None = None
        # Told when NB's schema, read again on each new connection, supports other things
        # than before (OVN upgraded or downgraded under a running writer: ``capabilities``);
        # called with the write lock held: it must only enqueue work.
        self.on_capabilities_changed: Callable[[NbCapabilities], None] | None = None
        self._reload_schema = False  # a new connection: the server may run another OVN

    @property
    def remote(self) -> str:
        return ",".join(self.remotes)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self, connect_timeout: float = 30.0) -> NbWriter:
        """Connect, load the schema and read the owned rows."""
        deadline = time.monotonic() + connect_timeout
        while True:
            try:
                with self._lock:
                    self._load_schema()
                    self._resync_locked()
                break
            except NbConnectError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)
        log.info("Northbound writer connected to %s (%d owned rows)", self.remote,
                 len(self._store))
        return self

    def stop(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> NbWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def schema(self) -> Any:
        if self._schema is None:
            raise NbConnectError("Northbound writer is not started")
        return self._schema

    # -- connection ----------------------------------------------------------------------
    @property
    def problem(self) -> str | None:
        """Why the last request could not reach NB (``None``: it could)."""
        return self._problem

    def check(self, timeout: float = 5.0, wait: float = 0.5) -> str | None:
        """Whether NB can be written now: ``None``, or why not.

        When no request is in flight (else its outcome answers, within ``wait``
        seconds), connects if need be, reads NB again when the view is suspect (after
        the connection broke), else makes one round trip of at most ``timeout`` seconds.
        A connection seen broken here makes the next request read NB first.
        """
        if not self._lock.acquire(timeout=wait):
            return self._problem
        try:
            if self._stale or self._schema is None:
                self._load_schema()
                self._resync_locked()
            else:
                try:
                    self._connection().echo(timeout)
                except (OvsdbConnectionError, OvsdbRequestError) as exc:
                    self._stale = True
                    raise NbConnectError(f"cannot reach OVN Northbound at {self.remote}: "
                                         f"{exc}") from None
            self._problem = None
        except NbConnectError as exc:
            self._problem = str(exc)
        finally:
            self._lock.release()
        return self._problem

    def _connection(self) -> OvsdbConnection:
        if self._conn is not None and not self._conn.closed:
            return self._conn
        errors = []
        for remote in self.remotes:
            try:
                conn = OvsdbConnection(remote, self.timeout)
            except OvsdbConnectionError as exc:
                errors.append(str(exc))
                continue
            try:
                if self.leader_only and len(self.remotes) > 1 \
                        and not conn.is_leader(NB_SCHEMA_NAME):
                    conn.close()
                    errors.append(f"{remote}: not the leader")
                    continue
            except (OvsdbConnectionError, OvsdbRequestError) as exc:
                conn.close()
                errors.append(str(exc))
                continue
            self._conn = conn
            self._reload_schema = self._schema is not None
            return conn
        self._problem = f"cannot reach OVN Northbound at {self.remote}: " + "; ".join(errors)
        raise NbConnectError(self._problem)

    def _transact(self, ops: list[dict[str, Any]]) -> list[Any]:
        """One write transaction; a broken connection makes the store suspect (the
        transaction may or may not have committed)."""
        try:
            replies = self._connection().transact(NB_SCHEMA_NAME, ops)
        except OvsdbConnectionError as exc:
            self._stale = True
            self._problem = f"OVN Northbound: {exc}"
            raise NbConnectionLost(self._problem) from None
        except OvsdbRequestError as exc:
            raise OvnTransactionError(f"OVN Northbound: {exc}") from None
        self._problem = None
        return replies

    def _suspect(self) -> None:
        """Read NB again before the next write, unless it was read very recently (a conflict
        with a foreign row would otherwise cost a full read on every retry)."""
        if time.monotonic() - self._last_resync >= SUSPECT_RESYNC_INTERVAL:
            self._stale = True

    @property
    def capabilities(self) -> NbCapabilities:
        """What the NB this writer is connected to supports (``ovn.capabilities``)."""
        return of_schema(self.schema)

    def _load_schema(self) -> None:
        """Read NB's schema once connected, and again on each new connection (the server
        may have been replaced by another OVN's): a schema that differs replaces the old
        one, and ``on_capabilities_changed`` hears of a change in what it supports."""
        connection = self._connection()  # a new connection asks for the schema again
        if self._schema is not None and not self._reload_schema:
            return
        try:
            document = connection.get_schema(NB_SCHEMA_NAME)
        except (OvsdbConnectionError, OvsdbRequestError) as exc:
            raise NbConnectError(f"cannot load the schema of {self.remote}: {exc}") from None
        self._reload_schema = False
        before = self._schema
        if before is not None and document == self._schema_document:
            return
        self._schema_document = document
        schema = ovs_schema.DbSchema.from_json(document)
        self._schema = schema
        self._codecs = codecs_of(schema)
        self._non_root = frozenset(name for name, table in schema.tables.items()
                                   if not table.is_root)
        # Children (non-root tables) first: the loader links parents to them as it reads.
        self._owned_tables = sorted((name for name, table in schema.tables.items()
                                     if "external_ids" in table.columns
                                     or name in NAME_IDENTIFIED_TABLES),
                                    key=lambda name: (name not in self._non_root, name))
        self._stale = True  # rows are read again with the new schema's codecs
        if before is not None:
            old_caps, new_caps = of_schema(before), of_schema(schema)
            log.warning("OVN Northbound at %s now has schema %s (was %s)", self.remote,
                        schema.version, before.version)
            if old_caps != new_caps and self.on_capabilities_changed is not None:
                log.warning("OVN Northbound supports other things now: %s",
                            new_caps.describe())
                self.on_capabilities_changed(new_caps)

    # -- reads -----------------------------------------------------------------------------
    def resync(self) -> set[Owner]:
        """Read every owned row again; returns the owners whose rows changed behind our back."""
        with self._lock:
            return self._resync_locked()

    def _resync_locked(self) -> set[Owner]:
        self._load_schema()  # first: a new connection may lead to another OVN's NB
        loader = OwnedRowsLoader(self._codecs)
        tables = self._owned_tables
        ops = [{"op": "select", "table": table, "where": []} for table in tables]
        started = time.monotonic()
        try:
            replies = self._connection().transact(
                NB_SCHEMA_NAME, ops, on_row=lambda index, row: loader.add_row(tables[index], row))
        except OvsdbConnectionError as exc:
            self._stale = True
            self._problem = f"cannot read OVN Northbound at {self.remote}: {exc}"
            raise NbConnectError(self._problem) from None
        except OvsdbRequestError as exc:
            raise NbConnectError(f"cannot read OVN Northbound at {self.remote}: {exc}") from None
        errors = [r for r in replies if isinstance(r, dict) and r.get("error")]
        if errors:
            raise NbConnectError(f"cannot read OVN Northbound at {self.remote}: {errors[0]}")
        store = loader.finish()
        first = self.resyncs == 0
        with self._store_lock:
            store.keep_claims(self._store)
            changed = set() if first else changed_owners(self._store, store)
            self._store = store
        self._stale = False
        self._problem = None
        self._last_resync = time.monotonic()
        self.resyncs += 1
        log.log(logging.DEBUG if first else logging.INFO,
                "read OVN Northbound: %d rows, %d owned, %d owner(s) changed (%.2fs)",
                loader.rows_read, len(store), len(changed), time.monotonic() - started)
        if changed and self.on_drift is not None:
            self.on_drift(changed)
        return changed

    def owners(self, controller: str | None = None, owner_key: str | None = None
               ) -> set[Owner]:
        """The owners with rows in NB, of one controller and/or one owner key."""
        with self._store_lock:
            return self._store.owners(controller, owner_key)

    def owners_with_key_prefix(self, prefix: str) -> set[Owner]:
        """The owners with rows in NB whose owner key starts with ``prefix`` (goes through
        every owner key: for startup, not for per-event work)."""
        with self._store_lock:
            return {owner for key in self._store.owner_keys() if key.startswith(prefix)
                    for owner in self._store.owners(owner_key=key)}

    def owner_controllers(self) -> set[str]:
        """Every ``k8s.ovn.org/owner-controller`` of an owned row."""
        with self._store_lock:
            return self._store.controllers()

    def owner_keys(self) -> set[str]:
        """Every ``k8s.ovn.org/owner`` of an owned row."""
        with self._store_lock:
            return self._store.owner_keys()

    def find(self, table: str, primary_id: str) -> RowRecord | None:
        with self._store_lock:
            return self._store.find(table, primary_id)

    def claim(self, table: str, primary_id: str, owner: Owner) -> bool:
        """Make ``owner`` the owner of a row of a ``NAME_IDENTIFIED_TABLES`` table that no
        owner has declared since NB was read (so that deleting ``owner`` deletes it: the
        rows of a network removed while the controller was down).  False: no such row, or
        it has an owner."""
        with self._store_lock:
            return self._store.claim(table, primary_id, owner)

    def holds(self, rows: Sequence[DesiredRow]) -> bool:
        """Whether NB has every one of ``rows`` (by primary id) with every declared column
        (``external_ids`` included) as declared, as far as this writer knows; links are not
        compared.  A row whose references name rows NB lacks is not held."""
        with self._store_lock:
            store = self._store

            def resolve(ref: Any) -> int:
                target = store.find(ref.table, ref.primary_id)
                if target is None:
                    raise Unresolved(ref)
                return target.uuid

            for row in rows:
                record = store.find(row.table, row.ids.primary_id)
                if record is None:
                    return False
                have = fingerprint_hashes(record.fp)
                values = row.declared_columns()
                try:
                    if not set(canonical_columns(self._codecs[row.table], values, resolve)) \
                            <= have:
                        return False
                except Unresolved:
                    return False
            return True

    def owned_row_count(self) -> int:
        with self._store_lock:
            return len(self._store)

    # -- writes ----------------------------------------------------------------------------
    def apply_many(self, desired: Mapping[Owner, Sequence[DesiredRow]]) -> ApplyResult:
        """Converge the owners in ``desired`` in one transaction (see ``declarative``).

        Rows are validated by ``declarative.apply_many``; call that.
        """
        with self._lock:
            for attempt in (1, 2):
                if self._stale:
                    self._resync_locked()
                with self._store_lock:
                    plan = plan_apply(self._store, self._codecs, self._non_root, desired)
                    if not plan.ops:
                        plan.commit([])  # nothing to write; rows adopted as they are
                        return plan.result
                replies = self._transact(plan.ops)  # readers go on meanwhile
                try:
                    with self._store_lock:
                        plan.commit(replies)
                except StaleRows as exc:
                    self._stale = True
                    self.transactions += 1
                    if attempt == 2:
                        raise
                    log.warning("%s", exc)
                    continue
                except OvnTransactionError as exc:
                    if "referential integrity" in str(exc) or "constraint violation" in str(exc):
                        self._suspect()  # a row we knew may be gone, or one we did not know
                    raise
                self.transactions += 1
                return plan.result
        raise AssertionError("unreachable")
