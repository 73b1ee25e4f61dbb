"""Load balancer groups: the one table whose rows carry no external_ids, written for real.

A ``Load_Balancer_Group`` is identified by its unique name; switches and routers
hold it through a column they declare (it belongs to the network, they to the
node).  These tests check, against a real NB, that groups are created, held,
kept across a writer restart without a write, adopted rather than duplicated,
and deleted with their owner — also when they were read back from NB first.
"""

from __future__ import annotations

import pytest

from ovnk_core.ovn.declarative import (
    DesiredRow,
    DesiredStateError,
    Link,
    Ref,
    apply,
    apply_many,
    delete_owner,
)
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.testing.ovsdb_fixtures import nbctl

CTRL = "blue-network-controller"
NETWORK = Owner(CTRL, "network")
NODE = Owner(CTRL, "node:node1")
SERVICE = Owner(CTRL, "ns1/web")
GROUP_NAME = "blue_clusterLBGroup"
GROUP = NETWORK.object_ids("LoadBalancerGroup", GROUP_NAME, primary=GROUP_NAME)
GROUP_REF = Ref.to("Load_Balancer_Group", GROUP)


def network_rows() -> list[DesiredRow]:
    return [DesiredRow("Load_Balancer_Group", GROUP, {"name": GROUP_NAME})]


def node_rows() -> list[DesiredRow]:
    switch = NODE.object_ids("LogicalSwitch", "node1", network="blue")
    return [DesiredRow("Logical_Switch", switch,
                       {"name": "blue_node1", "load_balancer_group": [GROUP_REF]})]


def service_rows(vip: str = "10.96.0.10:80") -> list[DesiredRow]:
    ids = SERVICE.object_ids("Service", "Service_ns1/web_TCP_cluster", network="blue")
    return [DesiredRow("Load_Balancer", ids,
                       {"name": "blue_Service_ns1/web_TCP_cluster", "protocol": "tcp",
                        "vips": {vip: "10.1.1.5:8080"}},
                       links=(Link(GROUP_REF, "load_balancer"),))]


def group_uuid(remote: str) -> str:
    return nbctl(remote, "--bare", "--columns=_uuid", "find", "Load_Balancer_Group",
                 f"name={GROUP_NAME}")


def render(writer: NbWriter) -> None:
    apply(writer, NETWORK, network_rows())
    apply_many(writer, {NODE: node_rows(), SERVICE: service_rows()})


def test_a_group_is_created_held_by_switches_and_filled_by_load_balancers(
        nb_writer: NbWriter) -> None:
    render(nb_writer)
    remote = nb_writer.remote
    group = group_uuid(remote)
    assert nbctl(remote, "--bare", "--columns=load_balancer_group", "find", "Logical_Switch",
                 "name=blue_node1") == group
    lb = nbctl(remote, "--bare", "--columns=_uuid", "find", "Load_Balancer",
               "name=blue_Service_ns1/web_TCP_cluster")
    assert nbctl(remote, "--bare", "--columns=load_balancer", "list", "Load_Balancer_Group",
                 group) == lb
    # nothing changed: nothing written
    assert not apply_many(nb_writer, {NETWORK: network_rows(), NODE: node_rows(),
                                      SERVICE: service_rows()}).changed


def test_a_restarted_writer_finds_its_groups_and_writes_nothing(
        nb_writer: NbWriter) -> None:
    render(nb_writer)
    with NbWriter([nb_writer.remote], timeout=30).start() as again:
        result = apply_many(again, {NETWORK: network_rows(), NODE: node_rows(),
                                    SERVICE: service_rows()})
        assert not result.changed
        # and a periodic read of NB does not mistake the group for someone else's change
        assert again.resync() == set()
        delete_owner(again, SERVICE)
        delete_owner(again, NODE)
        assert delete_owner(again, NETWORK).deleted == 1
    assert group_uuid(nb_writer.remote) == ""


def test_a_group_of_that_name_made_by_someone_else_is_adopted_not_duplicated(
        nb_writer: NbWriter) -> None:
    remote = nb_writer.remote
    nbctl(remote, "create", "Load_Balancer_Group", f"name={GROUP_NAME}")
    before = group_uuid(remote)
    nb_writer.resync()
    render(nb_writer)
    assert group_uuid(remote) == before
    delete_owner(nb_writer, SERVICE)
    delete_owner(nb_writer, NODE)
    delete_owner(nb_writer, NETWORK)
    assert group_uuid(remote) == ""


def test_an_unclaimed_group_is_deleted_once_claimed_by_the_owner_that_goes(
        nb_writer: NbWriter) -> None:
    render(nb_writer)
    delete_owner(nb_writer, SERVICE)
    delete_owner(nb_writer, NODE)
    with NbWriter([nb_writer.remote], timeout=30).start() as again:
        # read back from NB, the group has no owner: deleting the network alone misses it
        assert again.claim("Load_Balancer_Group", GROUP_NAME, NETWORK)
        assert not again.claim("Load_Balancer_Group", GROUP_NAME, NETWORK)
        assert delete_owner(again, NETWORK).deleted == 1
    assert group_uuid(nb_writer.remote) == ""


def test_a_group_row_must_be_named_by_its_primary_id(nb_writer: NbWriter) -> None:
    with pytest.raises(DesiredStateError, match="identified by its name"):
        apply(nb_writer, NETWORK, [DesiredRow("Load_Balancer_Group", GROUP,
                                              {"name": "other"})])


def test_other_reference_sets_are_still_refused_as_columns(nb_writer: NbWriter) -> None:
    switch = NODE.object_ids("LogicalSwitch", "node1", network="blue")
    with pytest.raises(DesiredStateError, match="reference set"):
        apply(nb_writer, NODE, [DesiredRow("Logical_Switch", switch,
                                           {"name": "blue_node1", "ports": []})])
