"""Replacing a file so that a reader sees the old content or the new, never half of it.

The data goes to a temporary file beside the target, is flushed to disk and renamed over
the target (``rename`` is atomic on one filesystem); a failure leaves the target as it
was and removes the temporary file.  Used for state other processes read while it is
being rewritten: the local API server's snapshot, ``ovnk local``'s cluster state.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def replace_file(path: Path, data: str | bytes, mode: int | None = None) -> None:
    """Atomically make ``data`` the content of ``path`` (``mode``: its permissions)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            if mode is not None:
                os.fchmod(out.fileno(), mode)
            out.write(data.encode() if isinstance(data, str) else data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


__all__ = ["replace_file"]
