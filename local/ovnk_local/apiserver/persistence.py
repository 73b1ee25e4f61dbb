"""Optional file-backed snapshot, so a restarted local cluster keeps its objects.

After a write the store is marked dirty; a background thread writes the
whole store as one JSON document at most every ``interval`` seconds, and
``stop()`` writes a last time.  Writes are atomic (temporary file, fsync,
rename), so a crash leaves the previous snapshot intact.  The snapshot holds
the resourceVersion counter, so versions keep increasing across restarts;
the event history is not kept, so watches from before the restart get 410.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

from ovnk_core import jsondepth
from ovnk_core.atomic_file import replace_file
from ovnk_local.apiserver.errors import JSON
from ovnk_local.apiserver.store import Event, Store

log = logging.getLogger(__name__)


def read_snapshot(path: Path) -> JSON | None:
    """The snapshot at ``path``, or ``None`` when there is none yet.

    :raises ValueError: the file is not a snapshot this server can read (not JSON, or
        nested deeper than any object it stores could make it), naming the file.
    """
    if not path.exists():
        return None
    try:
        data: JSON = jsondepth.loads(path.read_text())
    except ValueError as exc:
        raise ValueError(f"cannot read the snapshot {path}: {exc}") from None
    log.info("loaded %d objects at resourceVersion %s from %s",
             sum(len(v) for v in (data.get("objects") or {}).values()),
             data.get("resourceVersion"), path)
    return data


class Persistence:
    """Writes ``store`` to ``path`` after changes (coalesced) and on ``stop``."""

    def __init__(self, store: Store, path: Path, interval: float = 0.2) -> None:
        self.store = store
        self.path = path
        self.interval = interval
        self._dirty = threading.Event()
        self._stopping = threading.Event()
        self._write_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="apiserver-persistence",
                                        daemon=True)

    def start(self) -> None:
        """Watch the store for writes and start the writer thread."""
        self.store.listeners.append(self._on_event)
        self._thread.start()

    def _on_event(self, _event: Event) -> None:
        self._dirty.set()

    def _run(self) -> None:
        while not self._stopping.is_set():
            self._dirty.wait()
            if self._stopping.is_set():
                break
            self._stopping.wait(self.interval)
            self.flush()

    def flush(self) -> None:
        """Write the snapshot now (atomically)."""
        with self._write_lock:
            self._dirty.clear()
            data = json.dumps(self.store.dump(), separators=(",", ":"))
            replace_file(self.path, data)

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
