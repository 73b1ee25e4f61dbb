"""A long-running command's readiness as its supervisor reads it: ``--ready-file``.

``ovnk controller``, ``ovnk cluster-manager`` and ``ovnk node`` take
``--ready-file FILE``.  The file exists exactly while the process is ready;
while it runs but is not ready (the zone controller cannot reach OVN
Northbound, say) ``FILE.not-ready`` holds the reason instead, so a supervisor
(``ovnk local status``) can say why.  Both go when the process stops.  Every
change is an atomic rename, so a reader never sees half a file.
"""

from __future__ import annotations

import logging
from pathlib import Path

from ovnk_core.atomic_file import replace_file

log = logging.getLogger(__name__)

NOT_READY_SUFFIX = ".not-ready"


def not_ready_file(ready_file: Path) -> Path:
    """Where the reason lives while the process behind ``ready_file`` is not ready."""
    return ready_file.with_name(ready_file.name + NOT_READY_SUFFIX)


def not_ready_reason(ready_file: Path) -> str:
    """The reason a running process gave for not being ready ("" when it gave none)."""
    try:
        return not_ready_file(ready_file).read_text().strip()
    except OSError:
        return ""


class ReadyFile:
    """The ready file of one process (``None``: nobody asked for one; then it only logs)."""

    def __init__(self, path: Path | None, what: str) -> None:
        self.path = path
        self.what = what  # who is (not) ready, for the log
        self.reason: str | None = None  # None: ready (or not said yet)
        self._said = False

    def ready(self, content: str = "ready") -> None:
        if self._said and self.reason is None:
            return
        if self.reason is not None:
            log.info("%s: ready again", self.what)
        self.reason, self._said = None, True
        if self.path is not None:
            replace_file(self.path, content + "\n")
            not_ready_file(self.path).unlink(missing_ok=True)

    def not_ready(self, reason: str) -> None:
        if self._said and self.reason == reason:
            return
        log.warning("%s: not ready: %s", self.what, reason)
        self.reason, self._said = reason, True
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            replace_file(not_ready_file(self.path), reason + "\n")

    def clear(self) -> None:
        """The process stops: neither ready nor saying why not."""
        if self.path is not None:
            self.path.unlink(missing_ok=True)
            not_ready_file(self.path).unlink(missing_ok=True)


__all__ = ["NOT_READY_SUFFIX", "ReadyFile", "not_ready_file", "not_ready_reason"]
