"""The NB client (the IDL reader of CLIs and tests) against real ovsdb-servers: transports,
indexes, reconnect, RAFT.  Rows are written by ``NbWriter``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from ovnk_core.errors import OvnTransactionError
from ovnk_core.ovn.declarative import DesiredRow, apply
from ovnk_core.ovn.install import command, schema
from ovnk_core.ovn.nb import NbClient, NbConnectError
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import (
    OvsdbServer,
    cluster_status,
    raft_leader,
    start_raft_cluster,
)
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.testing.waiting import wait_until

OWNER = Owner("default-network-controller", "network")


def switches(*names: str) -> list[DesiredRow]:
    return [DesiredRow("Logical_Switch", OWNER.object_ids("LogicalSwitch", name),
                       {"name": name}) for name in names]


def test_tcp_transport(nb_server: OvsdbServer, nb_writer: NbWriter) -> None:
    apply(nb_writer, OWNER, switches("a"))
    with NbClient([nb_server.tcp_remote]).start() as tcp_client:
        assert tcp_client.find_by_id("Logical_Switch",
                                     OWNER.object_ids("LogicalSwitch", "a").primary_id)


def test_index_follows_external_ids_changes(ovn_nb: NbClient, nb_writer: NbWriter) -> None:
    apply(nb_writer, OWNER, switches("a", "b"))
    wait_until(lambda: {r.name for r in ovn_nb.find_owned(
        "Logical_Switch", owner_controller=OWNER.controller)} == {"a", "b"})
    subprocess.run(command("ovn-nbctl", f"--db={ovn_nb.remote}", "remove", "Logical_Switch", "b",
                    "external_ids", "k8s.ovn.org/owner-controller"), check=True)
    wait_until(lambda: {r.name for r in ovn_nb.find_owned(
        "Logical_Switch", owner_controller=OWNER.controller)} == {"a"})
    with pytest.raises(ValueError, match="indexed keys"):
        ovn_nb.find_owned("Logical_Switch", topology="layer3")


def test_transaction_errors_raise(ovn_nb: NbClient) -> None:
    with pytest.raises(OvnTransactionError, match="transaction failed"):
        with ovn_nb.transaction() as txn:
            txn.add(ovn_nb.api.lsp_add("no-such-switch", "p1"))


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NbConnectError, match="cannot reach OVN Northbound"):
        NbClient([f"unix:{tmp_path}/absent.sock"]).start(connect_timeout=0.5)


def test_reconnect_after_restart_resyncs_indexes(tmp_path: Path) -> None:
    server = OvsdbServer("nb", tmp_path, schema("ovn-nb")).start()
    try:
        client = NbClient([server.remote]).start()
        with NbWriter([server.remote]).start() as writer:
            apply(writer, OWNER, switches("a", "b"))
        wait_until(lambda: len(client.find_owned("Logical_Switch",
                                                 owner_controller=OWNER.controller)) == 2)
        server.stop()
        # While the client is away, "b" disappears from the database file.
        subprocess.run(command("ovsdb-tool", "transact", str(server.db_path), json.dumps(
            ["OVN_Northbound", {"op": "delete", "table": "Logical_Switch",
                                "where": [["name", "==", "b"]]}])), check=True)
        server.start()
        a_id = OWNER.object_ids("LogicalSwitch", "a").primary_id
        b_id = OWNER.object_ids("LogicalSwitch", "b").primary_id
        # Until the client notices the restart it still holds both switches, and between its
        # reconnection and the monitor's reply it holds neither: resynced is "a" without "b"
        wait_until(lambda: client.connected
                   and client.find_by_id("Logical_Switch", a_id) is not None
                   and client.find_by_id("Logical_Switch", b_id) is None,
                   what="the reconnected client's index holds switch a and not b")
        client.stop()
    finally:
        server.stop()


def test_raft_cluster_leader_only_and_failover(tmp_path: Path) -> None:
    members = start_raft_cluster("nb", tmp_path, schema("ovn-nb"), size=3)
    try:
        # every member joined (a leader at once is the first member alone): failing over
        # before the third joined would leave one of two, no majority to elect a leader
        wait_until(lambda: all("Status: cluster member" in cluster_status(m) for m in members),
                   what="every member has joined the RAFT cluster")
        wait_until(lambda: any("Role: leader" in cluster_status(m) for m in members))
        client = NbClient([m.remote for m in members], timeout=30).start()
        with NbWriter([m.remote for m in members], timeout=30).start() as writer:
            apply(writer, OWNER, switches("a"))
        wait_until(lambda: len(client.find_owned("Logical_Switch",
                                                 owner_controller=OWNER.controller)) == 1)
        leader = raft_leader(members)
        leader.stop()
        survivors = [m for m in members if m is not leader]
        wait_until(lambda: any("Role: leader" in cluster_status(m) for m in survivors))
        # The client finds the new leader by itself and sees what is written there.
        subprocess.run(command("ovn-nbctl", f"--db={raft_leader(survivors).remote}", "ls-add", "b"),
                       check=True)
        wait_until(lambda: "b" in {row.name for row in client.row_list("Logical_Switch")},
                   timeout=30)
        client.stop()
    finally:
        for member in members:
            member.stop()
