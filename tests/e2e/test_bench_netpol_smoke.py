"""The NetworkPolicy render benchmark keeps working: its smallest size, with its checks.

``bench/netpol_render.py`` fails by itself when ovnk's NB rows differ from the
``ovn-nbctl`` floor's, when a restart writes anything, or when an owned row is left after
deleting everything; this runs it tiny so CI notices when it breaks.  It asserts nothing
about speed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _netpol_bench() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        import netpol_render
    finally:
        sys.path.remove(str(BENCH))
    return netpol_render


def test_netpol_render_benchmark_runs_and_checks_itself(tmp_path: Path) -> None:
    bench = _netpol_bench()
    assert bench.main(["--namespaces", "3", "--pods", "4", "--policies", "2", "--repeat", "1",
                       "--no-warmup", "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("netpol_render-*.json")
    [run] = json.loads(result.read_text())["runs"]
    assert run["restart_writes"] == 0 and run["owned_rows"] > 0
