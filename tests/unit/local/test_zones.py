"""``ovnk local`` with per-node zones: each node's OVN and zone controller records, and what
``restart`` means then (pure: the records of a state, no process started)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.state import ClusterState
from ovnk_local.zones import PER_NODE, controller_record, ovn_records

pytestmark = pytest.mark.unit

NODES = ["ovn-worker", "ovn-worker2"]


def test_each_node_has_its_own_databases_northd_and_zone_controller(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path)
    state = ClusterState(nodes=NODES, zones=PER_NODE)
    records = {r.name: r for r in cluster._zone_records(state)}
    assert sorted(records) == sorted(f"{n}/{d}" for n in NODES
                                     for d in ("nb-ovsdb", "sb-ovsdb", "northd"))
    zone = cluster.ovn_dir / "ovn-worker2"
    northd = records["ovn-worker2/northd"]
    assert f"--ovnnb-db=unix:{zone}/nb.sock" in northd.args
    assert f"--ovnsb-db=unix:{zone}/sb.sock" in northd.args
    assert northd.requires == ["ovn-worker2/nb-ovsdb", "ovn-worker2/sb-ovsdb"]
    assert all(r.supervised and r.role == "node" for r in records.values())
    controller = controller_record(cluster.ovn_dir, cluster.log_dir, tmp_path / "ready",
                                   cluster.config_file, tmp_path / "kubeconfig",
                                   ["--enable-multi-network=true"], "ovn-worker2")
    # the zone's own options come after the cluster's flags
    assert controller.args[-6:] == ["--zone", "ovn-worker2", "--nb-address",
                                    f"unix:{zone}/nb.sock", "--sb-address",
                                    f"unix:{zone}/sb.sock"]
    assert controller.requires == ["ovn-worker2/nb-ovsdb"]
    assert ovn_records(cluster.ovn_dir, cluster.log_dir, cluster.run_dir, "x")[0].ready_socket \
        == str(cluster.ovn_dir / "x" / "nb.sock")
    # the single zone: none of them
    assert cluster._zone_records(ClusterState(nodes=NODES)) == []


def test_restart_means_every_zones_one(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path)
    state = ClusterState(nodes=NODES, zones=PER_NODE)
    state.processes = {r.name: r for r in cluster._zone_records(state)}
    for node in NODES:
        record = controller_record(cluster.ovn_dir, cluster.log_dir, tmp_path / node,
                                   cluster.config_file, tmp_path / "kubeconfig", [], node)
        state.processes[record.name] = record
    assert cluster._restart_targets(state, "controller") == \
        ["ovn-worker/controller", "ovn-worker2/controller"]
    assert cluster._restart_targets(state, "northd") == ["ovn-worker/northd",
                                                         "ovn-worker2/northd"]
    assert cluster._restart_targets(state, "ovn-worker2/controller") == \
        ["ovn-worker2/controller"]
    everything = cluster._restart_targets(state, None)
    assert "controller" not in everything and "cluster-manager" in everything
    assert {"ovn-worker/controller", "ovn-worker2/controller"} <= set(everything)
    # the single zone keeps its one controller and OVN
    single = ClusterState(nodes=NODES)
    assert cluster._restart_targets(single, "controller") == ["controller"]
    assert cluster._restart_targets(single, "northd") == ["northd"]
