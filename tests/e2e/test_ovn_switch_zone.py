"""OVN upgraded under a running zone controller: its NB converted from 23.03's schema to
26.03's (as ``ovn-ctl`` converts it at start) and served again on the same socket.  The zone
notices on its next check of NB (the zone process checks every second), renders every network
and feature again for what 26.03 supports, and converges to upstream's rows: the Layer2
transit router peers its gateway routers (no ``<P>join`` switch) and the isolation ACLs carry
tier 0.  Rows that stay keep their UUIDs; what 23.03 needed is removed."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest
from ovnk_local.testing.control_plane import ControlPlane, settled

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NAMESPACES, PODS, UDNS
from ovnk_core.ovn.nb import NbClient, committed_external_ids
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.snapshot import OWNED_TABLES, committed_names
from ovnk_core.testing.capabilities import both_nb_schemas
from ovnk_core.testing.ovsdb_fixtures import read_rows
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

pytestmark = pytest.mark.e2e
JOIN = "l2p_net_join"


def row_uuids(nb: NbClient) -> dict[tuple[str, str], uuid.UUID]:
    """(table, k8s.ovn.org/id) → UUID of every owned row."""
    found = {}
    for table in OWNED_TABLES:
        for row in nb.row_list(table):
            ids = committed_external_ids(row) or {}
            if "k8s.ovn.org/id" in ids:
                found[(table, ids["k8s.ovn.org/id"])] = row.uuid
    return found


def test_a_zone_converges_to_upstreams_rows_when_its_ovn_is_upgraded(
        client: KubeClient, plane: ControlPlane, tmp_path: Path) -> None:
    old_schema, new_schema = both_nb_schemas()
    server = OvsdbServer("nb", tmp_path / "nb", old_schema).start()
    plane.start_manager()
    client.create(NAMESPACES, {"metadata": {"name": "l2p",
                                            "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "l2p"},
                         "spec": {"topology": "Layer2", "layer2": {
                             "role": "Primary", "subnets": ["10.150.0.0/16"]}}})
    client.create(PODS, {"metadata": {"name": "a", "namespace": "l2p"},
                         "spec": {"nodeName": "ovn-worker",
                                  "containers": [{"name": "c", "image": "agnhost"}]}})
    zone = plane.start_zone(server.remote)
    try:
        wait_until(lambda: {JOIN, "GR_l2p_net_ovn-worker", "l2p.net_l2p_a"} <=
                   committed_names(zone.nb, "Logical_Switch")
                   | committed_names(zone.nb, "Logical_Router")
                   | committed_names(zone.nb, "Logical_Switch_Port"), timeout=60)
        before = settled(zone)
        uuids = row_uuids(zone.nb)
        assert not zone.writer.capabilities.router_peering

        server.stop()  # the upgrade: NB converted to 26.03's schema, served again
        server = dataclasses.replace(server, schema=new_schema, proc=None).start()
        # what the zone process's readiness loop does every second
        wait_until(lambda: zone.writer.check() is None and
                   zone.writer.capabilities.router_peering, timeout=60, what="26.03's NB")
        wait_until(lambda: JOIN not in committed_names(zone.nb, "Logical_Switch"), timeout=60)
        after = settled(zone)

        gone = set(before) - set(after)
        assert gone and {table for table, _id in gone} == {"Logical_Switch",
                                                             "Logical_Switch_Port"}
        assert all(key[1].endswith((":LogicalSwitch:join", ":JoinToRouterPort:GR_l2p_net_"
                                    "ovn-worker", ":JoinToTransitRouterPort:GR_l2p_net_"
                                    "ovn-worker")) or "ovn-worker2" in key[1] for key in gone)
        # nothing else new (only columns changed): the peered trtor- ports' chassis pinning
        assert {table for table, _id in set(after) - set(before)} == {"Gateway_Chassis"}
        ports = {row.name: row for row in zone.nb.row_list("Logical_Router_Port")}
        assert ports["rtotr-GR_l2p_net_ovn-worker"].peer == ["trtor-GR_l2p_net_ovn-worker"]
        # (a fresh reader: the test's own IDL keeps the schema it started with)
        # upstream's tiers: isolation 0, NetworkPolicy's always-present ACLs 2
        tiers = {(acl.external_ids["k8s.ovn.org/owner-type"], acl.tier)
                 for acl in read_rows(server.remote, "ACL")}
        assert ("UDNIsolation", 0) in tiers and ("NetpolDefault", 2) in tiers
        assert all(tier == (2 if owner_type.startswith("Netpol") else 0)
                   for owner_type, tier in tiers)
        kept = row_uuids(zone.nb)
        assert all(kept[key] == uuids[key] for key in kept if key in uuids), \
            "a kept row was made again"
    finally:
        zone.stop()
        server.stop()
