"""Where a benchmark's raw results go: ``<dir>/<name>-<time>.json``, one file per run."""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any


def write_results(directory: Path, name: str, report: Any) -> Path:
    """Write ``report`` as JSON to a new time-stamped file in ``directory``; its path."""
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps(report, indent=2))
    return out


def machine_facts() -> dict[str, Any]:
    """What a result depends on of the machine it was measured on."""
    return {"cpus": os.cpu_count(), "python": platform.python_version()}
