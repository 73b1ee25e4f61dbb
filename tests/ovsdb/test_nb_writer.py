"""The write-through NB writer against real ovsdb-servers: what it remembers must stay true.

Other writers, lost replies, restarts, garbage collection by OVSDB, duplicate
ids and RAFT failover all make the writer's view of NB wrong in some way;
each test checks that it notices (or knows) and that NB ends up as desired.
"""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from ovnk_core.errors import OvnTransactionError
from ovnk_core.ovn.declarative import (
    DesiredRow,
    DesiredStateError,
    Link,
    Ref,
    apply,
    apply_many,
    delete_owner,
)
from ovnk_core.ovn.install import schema
from ovnk_core.ovn.nb import NbConnectError
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import (
    OvsdbServer,
    cluster_status,
    raft_leader,
    start_raft_cluster,
)
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.testing.ovsdb_fixtures import nbctl
from ovnk_core.testing.waiting import wait_until

CTRL = "blue-network-controller"
NODE = Owner(CTRL, "node:node1")
POD = Owner(CTRL, "pod:ns1/pod1")
SWITCH = NODE.object_ids("LogicalSwitch", "node1", network="blue")


def node_rows(subnet: str = "10.1.1.0/24") -> list[DesiredRow]:
    port = NODE.object_ids("LogicalSwitchPort", "k8s-node1", network="blue")
    return [DesiredRow("Logical_Switch", SWITCH,
                       {"name": "blue_node1", "other_config": {"subnet": subnet}}),
            DesiredRow("Logical_Switch_Port", port, {"name": "blue_k8s-node1"},
                       links=(Link(Ref.to("Logical_Switch", SWITCH), "ports"),))]


def pod_rows(ip: str = "10.1.1.5") -> list[DesiredRow]:
    ids = POD.object_ids("Pod", "ns1/pod1", network="blue")
    return [DesiredRow("Logical_Switch_Port", ids,
                       {"name": "blue_ns1_pod1", "addresses": [f"0a:58:0a:01:01:05 {ip}"],
                        "tag": None},
                       links=(Link(Ref.to("Logical_Switch", SWITCH), "ports"),))]


def port_names(remote: str) -> set[str]:
    return set(nbctl(remote, "--bare", "--columns=name", "list",
                     "Logical_Switch_Port").split())


def test_a_row_deleted_by_someone_else_is_noticed_and_written_again(
        nb_writer: NbWriter) -> None:
    apply_many(nb_writer, {NODE: node_rows(), POD: pod_rows()})
    nbctl(nb_writer.remote, "lsp-del", "blue_ns1_pod1")
    resyncs = nb_writer.resyncs
    drifted: list[set[Owner]] = []
    nb_writer.on_drift = drifted.append
    # The update of the vanished port matches nothing: the writer reads NB again and
    # the retry inserts it.
    result = apply(nb_writer, POD, pod_rows(ip="10.1.1.6"))
    assert result.created == 1
    assert nb_writer.resyncs == resyncs + 1
    assert drifted == [{POD}]  # the zone controller reconciles these again
    assert "10.1.1.6" in nbctl(nb_writer.remote, "get", "Logical_Switch_Port",
                               "blue_ns1_pod1", "addresses")
    assert port_names(nb_writer.remote) == {"blue_k8s-node1", "blue_ns1_pod1"}


def test_children_collected_by_ovsdb_are_forgotten(nb_writer: NbWriter) -> None:
    apply_many(nb_writer, {NODE: node_rows(), POD: pod_rows()})
    # Deleting the switch makes OVSDB delete every port in it, the pod's too.
    delete_owner(nb_writer, NODE)
    assert port_names(nb_writer.remote) == set()
    assert nb_writer.owned_row_count() == 0
    assert nb_writer.owners(owner_key=POD.key) == set()
    apply(nb_writer, NODE, node_rows())
    assert apply(nb_writer, POD, pod_rows()).created == 1
    assert port_names(nb_writer.remote) == {"blue_k8s-node1", "blue_ns1_pod1"}
    assert nb_writer.resync() == set()


def test_a_duplicate_of_an_owned_row_is_deleted_by_its_owner(nb_writer: NbWriter) -> None:
    apply(nb_writer, NODE, node_rows())
    ext = nbctl(nb_writer.remote, "get", "Logical_Switch", "blue_node1", "external_ids").strip()
    nbctl(nb_writer.remote, "create", "Logical_Switch", "name=blue_node1", f"external_ids={ext}")
    assert nb_writer.resync() == {NODE}
    assert apply(nb_writer, NODE, node_rows()).deleted == 1
    assert nbctl(nb_writer.remote, "--bare", "--columns=name", "list",
                 "Logical_Switch").split() == ["blue_node1"]
    assert nb_writer.resync() == set()


def test_a_value_that_does_not_fit_its_column_is_refused_before_writing(
        nb_writer: NbWriter) -> None:
    apply(nb_writer, NODE, node_rows())
    [row] = pod_rows()
    bad = DesiredRow(row.table, row.ids, {**row.columns, "tag": "not-a-number"}, row.links)
    with pytest.raises(DesiredStateError, match="tag"):
        apply(nb_writer, POD, [bad])
    assert port_names(nb_writer.remote) == {"blue_k8s-node1"}


def test_one_element_sets_and_optional_values_compare_equal(nb_writer: NbWriter) -> None:
    apply(nb_writer, NODE, node_rows())
    apply(nb_writer, POD, pod_rows())
    nb_writer.resync()  # compare against values as the server sends them
    assert not apply(nb_writer, POD, pod_rows()).changed


def test_holds_says_whether_nb_has_rows_as_declared(nb_writer: NbWriter) -> None:
    assert not nb_writer.holds(pod_rows())  # not written yet
    apply_many(nb_writer, {NODE: node_rows(), POD: pod_rows()})
    assert nb_writer.holds(pod_rows()) and nb_writer.holds(node_rows())
    assert not nb_writer.holds(pod_rows("10.1.1.6"))  # another address
    # Known again after a fresh read of NB, by another writer (the zone after a restart).
    with NbWriter([nb_writer.remote]).start() as fresh:
        assert fresh.holds(pod_rows()) and not fresh.holds(pod_rows("10.1.1.6"))


def test_reads_do_not_wait_for_a_transaction_in_flight(
        nb_writer: NbWriter, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transaction holds the write lock for its round trip; the zone's workers read the
    remembered rows meanwhile (``owners``, ``holds``) and must not queue behind it."""
    apply_many(nb_writer, {NODE: node_rows()})
    in_flight, release = threading.Event(), threading.Event()
    real_transact = nb_writer._transact

    def slow_transact(ops: list[dict[str, object]]) -> list[object]:
        in_flight.set()
        assert release.wait(10)
        return real_transact(ops)

    monkeypatch.setattr(nb_writer, "_transact", slow_transact)
    writer = threading.Thread(target=apply_many, args=(nb_writer, {POD: pod_rows()}))
    writer.start()
    try:
        assert in_flight.wait(10)
        started = time.monotonic()
        # NB as of the last committed transaction: the node, not yet the pod
        assert nb_writer.owners(controller=CTRL) == {NODE}
        assert nb_writer.holds(node_rows()) and not nb_writer.holds(pod_rows())
        assert nb_writer.find("Logical_Switch", SWITCH.primary_id) is not None
        assert time.monotonic() - started < 1.0
        # a second write waits for the first (one request at a time)
        second = threading.Thread(target=apply_many, args=(nb_writer, {NODE: node_rows(
            "10.1.2.0/24")}))
        second.start()
        second.join(0.3)
        assert second.is_alive()
    finally:
        release.set()
        writer.join(10)
    second.join(10)
    assert nb_writer.owners(controller=CTRL) == {NODE, POD}
    assert nb_writer.holds(pod_rows()) and nb_writer.holds(node_rows("10.1.2.0/24"))


def test_transaction_error_writes_nothing_and_is_clear(nb_writer: NbWriter) -> None:
    apply(nb_writer, NODE, node_rows())
    nbctl(nb_writer.remote, "ls-add", "foreign", "--", "lsp-add", "foreign", "blue_ns1_pod1")
    with pytest.raises(OvnTransactionError, match="constraint violation"):
        apply(nb_writer, POD, pod_rows())  # a foreign port has the name
    assert nb_writer.find("Logical_Switch_Port", pod_rows()[0].ids.primary_id) is None
    nbctl(nb_writer.remote, "ls-del", "foreign")
    assert apply(nb_writer, POD, pod_rows()).created == 1


class ReplyDropper:
    """A TCP proxy that forwards requests and, once armed, cuts the connection instead of
    passing on the next reply (the transaction committed; its answer is lost)."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.armed = threading.Event()
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.upstream_port))
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, replies: bool) -> None:
        try:
            while data := source.recv(65536):
                if replies and self.armed.is_set() and b'"uuid"' in data:
                    self.armed.clear()
                    break
                target.sendall(data)
        except OSError:
            pass
        for sock in (source, target):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()

    def close(self) -> None:
        self.listener.close()


def test_a_lost_reply_is_settled_by_reading_nb_again(nb_server: OvsdbServer,
                                                     nb_writer: NbWriter) -> None:
    assert nb_server.tcp_port is not None
    proxy = ReplyDropper(nb_server.tcp_port)
    try:
        with NbWriter([f"tcp:127.0.0.1:{proxy.port}"], timeout=10).start() as writer:
            apply(writer, NODE, node_rows())
            proxy.armed.set()
            with pytest.raises(OvnTransactionError):
                apply(writer, POD, pod_rows())  # committed, but the answer never came
            # The next apply reads NB first: the port is there, nothing is inserted twice.
            assert not apply(writer, POD, pod_rows()).changed
            assert port_names(nb_server.remote) == {"blue_k8s-node1", "blue_ns1_pod1"}
    finally:
        proxy.close()


def test_reconnects_after_a_server_restart(tmp_path: Path) -> None:
    server = OvsdbServer("nb", tmp_path, schema("ovn-nb")).start()
    try:
        with NbWriter([server.remote], timeout=10).start() as writer:
            apply(writer, NODE, node_rows())
            server.stop()
            with pytest.raises(OvnTransactionError):
                apply(writer, NODE, node_rows(subnet="10.1.9.0/24"))
            server.start()
            result = apply(writer, NODE, node_rows(subnet="10.1.9.0/24"))
            assert (result.created, result.updated) == (0, 1)
            assert not apply(writer, NODE, node_rows(subnet="10.1.9.0/24")).changed
    finally:
        server.stop()


def test_check_says_whether_nb_can_be_written_and_reads_it_again_when_back(
        tmp_path: Path) -> None:
    """The zone controller's readiness: a round trip when idle; a server that went away
    is the reason, and once it answers again NB is read again before anything is said
    ready (another writer may have changed it meanwhile)."""
    server = OvsdbServer("nb", tmp_path, schema("ovn-nb")).start()
    try:
        with NbWriter([server.remote], timeout=10).start() as writer:
            apply(writer, NODE, node_rows())
            assert writer.check() is None and writer.problem is None
            server.stop()
            problem = writer.check(timeout=2)
            assert problem is not None and problem.startswith(
                f"cannot reach OVN Northbound at {server.remote}: ")
            assert writer.check(timeout=2) == writer.problem  # still down: still the reason
            with pytest.raises(NbConnectError, match="cannot reach OVN Northbound"):
                apply(writer, NODE, node_rows(subnet="10.1.9.0/24"))
            server.start()
            nbctl(server.remote, "lsp-del", "blue_k8s-node1")  # meanwhile, by someone else
            drifted: list[set[Owner]] = []
            writer.on_drift = drifted.append
            resyncs = writer.resyncs
            assert writer.check() is None and writer.problem is None
            assert writer.resyncs == resyncs + 1 and drifted == [{NODE}]
            assert apply(writer, NODE, node_rows()).created == 1
    finally:
        server.stop()


def test_a_connection_lost_during_a_write_says_nb_cannot_be_reached(tmp_path: Path) -> None:
    """The zone controller waits for NB on any ``NbConnectError``: a connection that breaks
    under a transaction is one too (and still an ``OvnTransactionError``)."""
    server = OvsdbServer("nb", tmp_path, schema("ovn-nb")).start()
    try:
        with NbWriter([server.remote], timeout=10).start() as writer:
            apply(writer, NODE, node_rows())
            server.stop()
            with pytest.raises(NbConnectError) as raised:
                apply(writer, NODE, node_rows(subnet="10.1.9.0/24"))
            assert isinstance(raised.value, OvnTransactionError)
            assert writer.problem == str(raised.value)
    finally:
        server.stop()


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(NbConnectError, match="cannot reach OVN Northbound"):
        NbWriter([f"unix:{tmp_path}/absent.sock"]).start(connect_timeout=0.5)


def test_ssl_remote_is_refused_with_the_reason(tmp_path: Path) -> None:
    with pytest.raises(NbConnectError, match="ssl remotes need client certificates"):
        NbWriter(["ssl:127.0.0.1:6641"]).start(connect_timeout=0.2)


def test_raft_cluster_leader_only_and_failover(tmp_path: Path) -> None:
    members = start_raft_cluster("nb", tmp_path, schema("ovn-nb"), size=3)
    try:
        # every member joined (a leader at once is the first member alone): failing over
        # before the third joined would leave one of two, no majority to elect a leader
        wait_until(lambda: all("Status: cluster member" in cluster_status(m) for m in members),
                   what="every member has joined the RAFT cluster")
        wait_until(lambda: any("Role: leader" in cluster_status(m) for m in members))
        # The leader is last in the list: the writer must skip the followers.
        leader = raft_leader(members)
        remotes = [m.remote for m in members if m is not leader] + [leader.remote]
        with NbWriter(remotes, timeout=30).start() as writer:
            apply(writer, NODE, node_rows())
            leader.stop()
            survivors = [m for m in members if m is not leader]
            wait_until(lambda: any("Role: leader" in cluster_status(m) for m in survivors))
            deadline = time.monotonic() + 30
            while True:
                try:
                    apply_many(writer, {NODE: node_rows(), POD: pod_rows()})
                    break
                except (OvnTransactionError, NbConnectError):
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            assert port_names(raft_leader(survivors).remote) == {"blue_k8s-node1", "blue_ns1_pod1"}
            assert writer.resync() == set()
    finally:
        for member in members:
            member.stop()
