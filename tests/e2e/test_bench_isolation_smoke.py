"""The UDN isolation benchmark keeps working: a tiny size of each side, with its checks.

``bench/isolation.py`` fails by itself when ovnk's nft table or NB rows differ from
its floor's, when a restart writes anything, or when an nft element or NB row is left
after deleting everything; this runs it at the smallest size so CI notices when it
breaks.  It asserts nothing about speed.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.e2e

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _isolation_bench() -> Any:
    sys.path.insert(0, str(BENCH))
    try:
        import isolation
    finally:
        sys.path.remove(str(BENCH))
    return isolation


def test_isolation_benchmark_zone_side_runs_and_checks_itself(tmp_path: Path) -> None:
    """ACL rendering into real NBs against the ovn-nbctl floor; the run fails by itself when
    the NBs differ, a restart writes or rows are left."""
    isolation = _isolation_bench()
    assert isolation.main(["--pods", "10", "--repeat", "1", "--no-warmup", "--skip-node",
                           "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("isolation-*.json")
    median = json.loads(result.read_text())["zone"]["median"]
    assert median["members"] == 10 and median["acls"] == 5 + 2  # pod-0 has open ports
    assert median["ovnk_transactions"] == 1 and median["perpod_transactions"] == 11
    assert median["ovnk_seconds"] > 0 and median["floor_seconds"] > 0


@pytest.mark.netns
def test_isolation_benchmark_node_side_runs_and_checks_itself(tmp_path: Path) -> None:
    """The nft full sync and per-pod updates in a throwaway namespace against the nft
    floors; the run fails by itself when a table differs from its floor's or an element is
    left after every pod is deleted."""
    isolation = _isolation_bench()
    assert isolation.main(["--pods", "10", "--updates", "6", "--repeat", "1", "--no-warmup",
                           "--skip-zone", "--results", str(tmp_path)]) == 0
    [result] = tmp_path.glob("isolation-*.json")
    node = json.loads(result.read_text())["node"]
    assert node["full_sync"]["elements"] == 10 + 2  # pod-0: tcp/8080 and icmp
    assert node["updates"]["all"]["count"] == 6
    for floor in ("ovnk", "nft_f", "libnftables_fresh", "libnftables_kept"):
        assert math.isfinite(node["updates"]["all"][f"{floor}_ms"]["p99"]), floor
