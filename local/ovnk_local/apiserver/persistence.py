"""Optional file-backed state, so a restarted local cluster keeps its objects.

Two files, as a database keeps them: a **snapshot** (``path``: every object and the
resourceVersion counter, one JSON document) and a **journal** beside it (``path`` +
``.journal``: one JSON line per write since that snapshot).  Each write is encoded when it
happens; a background thread appends what accumulated to the journal at most every
``interval`` seconds (flushed to disk), so the cost of keeping state grows with the writes,
not with the size of the cluster.  When the journal outgrows the snapshot (or on ``stop()``)
the snapshot is rewritten atomically (temporary file, fsync, rename) and the journal
emptied.  Reading replays the journal's lines newer than the snapshot; a last line cut short
by a crash is left out.  The resourceVersion counter survives, so versions keep increasing
across restarts; the event history does not, so watches from before a restart get 410.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

from ovnk_core import jsondepth
from ovnk_core.atomic_file import replace_file
from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.store import DELETED, Event, Store

log = logging.getLogger(__name__)

# the journal is folded into the snapshot once it is larger than this or the snapshot
MIN_COMPACT_BYTES = 1 << 20


def journal_path(path: Path) -> Path:
    return path.with_name(path.name + ".journal")


def journal_line(event: Event) -> str:
    """One write as a journal line: the object stored, or for a deletion its key."""
    record: JSON = {"rv": event.rv, "storage": event.storage, "type": event.type}
    if event.type == DELETED:
        meta = event.obj.get("metadata") or {}
        record["namespace"] = meta.get("namespace") or ""
        record["name"] = meta.get("name") or ""
    else:
        record["object"] = event.obj
    return json.dumps(record, separators=(",", ":")) + "\n"


def _replay(data: JSON, journal: Path) -> int:
    """Apply the journal's writes newer than ``data``'s resourceVersion to ``data``;
    returns how many were applied."""
    rv = int(data.get("resourceVersion") or 0)
    objects: dict[str, dict[tuple[str, str], JSON]] = {
        storage: {(str(o["metadata"].get("namespace") or ""), str(o["metadata"]["name"])): o
                  for o in items}
        for storage, items in (data.get("objects") or {}).items()}
    applied = 0
    with journal.open() as lines:
        for number, line in enumerate(lines, 1):
            try:
                record = jsondepth.loads(line)
                record_rv, storage = int(record["rv"]), str(record["storage"])
            except (ValueError, KeyError, TypeError) as exc:
                # a line cut short by a crash ends the journal; anything after it is lost
                log.warning("journal %s: line %d unreadable (%s): replay stops there",
                            journal, number, exc)
                break
            if record_rv <= rv:
                continue
            items = objects.setdefault(storage, {})
            if record["type"] == DELETED:
                items.pop((str(record.get("namespace") or ""), str(record.get("name"))), None)
            else:
                obj = record["object"]
                meta = obj["metadata"]
                items[(str(meta.get("namespace") or ""), str(meta["name"]))] = obj
            rv = record_rv
            applied += 1
    data["objects"] = {storage: list(items.values()) for storage, items in objects.items()
                       if items}
    data["resourceVersion"] = rv
    return applied


def read_snapshot(path: Path) -> JSON | None:
    """The state kept at ``path`` (its snapshot and journal), or ``None`` when there is none.

    :raises ValueError: the snapshot is not one this server can read (not JSON, or nested
        deeper than any object it stores could make it), naming the file.
    """
    journal = journal_path(path)
    if not path.exists() and not journal.exists():
        return None
    data: JSON = {"resourceVersion": 0, "objects": {}}
    if path.exists():
        try:
            data = jsondepth.loads(path.read_text())
        except ValueError as exc:
            raise ValueError(f"cannot read the snapshot {path}: {exc}") from None
    replayed = _replay(data, journal) if journal.exists() else 0
    log.info("loaded %d objects at resourceVersion %s from %s (%d journal write(s))",
             sum(len(v) for v in (data.get("objects") or {}).values()),
             data.get("resourceVersion"), path, replayed)
    return data


class Persistence:
    """Journals ``store``'s writes beside ``path`` (coalesced every ``interval``) and folds
    them into the snapshot at ``path`` when the journal grows large and on ``stop``."""

    def __init__(self, store: Store, path: Path, interval: float = 0.2,
                 min_compact_bytes: int = MIN_COMPACT_BYTES) -> None:
        self.store = store
        self.path = path
        self.journal = journal_path(path)
        self.interval = interval
        self.min_compact_bytes = min_compact_bytes
        self.compactions = 0
        self._pending: list[str] = []
        self._pending_lock = threading.Lock()
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._write_lock = threading.Lock()
        self._snapshot_bytes = path.stat().st_size if path.exists() else 0
        self._journal_bytes = self.journal.stat().st_size if self.journal.exists() else 0
        self._thread = threading.Thread(target=self._run, name="apiserver-persistence",
                                        daemon=True)

    def start(self) -> None:
        """Watch the store for writes and start the writer thread."""
        self.store.listeners.append(self._on_event)
        self._thread.start()

    def _on_event(self, event: Event) -> None:
        line = journal_line(event)  # encoded now: the stored object is this version
        with self._pending_lock:
            self._pending.append(line)
        self._dirty.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait()
            if self._stopping.is_set():
                break
            self._stopping.wait(self.interval)
            try:
                self.sync()
            except OSError as exc:  # the next write tries again; nothing is dropped
                log.error("cannot write %s: %s", self.journal, exc)

    def sync(self) -> None:
        """Append the writes not on disk yet to the journal; fold the journal into the
        snapshot once it outgrows it."""
        with self._write_lock:
            self._append_pending()
            if self._journal_bytes > max(self.min_compact_bytes, self._snapshot_bytes):
                self._compact()

    def flush(self) -> None:
        """Write the whole snapshot now (atomically) and empty the journal."""
        with self._write_lock:
            self._append_pending()
            self._compact()

    def _append_pending(self) -> None:
        self._dirty.clear()
        with self._pending_lock:
            lines, self._pending = self._pending, []
        if not lines:
            return
        data = "".join(lines).encode()
        try:
            with self.journal.open("ab") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
        except OSError:
            with self._pending_lock:  # kept for the next attempt, in order
                self._pending[:0] = lines
            raise
        self._journal_bytes += len(data)

    def _compact(self) -> None:
        # Every write up to the dump is in the journal or the dump; writes after it wait in
        # _pending (this thread holds _write_lock), so emptying the journal loses nothing.
        data = json.dumps(self.store.dump(), separators=(",", ":"))
        replace_file(self.path, data)
        self.journal.unlink(missing_ok=True)
        self._snapshot_bytes, self._journal_bytes = len(data), 0
        self.compactions += 1

    def stop(self) -> None:
        """Stop the writer thread and write a final snapshot."""
        self._stopping.set()
        self._dirty.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        if self._on_event in self.store.listeners:
            self.store.listeners.remove(self._on_event)
        self.flush()
        log.info("snapshot written to %s at resourceVersion %d", self.path,
                 self.store.resource_version)
