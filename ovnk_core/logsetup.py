"""Process-wide logging setup for the ``ovnk`` command.

One line per event, ``LEVEL logger: message``; every message that concerns
an object carries its key (``ns/name``, network name, node name) so a log can
be grepped by object.  Library code only ever calls ``logging.getLogger``.
"""

from __future__ import annotations

import logging
import sys

_KLOG_LEVELS = {"0": "error", "1": "warning", "2": "info", "3": "info", "4": "debug",
                "5": "debug"}
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def level_number(name: str) -> int:
    text = _KLOG_LEVELS.get(name.strip(), name.strip()).upper()
    level = logging.getLevelName(text)
    if not isinstance(level, int):
        raise ValueError(f"unknown log level {name!r}")
    return level


def setup_logging(level: str = "info") -> None:
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    root.addHandler(handler)
    root.setLevel(level_number(level))
    # ovsdbapp logs every failed command with a traceback; our client raises instead.
    logging.getLogger("ovsdbapp").setLevel(max(root.level, logging.WARNING))
