"""The declarative NB layer against a real ovsdb-server: convergence, idempotence,
foreign-row safety, links shared between owners, and restart without writes."""

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
from ovnk_core.ovn.ownership import ID_KEY, Owner, is_owned

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


def nbctl(nb: NbClient, *args: str) -> str:
    return subprocess.run(["ovn-nbctl", f"--db={nb.remote}", *args], check=True,
                          capture_output=True, text=True).stdout


def switch_port_names(nb: NbClient, switch: str) -> set[str]:
    ports = nbctl(nb, "lsp-list", switch)
    return {line.split("(")[1].rstrip(")") for line in ports.splitlines() if "(" in line}


def test_apply_creates_rows_with_ownership_and_links(ovn_nb: NbClient) -> None:
    result = apply(ovn_nb, NODE_OWNER, switch_rows())
    assert (result.created, result.deleted) == (2, 0)
    assert switch_port_names(ovn_nb, "blue_node1") == {"blue_k8s-node1"}
    switch = ovn_nb.find_by_id("Logical_Switch", f"{CTRL}:LogicalSwitch:node1")
    assert switch is not None
    assert switch.other_config == {"subnet": "10.1.1.0/24"}
    assert switch.external_ids["k8s.ovn.org/owner"] == "node:node1"
    assert switch.external_ids["k8s.ovn.org/network"] == "blue"
    assert switch.external_ids["k8s.ovn.org/role"] == "primary"


def test_second_apply_writes_nothing(ovn_nb: NbClient, nb_server) -> None:  # type: ignore[no-untyped-def]
    apply(ovn_nb, NODE_OWNER, switch_rows())
    apply(ovn_nb, POD_OWNER, pod_rows())
    size = nb_server.db_path.stat().st_size
    again = apply_many(ovn_nb, {NODE_OWNER: switch_rows(), POD_OWNER: pod_rows()})
    assert not again.changed
    # ovsdb-server appends every committed transaction to its file: nothing was appended.
    assert nb_server.db_path.stat().st_size == size


def test_changed_column_and_stale_rows_converge(ovn_nb: NbClient) -> None:
    apply(ovn_nb, NODE_OWNER, switch_rows(port_names=("k8s-node1", "extra")))
    result = apply(ovn_nb, NODE_OWNER, switch_rows(subnet="10.1.2.0/24"))
    assert (result.updated, result.deleted, result.created) == (1, 1, 0)
    assert switch_port_names(ovn_nb, "blue_node1") == {"blue_k8s-node1"}
    assert nbctl(ovn_nb, "get", "Logical_Switch", "blue_node1", "other_config:subnet").strip() \
        == '"10.1.2.0/24"'


def test_drift_is_repaired(ovn_nb: NbClient) -> None:
    apply(ovn_nb, NODE_OWNER, switch_rows())
    nbctl(ovn_nb, "set", "Logical_Switch", "blue_node1", "other_config:subnet=9.9.9.0/24")
    nbctl(ovn_nb, "lsp-del", "blue_k8s-node1")
    result = apply(ovn_nb, NODE_OWNER, switch_rows())
    assert result.created == 1 and result.updated == 1
    assert switch_port_names(ovn_nb, "blue_node1") == {"blue_k8s-node1"}


def test_owners_share_a_parent_column_without_disturbing_each_other(ovn_nb: NbClient) -> None:
    apply(ovn_nb, NODE_OWNER, switch_rows())
    apply(ovn_nb, POD_OWNER, pod_rows())
    assert switch_port_names(ovn_nb, "blue_node1") == {"blue_k8s-node1", "blue_ns1_pod1"}
    # Re-applying the node owner (which does not list the pod port) keeps the pod port.
    assert not apply(ovn_nb, NODE_OWNER, switch_rows()).changed
    assert switch_port_names(ovn_nb, "blue_node1") == {"blue_k8s-node1", "blue_ns1_pod1"}
    # Deleting the pod owner unlinks and deletes only its port.
    result = delete_owner(ovn_nb, POD_OWNER)
    assert result.deleted == 1
    assert switch_port_names(ovn_nb, "blue_node1") == {"blue_k8s-node1"}


def test_foreign_rows_are_never_modified_or_deleted(ovn_nb: NbClient) -> None:
    nbctl(ovn_nb, "ls-add", "foreign", "--", "lsp-add", "foreign", "fp1",
          "--", "set", "Logical_Switch", "foreign", "other_config:subnet=10.1.1.0/24",
          "--", "set", "Logical_Switch", "foreign", "external_ids:k8s.ovn.org/owner=node:node1")
    # A foreign port inside an owned switch stays when the owner converges.
    apply(ovn_nb, NODE_OWNER, switch_rows())
    nbctl(ovn_nb, "lsp-add", "blue_node1", "foreign-port-in-owned-switch")
    before = nbctl(ovn_nb, "list", "Logical_Switch", "foreign")
    result = apply(ovn_nb, NODE_OWNER, switch_rows(subnet="10.1.9.0/24"))
    assert result.deleted == 0
    assert nbctl(ovn_nb, "list", "Logical_Switch", "foreign") == before
    assert "foreign-port-in-owned-switch" in nbctl(ovn_nb, "lsp-list", "blue_node1")
    delete_owner(ovn_nb, NODE_OWNER)
    assert nbctl(ovn_nb, "list", "Logical_Switch", "foreign") == before
    foreign = [row for row in ovn_nb.rows("Logical_Switch").values() if row.name == "foreign"]
    assert foreign and not is_owned(foreign[0].external_ids)


def test_link_into_foreign_row_is_refused(ovn_nb: NbClient) -> None:
    nbctl(ovn_nb, "ls-add", "foreign", "--", "set", "Logical_Switch", "foreign",
          f"external_ids:{ID_KEY}=lookalike")
    row = DesiredRow("Logical_Switch_Port", POD_OWNER.object_ids("Pod", "x"),
                     {"name": "x"}, links=(Link(Ref("Logical_Switch", "lookalike"), "ports"),))
    with pytest.raises(DesiredStateError, match="not owned by ovnk"):
        apply(ovn_nb, POD_OWNER, [row])
    assert "x" not in nbctl(ovn_nb, "lsp-list", "foreign")


def test_missing_parent_is_not_ready_and_writes_nothing(ovn_nb: NbClient) -> None:
    with pytest.raises(MissingReference, match="does not exist"):
        apply(ovn_nb, POD_OWNER, pod_rows())
    assert nbctl(ovn_nb, "--bare", "--columns=name", "list", "Logical_Switch_Port") == ""


def test_invalid_desired_state_is_rejected_before_writing(ovn_nb: NbClient) -> None:
    rows = switch_rows()
    with pytest.raises(DesiredStateError, match="described twice"):
        apply(ovn_nb, NODE_OWNER, rows + rows[:1])
    with pytest.raises(DesiredStateError, match="belongs to"):
        apply(ovn_nb, POD_OWNER, rows)
    with pytest.raises(DesiredStateError, match="no column"):
        apply(ovn_nb, NODE_OWNER, [DesiredRow("Logical_Switch", rows[0].ids, {"nope": 1})])
    assert nbctl(ovn_nb, "ls-list") == ""


def test_router_children_and_references(ovn_nb: NbClient) -> None:
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
    assert apply(ovn_nb, owner, rows).created == 3
    assert "0.0.0.0/0" in nbctl(ovn_nb, "lr-route-list", "blue_ovn_cluster_router")
    assert "169.254.0.11" in nbctl(ovn_nb, "lr-nat-list", "blue_ovn_cluster_router")
    assert not apply(ovn_nb, owner, rows).changed
    assert apply(ovn_nb, owner, rows[:1]).deleted == 2
    assert nbctl(ovn_nb, "lr-nat-list", "blue_ovn_cluster_router") == ""
    assert delete_owner(ovn_nb, owner).deleted == 1
    assert nbctl(ovn_nb, "lr-list") == ""


def test_restarted_client_writes_nothing(ovn_nb: NbClient, nb_server) -> None:  # type: ignore[no-untyped-def]
    apply_many(ovn_nb, {NODE_OWNER: switch_rows(), POD_OWNER: pod_rows()})
    ovn_nb.stop()
    size = nb_server.db_path.stat().st_size
    with NbClient([nb_server.remote]).start() as fresh:
        result = apply_many(fresh, {NODE_OWNER: switch_rows(), POD_OWNER: pod_rows()})
        assert not result.changed
        assert fresh.transactions == 0
    assert nb_server.db_path.stat().st_size == size


CRASHER = textwrap.dedent("""
    import os, sys
    sys.path.insert(0, {tests_dir!r})
    from test_declarative import NODE_OWNER, POD_OWNER, switch_rows, pod_rows
    from ovnk_core.ovn.declarative import apply
    from ovnk_core.ovn.nb import NbClient
    nb = NbClient([{remote!r}]).start()
    apply(nb, NODE_OWNER, switch_rows())
    os._exit(0)   # dies before the pod owner's transaction
""")


def test_crash_between_owners_converges_on_restart(ovn_nb: NbClient, nb_server,  # type: ignore[no-untyped-def]
                                                    request: pytest.FixtureRequest) -> None:
    tests_dir = str(request.path.parent)
    code = CRASHER.format(tests_dir=tests_dir, remote=nb_server.remote)
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert switch_port_names(ovn_nb, "blue_node1") == {"blue_k8s-node1"}
    result = apply_many(ovn_nb, {NODE_OWNER: switch_rows(), POD_OWNER: pod_rows()})
    assert (result.created, result.updated, result.deleted) == (1, 0, 0)
    assert switch_port_names(ovn_nb, "blue_node1") == {"blue_k8s-node1", "blue_ns1_pod1"}


def test_membership_in_another_owners_port_group_is_kept(ovn_nb: NbClient) -> None:
    group_owner = Owner(CTRL, "network")
    group = group_owner.object_ids("PortGroup", "isolation")
    apply(ovn_nb, NODE_OWNER, switch_rows())
    apply(ovn_nb, group_owner, [DesiredRow("Port_Group", group, {"name": "blue_isolation"})])
    member = pod_rows()[0]
    joined = DesiredRow(member.table, member.ids, member.columns,
                        links=(*member.links, Link(Ref.to("Port_Group", group), "ports")),
                        extra_external_ids=member.extra_external_ids)
    apply(ovn_nb, POD_OWNER, [joined])
    assert nbctl(ovn_nb, "--bare", "--columns=ports", "list", "Port_Group").strip()
    # Re-applying either owner alone keeps the membership.
    assert not apply(ovn_nb, POD_OWNER, [joined]).changed
    assert not apply(ovn_nb, group_owner,
                     [DesiredRow("Port_Group", group, {"name": "blue_isolation"})]).changed
    assert nbctl(ovn_nb, "--bare", "--columns=ports", "list", "Port_Group").strip()
    # Leaving the group is a link the member no longer declares.
    assert apply(ovn_nb, POD_OWNER, pod_rows()).unlinked == 1
    assert nbctl(ovn_nb, "--bare", "--columns=ports", "list", "Port_Group").strip() == ""


def test_reference_sets_cannot_be_declared_as_columns(ovn_nb: NbClient) -> None:
    owner = Owner(CTRL, "network")
    row = DesiredRow("Port_Group", owner.object_ids("PortGroup", "x"),
                     {"name": "x", "ports": []})
    with pytest.raises(DesiredStateError, match="reference set, maintained by links"):
        apply(ovn_nb, owner, [row])
    bad_link = DesiredRow("Logical_Switch_Port", owner.object_ids("Pod", "y"), {"name": "y"},
                          links=(Link(Ref("Logical_Switch", "z"), "name"),))
    with pytest.raises(DesiredStateError, match="not a reference set"):
        apply(ovn_nb, owner, [bad_link])
    orphan = DesiredRow("Logical_Switch_Port", owner.object_ids("Pod", "y"), {"name": "y"})
    with pytest.raises(DesiredStateError, match="not a root table"):
        apply(ovn_nb, owner, [orphan])
