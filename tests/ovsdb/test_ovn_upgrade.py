"""OVN switched under a running writer: NB converted to the other OVN's schema (as ``ovn-ctl``
converts it at start), the writer reconnects, reads the new schema, says what NB supports now,
and rendering for it converges: upstream's rows where 26.03 can hold them (ACL ``tier``, the
Layer2 transit router peering its gateway routers with no ``<P>join`` switch), today's on
23.03, and every row that stays keeps its UUID."""

from __future__ import annotations

import dataclasses
import ipaddress
from pathlib import Path
from typing import Any

from ovnk_isolation.ovn_acls import OWNER as ISOLATION_OWNER
from ovnk_isolation.ovn_acls import build_isolation_rows
from ovnk_layer2.topology import Layer2Topology

from ovnk_core.config.values import ClusterSubnet
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.capabilities import NbCapabilities
from ovnk_core.ovn.declarative import DesiredRow, apply_many
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState
from ovnk_core.testing.capabilities import both_nb_schemas
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import read_rows
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.owners import network_owner, node_owner

net = ipaddress.ip_network
TOPOLOGY = Layer2Topology(udn_config())
NETINFO = NetInfo(name="ns1_blue", topology="layer2", role="primary", mtu=1400,
                  subnets=(ClusterSubnet(net("10.200.0.0/16"), 16),),
                  join_subnets=(net("100.65.0.0/16"),), transit_subnets=(net("100.88.0.0/16"),),
                  nad_key="ns1/blue")
NETWORK = NetworkState(NETINFO, 1, (net("169.254.0.0/17"),), (net("100.64.0.0/16"),),
                       (16711684, 16715780))
NODE = NodeState("ovn-worker", (), 2, "chassis-1", GatewayConfig(
    "shared", "breth0", mac_from_ip("172.18.0.2"), ("172.18.0.2/16",), ("172.18.0.1",)))
TABLES = ("Logical_Switch", "Logical_Switch_Port", "Logical_Router", "Logical_Router_Port",
          "ACL", "NAT", "Logical_Router_Static_Route")


def desired(nb: NbCapabilities) -> dict[Owner, list[DesiredRow]]:
    network = dataclasses.replace(NETWORK, nb=nb)
    return {network_owner(NETINFO): TOPOLOGY.build_network(network),
            node_owner(NETINFO, NODE.name): TOPOLOGY.build_node(network, NODE),
            ISOLATION_OWNER: build_isolation_rows(["10.244.0.2"], tiers=nb.acl_tier)}


def snapshot(remote: str) -> dict[str, dict[str, Any]]:
    """Table → row name (else its ``k8s.ovn.org/id``) → row."""
    found: dict[str, dict[str, Any]] = {}
    for table in TABLES:
        for row in read_rows(remote, table):
            key = getattr(row, "name", "") or row.external_ids.get("k8s.ovn.org/id", "")
            found.setdefault(table, {})[str(key)] = row
    return found


def switch_ovn(server: OvsdbServer, schema: Path) -> OvsdbServer:
    """The server restarted on ``schema`` (its database converted), on the same socket."""
    server.stop()
    return dataclasses.replace(server, schema=schema, proc=None).start()


def test_switching_ovn_under_a_running_writer_converges_keeping_unchanged_rows(
        tmp_path: Path) -> None:
    old_schema, new_schema = both_nb_schemas()
    server = OvsdbServer("nb", tmp_path, old_schema).start()
    told: list[NbCapabilities] = []
    writer = NbWriter([server.remote]).start()
    writer.on_capabilities_changed = told.append
    try:
        legacy = writer.capabilities
        assert (legacy.acl_tier, legacy.router_peering) == (False, False)
        apply_many(writer, desired(legacy))
        before = snapshot(server.remote)
        assert "ns1_blue_join" in before["Logical_Switch"]

        server = switch_ovn(server, new_schema)  # upgrade: 23.03's NB -> 26.03's
        # the zone checks NB every second: the first check finds the connection gone, a
        # later one reconnects and reads the new schema
        wait_until(lambda: writer.check() is None, timeout=30, what="NB back")
        current = writer.capabilities
        assert told == [current] and (current.acl_tier, current.router_peering) == (True, True)
        assert apply_many(writer, desired(current)).changed
        assert not apply_many(writer, desired(current)).changed  # converged
        after = snapshot(server.remote)
        # upstream's rows: no join switch or its ports; the router ports peer; tier 0
        assert "ns1_blue_join" not in after["Logical_Switch"]
        assert not any(name.startswith(("jtor-", "jtotr-"))
                       for name in after["Logical_Switch_Port"])
        rtotr = after["Logical_Router_Port"]["rtotr-GR_ns1_blue_ovn-worker"]
        trtor = after["Logical_Router_Port"]["trtor-GR_ns1_blue_ovn-worker"]
        assert (rtotr.peer, trtor.peer) == ([trtor.name], [rtotr.name])
        assert {acl.tier for acl in after["ACL"].values()} == {0}
        # nothing that stays was deleted and made again: every kept row has its UUID
        for table, rows in after.items():
            for key, row in rows.items():
                if key in before.get(table, {}):
                    assert row.uuid == before[table][key].uuid, (table, key)
        assert {t: set(r) for t, r in after.items()} == {
            t: set(r) - {"ns1_blue_join", "jtor-GR_ns1_blue_ovn-worker",
                         "jtotr-GR_ns1_blue_ovn-worker"} for t, r in before.items()}

        server = switch_ovn(server, old_schema)  # and back: 23.03's rows again
        wait_until(lambda: writer.check() is None, timeout=30, what="NB back")
        assert told[-1] == legacy
        apply_many(writer, desired(writer.capabilities))
        again = snapshot(server.remote)
        assert "ns1_blue_join" in again["Logical_Switch"]
        assert again["Logical_Router_Port"]["rtotr-GR_ns1_blue_ovn-worker"].peer == []
    finally:
        writer.stop()
        server.stop()
