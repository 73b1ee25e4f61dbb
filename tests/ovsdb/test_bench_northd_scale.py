"""``bench/northd_scale.py``: its two topology builders write the same NB.

The raw JSON-RPC builder exists so that U = 1000 can be built at all; a figure measured with
it only compares with one measured through ``ovn-nbctl`` if both leave the same rows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.testing.ovsdb_fixtures import nbctl
from ovnk_core.testing.scripts import load_script

pytestmark = pytest.mark.ovsdb


def _topology(remote: str) -> list[str]:
    """Every router, switch and port with what the benchmark sets on it (uuids left out)."""
    rows = []
    for table, columns in (("Logical_Router", "name"), ("Logical_Router_Port", "name,mac,networks"),
                           ("Logical_Switch", "name"),
                           ("Logical_Switch_Port", "name,type,addresses,options")):
        out = nbctl(remote, "--format=csv", "--no-headings", f"--columns={columns}", "list", table)
        rows += [f"{table} {line}" for line in out.splitlines()]
    for router in nbctl(remote, "--bare", "--columns=name", "list", "Logical_Router").split():
        ports = nbctl(remote, "lrp-list", router).split("\n")
        rows += [f"{router} has {line.split()[-1]}" for line in ports if line]
    for switch in nbctl(remote, "--bare", "--columns=name", "list", "Logical_Switch").split():
        ports = nbctl(remote, "lsp-list", switch).split("\n")
        rows += [f"{switch} has {line.split()[-1]}" for line in ports if line]
    return sorted(rows)


def test_the_jsonrpc_builder_writes_what_ovn_nbctl_writes(nb_server: OvsdbServer) -> None:
    scale = load_script(Path(__file__).resolve().parents[2] / "bench" / "northd_scale.py")
    topologies = []
    for builder in ("nbctl", "jsonrpc"):
        nb_server.wipe()
        scale.build(nb_server.remote, builder, 3, 2)
        topologies.append(_topology(nb_server.remote))
    assert topologies[0] == topologies[1]
    assert sum(row.startswith("Logical_Switch_Port ") for row in topologies[0]) == 3 * 2 * 2
    assert "net2_ovn_cluster_router has (rtos-net2_node1)" in topologies[0]
