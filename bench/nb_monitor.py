"""Lines of an ``ovsdb-client monitor`` of one NB table, in its own process.

Benchmarks watch NB this way rather than with an in-process IDL, which would compete with
what they measure for this process's CPU and delay what they observe.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from ovnk_core.ovn.install import command


def monitor_lines(nb_socket: Path, table: str, columns: str, stop: threading.Event
                  ) -> Iterator[str]:
    """Every CSV line (JSON data) the monitor prints for ``table``'s ``columns``, the first
    dump included, until ``stop`` is set."""
    process = subprocess.Popen(
        command("ovsdb-client", "monitor", f"unix:{nb_socket}", "OVN_Northbound", table, columns,
         "-f", "csv", "-d", "json", "--no-headings"),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None

    def end_when_stopped() -> None:
        stop.wait()
        process.terminate()
    threading.Thread(target=end_when_stopped, daemon=True).start()
    yield from process.stdout
    process.wait()
