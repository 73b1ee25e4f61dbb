"""The OVN Northbound reader: a live, indexed copy of NB for CLIs and tests.

``ovnk show network``, ``ovnk reachability`` and the tests read NB through
the ovsdbapp IDL, which keeps every row decoded and up to date.  The zone
controller does not: it writes through ``writer.NbWriter``, which keeps only
compact records of its own rows.  This wraps ovsdbapp so that the library's
sharp edges cannot cut callers:

* each client gets its own API class, because ovsdbapp keeps the connection
  in a class attribute and would silently reuse the first one;
* every transaction raises on error (ovsdbapp defaults to logging only) and
  is never merged into an enclosing one behind the caller's back;
* the IDL keeps ownership and back-reference indexes (``index.IndexedIdl``),
  so lookups by ``k8s.ovn.org/*`` keys never scan a table;
* several remotes (a RAFT cluster) are joined into one IDL remote, and
  ``leader_only`` keeps writes on the leader; when a server goes away the
  IDL reconnects by itself and re-reads the whole database, and the indexes
  follow.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ovs.db import idl as ovs_idl
from ovsdbapp.backend.ovs_idl import connection, idlutils
from ovsdbapp.schema.ovn_northbound import impl_idl

from ovnk_core.errors import OvnkError, OvnTransactionError
from ovnk_core.ovn.index import OWNER_SCOPE_KEY, IndexedIdl, owner_scope
from ovnk_core.ovn.ownership import (
    ID_KEY,
    INDEXED_KEYS,
    OWNER_CONTROLLER_KEY,
    OWNER_KEY,
    Owner,
    owner_of,
)

log = logging.getLogger(__name__)

NB_SCHEMA_NAME = "OVN_Northbound"


def _as_uuid(value: uuid.UUID, _base: Any = None) -> uuid.UUID:
    return value


def committed_value(row: Any, column: str) -> Any:
    """A column's committed value (references as UUIDs), read without touching the row's
    pending changes; ``None`` for no row, or one a transaction is still inserting (other
    threads must not read its columns yet)."""
    data = getattr(row, "_data", None) if row is not None else None
    if not data or column not in data:
        return None
    return data[column].to_python(_as_uuid)


def committed_external_ids(row: Any) -> dict[str, str] | None:
    """A row's committed external_ids (see ``committed_value``)."""
    value: dict[str, str] | None = committed_value(row, "external_ids")
    return value


def stable_rows(rows: Any) -> list[Any]:
    """The rows of an IDL table's row mapping, copied in one step.

    The IDL keeps its rows in ``IndexedRows``, a mapping whose iteration is Python code, so
    another thread applying an update can change it mid-iteration.  Its backing ``data``
    is a plain dict of row lists; ``list(dict.values())`` copies that without running any
    Python code, so no other thread runs in between.
    """
    data = getattr(rows, "data", None)
    if not isinstance(data, dict):
        return list(rows.values())
    return [entries[-1] for entries in list(data.values()) if entries]


class NbConnectError(OvnkError):
    """The Northbound database could not be reached within the timeout."""


class NbConnectionLost(NbConnectError, OvnTransactionError):
    """The connection to Northbound broke during a transaction (which may or may not have
    committed: the writer reads NB again before its next one)."""


class NbClient:
    """A connected Northbound client.

    :param remotes: OVSDB remotes (``unix:PATH``, ``tcp:HOST:PORT``); several = RAFT members.
    :param timeout: seconds one transaction may take (including server retries).
    :param leader_only: with a RAFT cluster, talk only to the leader.
    """

    def __init__(self, remotes: Sequence[str], timeout: float = 60.0,
                 leader_only: bool = True) -> None:
        if not remotes:
            raise NbConnectError("no Northbound remote given")
        self.remotes = tuple(remotes)
        self.timeout = timeout
        self.leader_only = leader_only
        self._conn: connection.Connection | None = None
        self._api: Any = None

    @property
    def remote(self) -> str:
        return ",".join(self.remotes)

    def start(self, connect_timeout: float = 30.0) -> NbClient:
        """Connect and wait for the initial copy of the database."""
        deadline = time.monotonic() + connect_timeout
        last_error: Exception | None = None
        while True:
            try:
                helper = idlutils.get_schema_helper(self.remote, NB_SCHEMA_NAME)
                break
            except Exception as exc:  # ovsdbapp raises several types here
                last_error = exc
                if time.monotonic() >= deadline:
                    raise NbConnectError(
                        f"cannot reach OVN Northbound at {self.remote}: {last_error}"
                    ) from None
                time.sleep(0.2)
        helper.register_all()
        idl = IndexedIdl(self.remote, helper, leader_only=self.leader_only)
        conn = connection.Connection(idl=idl, timeout=self.timeout)
        api_class = type("OvnkNbApi", (impl_idl.OvnNbApiIdlImpl,), {"_ovsdb_connection": None})
        try:
            self._api = api_class(conn)
        except Exception as exc:
            raise NbConnectError(
                f"cannot load OVN Northbound from {self.remote}: {exc}") from None
        self._conn = conn
        log.info("connected to OVN Northbound at %s", self.remote)
        return self

    def stop(self) -> None:
        if self._conn is not None:
            self._conn.stop()
            self._conn = None
            self._api = None

    def __enter__(self) -> NbClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def api(self) -> Any:
        """The ovsdbapp NB API (for commands the declarative layer does not cover)."""
        if self._api is None:
            raise NbConnectError("Northbound client is not started")
        return self._api

    @property
    def idl(self) -> IndexedIdl:
        idl: IndexedIdl = self.api.idl
        return idl

    @property
    def connected(self) -> bool:
        return bool(self.idl._session.is_connected())

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One atomic transaction; raises ``OvnTransactionError`` when it fails."""
        try:
            with self.api.transaction(check_error=True, log_errors=False, nested=False) as txn:
                yield txn
        except OvnkError:
            raise
        except Exception as exc:
            raise OvnTransactionError(f"OVN Northbound transaction failed: {exc}") from exc

    def execute(self, command: Any) -> Any:
        with self.transaction() as txn:
            txn.add(command)
        return command.result

    def rows(self, table: str) -> dict[uuid.UUID, Any]:
        """The IDL's live rows of ``table`` (read-only use, from any thread)."""
        rows: dict[uuid.UUID, Any] = self.idl.tables[table].rows
        return rows

    def row_list(self, table: str) -> list[Any]:
        """Every row of ``table``, copied at once: safe to iterate while the IDL thread
        applies updates (iterating ``rows()`` itself can fail with "dictionary changed size
        during iteration")."""
        return stable_rows(self.idl.tables[table].rows)

    def find_owned(self, table: str, **ids: str) -> list[Any]:
        """Rows of ``table`` whose external_ids contain every given ``k8s.ovn.org`` pair.

        Keyword names are the key without prefix, ``-`` as ``_``
        (``owner_controller="default-network-controller", network="blue"``).
        At least one indexed key (id, owner-controller, owner, network) must be given.
        """
        pairs = {"k8s.ovn.org/" + key.replace("_", "-"): value for key, value in ids.items()}
        idl = self.idl
        with idl.index_lock:
            candidates: set[tuple[str, uuid.UUID]] | None = None
            for key, value in pairs.items():
                found = idl.ids_index.find(key, value) if key in INDEXED_KEYS else None
                if found is not None:
                    candidates = found if candidates is None else candidates & found
            if candidates is None:
                raise ValueError(f"find_owned needs one of the indexed keys {INDEXED_KEYS}")
        table_rows = idl.tables[table].rows
        result = []
        for row_table, row_uuid in candidates:
            row = table_rows.get(row_uuid) if row_table == table else None
            ext = committed_external_ids(row)
            if ext is not None and all(ext.get(k) == v for k, v in pairs.items()):
                result.append(row)
        return result

    def owner_controllers(self) -> set[str]:
        """Every ``k8s.ovn.org/owner-controller`` found on a row of NB."""
        with self.idl.index_lock:
            return self.idl.ids_index.values(OWNER_CONTROLLER_KEY)

    def owners(self, controller: str | None = None, owner_key: str | None = None
               ) -> set[Owner]:
        """The owners with rows in NB, optionally only of one controller and/or owner key."""
        if controller is None and owner_key is None:
            raise ValueError("owners() needs a controller or an owner key")
        idl = self.idl
        with idl.index_lock:
            if controller is not None and owner_key is not None:
                keys = idl.ids_index.find(OWNER_SCOPE_KEY, owner_scope(controller, owner_key))
            elif controller is not None:
                keys = idl.ids_index.find(OWNER_CONTROLLER_KEY, controller)
            else:
                keys = idl.ids_index.find(OWNER_KEY, owner_key or "")
        result = set()
        for table, row_uuid in keys:
            ext = committed_external_ids(idl.tables[table].rows.get(row_uuid))
            owner = owner_of(ext) if ext is not None else None
            if owner is not None:
                result.add(owner)
        return result

    def find_by_id(self, table: str, primary_id: str) -> Any | None:
        rows = self.find_owned(table, id=primary_id)
        return rows[0] if rows else None

    def wait_connected(self, timeout: float = 30.0) -> None:
        """Block until the IDL is connected and has a full copy of the database."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            idl = self.idl
            if idl._session.is_connected() and idl.state == ovs_idl.Idl.IDL_S_MONITORING:
                return
            time.sleep(0.02)
        raise NbConnectError(f"OVN Northbound at {self.remote} not connected after {timeout}s")


__all__ = ["ID_KEY", "NbClient", "NbConnectError", "NbConnectionLost"]
