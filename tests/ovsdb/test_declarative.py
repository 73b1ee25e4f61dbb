"""The declarative NB layer (``NbWriter``) against a real ovsdb-server: convergence,
idempotence, foreign-row safety, links shared between owners, drift repair, and restart
without writes.  Rows are checked with ovn-nbctl, a separate client."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from ovnk_core.ovn.declarative import (
    DesiredRow,
    DesiredStateError,
    Link,
    MissingReference,
    Ref,
    apply,
    apply_many,
    delete_owner,
)
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import ID_KEY, Owner
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.testing import ovsdb_fixtures

CTRL = "blue-network-controller"
NODE_OWNER = Owner(CTRL, "node:node1")
POD_OWNER = Owner(CTRL, "pod:ns1/pod1")


def switch_rows(node: str = "node1", subnet: str = "10.1.1.0/24",
                port_names: tuple[str, ...] = ("k8s-node1",)) -> list[DesiredRow]:
    owner = Owner(CTRL, f"node:{node}")
    sw_ids = owner.object_ids("LogicalSwitch", node, network="blue", topology="layer3",
                              role="primary")
    rows = [DesiredRow("Logical_Switch", sw_ids,
                       {"name": f"blue_{node}", "other_config": {"subnet": subnet}})]
    for name in port_names:
        ids = owner.object_ids("LogicalSwitchPort", name, network="blue")
        rows.append(DesiredRow("Logical_Switch_Port", ids,
                               {"name": f"blue_{name}", "addresses": ["router"]},
                               links=(Link(Ref.to("Logical_Switch", sw_ids), "ports"),)))
    return rows


def pod_rows(ip: str = "10.1.1.5") -> list[DesiredRow]:
    switch = Ref("Logical_Switch", f"{CTRL}:LogicalSwitch:node1")
    ids = POD_OWNER.object_ids("Pod", "ns1/pod1", network="blue")
    mac = "0a:58:0a:01:01:05"
    return [DesiredRow("Logical_Switch_Port", ids,
                       {"name": "blue_ns1_pod1", "addresses": [f"{mac} {ip}"],
                        "port_security": [f"{mac} {ip}"],
                        "options": {"requested-chassis": "node1"}},
                       links=(Link(switch, "ports"),),
                       extra_external_ids={"pod": "true", "namespace": "ns1"})]


def nbctl(nb: NbClient | NbWriter, *args: str) -> str:
    return ovsdb_fixtures.nbctl(nb.remote, *args)


def switch_port_names(nb: NbClient | NbWriter, switch: str) -> set[str]:
    ports = nbctl(nb, "lsp-list", switch)
    return {line.split("(")[1].rstrip(")") for line in ports.splitlines() if "(" in line}


def test_apply_creates_rows_with_ownership_and_links(nb_writer: NbWriter) -> None:
    result = apply(nb_writer, NODE_OWNER, switch_rows())
    assert (result.created, result.deleted) == (2, 0)
    assert switch_port_names(nb_writer, "blue_node1") == {"blue_k8s-node1"}
    assert nb_writer.find("Logical_Switch", f"{CTRL}:LogicalSwitch:node1") is not None
    assert nbctl(nb_writer, "get", "Logical_Switch", "blue_node1", "other_config").strip() \
        == '{subnet="10.1.1.0/24"}'
    ext = nbctl(nb_writer, "get", "Logical_Switch", "blue_node1", "external_ids")
    assert '"k8s.ovn.org/owner"="node:node1"' in ext
    assert '"k8s.ovn.org/network"=blue' in ext
    assert '"k8s.ovn.org/role"=primary' in ext


def test_second_apply_writes_nothing(nb_writer: NbWriter, nb_server) -> None:  # type: ignore[no-untyped-def]
    apply(nb_writer, NODE_OWNER, switch_rows())
    apply(nb_writer, POD_OWNER, pod_rows())
    size = nb_server.db_path.stat().st_size
    again = apply_many(nb_writer, {NODE_OWNER: switch_rows(), POD_OWNER: pod_rows()})
    assert not again.changed
    # ovsdb-server appends every committed transaction to its file: nothing was appended.
    assert nb_server.db_path.stat().st_size == size


def test_changed_column_and_stale_rows_converge(nb_writer: NbWriter) -> None:
    apply(nb_writer, NODE_OWNER, switch_rows(port_names=("k8s-node1", "extra")))
    result = apply(nb_writer, NODE_OWNER, switch_rows(subnet="10.1.2.0/24"))
    assert (result.updated, result.deleted, result.created) == (1, 1, 0)
    assert switch_port_names(nb_writer, "blue_node1") == {"blue_k8s-node1"}
    assert nbctl(nb_writer, "get", "Logical_Switch", "blue_node1", "other_config:subnet").strip() \
        == '"10.1.2.0/24"'


def test_drift_is_found_by_resync_and_repaired(nb_writer: NbWriter) -> None:
    apply(nb_writer, NODE_OWNER, switch_rows())
    apply(nb_writer, POD_OWNER, pod_rows())
    nbctl(nb_writer, "set", "Logical_Switch", "blue_node1", "other_config:subnet=9.9.9.0/24")
    nbctl(nb_writer, "lsp-del", "blue_k8s-node1")
    assert nb_writer.resync() == {NODE_OWNER}
    result = apply(nb_writer, NODE_OWNER, switch_rows())
    assert result.created == 1 and result.updated == 1
    assert switch_port_names(nb_writer, "blue_node1") == {"blue_k8s-node1", "blue_ns1_pod1"}
    assert nbctl(nb_writer, "get", "Logical_Switch", "blue_node1",
                 "other_config:subnet").strip() == '"10.1.1.0/24"'
    assert nb_writer.resync() == set()


def test_owners_share_a_parent_column_without_disturbing_each_other(nb_writer: NbWriter) -> None:
    apply(nb_writer, NODE_OWNER, switch_rows())
    apply(nb_writer, POD_OWNER, pod_rows())
    assert switch_port_names(nb_writer, "blue_node1") == {"blue_k8s-node1", "blue_ns1_pod1"}
    # Re-applying the node owner (which does not list the pod port) keeps the pod port.
    assert not apply(nb_writer, NODE_OWNER, switch_rows()).changed
    assert switch_port_names(nb_writer, "blue_node1") == {"blue_k8s-node1", "blue_ns1_pod1"}
    # Deleting the pod owner unlinks and deletes only its port.
    result = delete_owner(nb_writer, POD_OWNER)
    assert result.deleted == 1
    assert switch_port_names(nb_writer, "blue_node1") == {"blue_k8s-node1"}


def test_foreign_rows_are_never_modified_or_deleted(nb_writer: NbWriter) -> None:
    nbctl(nb_writer, "ls-add", "foreign", "--", "lsp-add", "foreign", "fp1",
          "--", "set", "Logical_Switch", "foreign", "other_config:subnet=10.1.1.0/24",
          "--", "set", "Logical_Switch", "foreign", "external_ids:k8s.ovn.org/owner=node:node1")
    # A foreign port inside an owned switch stays when the owner converges.
    apply(nb_writer, NODE_OWNER, switch_rows())
    nbctl(nb_writer, "lsp-add", "blue_node1", "foreign-port-in-owned-switch")
    before = nbctl(nb_writer, "list", "Logical_Switch", "foreign")
    result = apply(nb_writer, NODE_OWNER, switch_rows(subnet="10.1.9.0/24"))
    assert result.deleted == 0
    assert nbctl(nb_writer, "list", "Logical_Switch", "foreign") == before
    assert "foreign-port-in-owned-switch" in nbctl(nb_writer, "lsp-list", "blue_node1")
    # After a full read too: foreign rows are not taken for owned ones.
    nb_writer.resync()
    delete_owner(nb_writer, NODE_OWNER)
    assert nbctl(nb_writer, "list", "Logical_Switch", "foreign") == before
    assert nb_writer.owners(owner_key="node:node1") == set()


def test_link_into_foreign_row_is_refused(nb_writer: NbWriter) -> None:
    nbctl(nb_writer, "ls-add", "foreign", "--", "set", "Logical_Switch", "foreign",
          f"external_ids:{ID_KEY}=lookalike")
    row = DesiredRow("Logical_Switch_Port", POD_OWNER.object_ids("Pod", "x"),
                     {"name": "x"}, links=(Link(Ref("Logical_Switch", "lookalike"), "ports"),))
    nb_writer.resync()
    with pytest.raises(MissingReference, match="not owned by ovnk"):
        apply(nb_writer, POD_OWNER, [row])
    assert "x" not in nbctl(nb_writer, "lsp-list", "foreign")


def test_missing_parent_is_not_ready_and_writes_nothing(nb_writer: NbWriter) -> None:
    with pytest.raises(MissingReference, match="does not exist"):
        apply(nb_writer, POD_OWNER, pod_rows())
    assert nbctl(nb_writer, "--bare", "--columns=name", "list", "Logical_Switch_Port") == ""


def test_invalid_desired_state_is_rejected_before_writing(nb_writer: NbWriter) -> None:
    rows = switch_rows()
    with pytest.raises(DesiredStateError, match="described twice"):
        apply(nb_writer, NODE_OWNER, rows + rows[:1])
    with pytest.raises(DesiredStateError, match="belongs to"):
        apply(nb_writer, POD_OWNER, rows)
    with pytest.raises(DesiredStateError, match="no column"):
        apply(nb_writer, NODE_OWNER, [DesiredRow("Logical_Switch", rows[0].ids, {"nope": 1})])
    assert nbctl(nb_writer, "ls-list") == ""


def test_router_children_and_references(nb_writer: NbWriter) -> None:
    owner = Owner(CTRL, "network")
    rtr = owner.object_ids("LogicalRouter", "cluster-router", network="blue")
    route = owner.object_ids("StaticRoute", "default", network="blue")
    nat = owner.object_ids("NAT", "snat", network="blue")
    rows = [
        DesiredRow("Logical_Router", rtr, {"name": "blue_ovn_cluster_router",
                                           "options": {"always_learn_from_arp_request": "false"}}),
        DesiredRow("Logical_Router_Static_Route", route,
                   {"ip_prefix": "0.0.0.0/0", "nexthop": "100.65.0.2"},
                   links=(Link(Ref.to("Logical_Router", rtr), "static_routes"),)),
        DesiredRow("NAT", nat, {"type": "snat", "external_ip": "169.254.0.11",
                                "logical_ip": "10.1.0.0/16"},
                   links=(Link(Ref.to("Logical_Router", rtr), "nat"),)),
    ]
    assert apply(nb_writer, owner, rows).created == 3
    assert "0.0.0.0/0" in nbctl(nb_writer, "lr-route-list", "blue_ovn_cluster_router")
    assert "169.254.0.11" in nbctl(nb_writer, "lr-nat-list", "blue_ovn_cluster_router")
    assert not apply(nb_writer, owner, rows).changed
    assert apply(nb_writer, owner, rows[:1]).deleted == 2
    assert nbctl(nb_writer, "lr-nat-list", "blue_ovn_cluster_router") == ""
    assert delete_owner(nb_writer, owner).deleted == 1
    assert nbctl(nb_writer, "lr-list") == ""


def test_restarted_client_writes_nothing(nb_writer: NbWriter, nb_server) -> None:  # type: ignore[no-untyped-def]
    apply_many(nb_writer, {NODE_OWNER: switch_rows(), POD_OWNER: pod_rows()})
    nb_writer.stop()
    size = nb_server.db_path.stat().st_size
    with NbWriter([nb_server.remote]).start() as fresh:
        result = apply_many(fresh, {NODE_OWNER: switch_rows(), POD_OWNER: pod_rows()})
        assert not result.changed
        assert fresh.transactions == 0
    assert nb_server.db_path.stat().st_size == size


CRASHER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {tests_dir!r})
    from test_declarative import NODE_OWNER, POD_OWNER, switch_rows, pod_rows
    from ovnk_core.ovn.declarative import apply
    from ovnk_core.ovn.writer import NbWriter
    nb = NbWriter([{remote!r}]).start()
    apply(nb, NODE_OWNER, switch_rows())
    os._exit(0)   # dies before the pod owner's transaction
""")


def test_crash_between_owners_converges_on_restart(nb_writer: NbWriter, nb_server,  # type: ignore[no-untyped-def]
                                                    request: pytest.FixtureRequest) -> None:
    tests_dir = str(request.path.parent)
    code = CRASHER.format(tests_dir=tests_dir, remote=nb_server.remote)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert switch_port_names(nb_writer, "blue_node1") == {"blue_k8s-node1"}
    nb_writer.resync()  # what the restarted controller reads at start
    result = apply_many(nb_writer, {NODE_OWNER: switch_rows(), POD_OWNER: pod_rows()})
    assert (result.created, result.updated, result.deleted) == (1, 0, 0)
    assert switch_port_names(nb_writer, "blue_node1") == {"blue_k8s-node1", "blue_ns1_pod1"}


def test_membership_in_another_owners_port_group_is_kept(nb_writer: NbWriter) -> None:
    group_owner = Owner(CTRL, "network")
    group = group_owner.object_ids("PortGroup", "isolation")
    apply(nb_writer, NODE_OWNER, switch_rows())
    apply(nb_writer, group_owner, [DesiredRow("Port_Group", group, {"name": "blue_isolation"})])
    member = pod_rows()[0]
    joined = DesiredRow(member.table, member.ids, member.columns,
                        links=(*member.links, Link(Ref.to("Port_Group", group), "ports")),
                        extra_external_ids=member.extra_external_ids)
    apply(nb_writer, POD_OWNER, [joined])
    assert nbctl(nb_writer, "--bare", "--columns=ports", "list", "Port_Group").strip()
    # Re-applying either owner alone keeps the membership.
    assert not apply(nb_writer, POD_OWNER, [joined]).changed
    assert not apply(nb_writer, group_owner,
                     [DesiredRow("Port_Group", group, {"name": "blue_isolation"})]).changed
    assert nbctl(nb_writer, "--bare", "--columns=ports", "list", "Port_Group").strip()
    # Leaving the group is a link the member no longer declares.
    assert apply(nb_writer, POD_OWNER, pod_rows()).unlinked == 1
    assert nbctl(nb_writer, "--bare", "--columns=ports", "list", "Port_Group").strip() == ""


def test_reference_sets_cannot_be_declared_as_columns(nb_writer: NbWriter) -> None:
    owner = Owner(CTRL, "network")
    row = DesiredRow("Port_Group", owner.object_ids("PortGroup", "x"),
                     {"name": "x", "ports": []})
    with pytest.raises(DesiredStateError, match="reference set, maintained by links"):
        apply(nb_writer, owner, [row])
    bad_link = DesiredRow("Logical_Switch_Port", owner.object_ids("Pod", "y"), {"name": "y"},
                          links=(Link(Ref("Logical_Switch", "z"), "name"),))
    with pytest.raises(DesiredStateError, match="not a reference set"):
        apply(nb_writer, owner, [bad_link])
    orphan = DesiredRow("Logical_Switch_Port", owner.object_ids("Pod", "y"), {"name": "y"})
    with pytest.raises(DesiredStateError, match="not a root table"):
        apply(nb_writer, owner, [orphan])
