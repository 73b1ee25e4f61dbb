"""A third-party feature owns NB rows and a host nftables table, with no change in ovnk_core.

The feature ``podset`` (distribution ``ovnk-podset-demo`` in ``dists/``, entry point in
``ovnk.features``, installed with pip into a directory of its own) is enabled by name
(``--enable-feature=podset``) and runs through the hooks only:

* zone: the zone-controller process (``ZoneApp``, as ``ovnk controller`` builds it) against
  a real NB ovsdb-server, with the cluster manager allocating the pods' addresses; the
  feature writes an Address_Set per pod under its own owner; the zone controller
  reconciles pods, resyncs NB and restarts around those rows without touching them; a
  restart without the feature removes them and nothing else;
* node: the node agent's feature controllers (``NodeFeatureControllers``, as ``ovnk node``
  builds them) in a throwaway network namespace with real nftables: the feature's table
  ``inet ovnk-feature-podset`` exists while it is enabled and is gone after a restart
  without it; the core's table and anyone else's are untouched.
"""

from __future__ import annotations

import functools
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import component_client
from ovnk_local.testing.control_plane import ControlPlane, cluster_with_nodes

from ovnk_core.config import Config
from ovnk_core.contexts import NodeContext, feature_table_name
from ovnk_core.identities import CONTROLLER_USER, NODES_GROUP, node_agent_user
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import NAMESPACES, PODS
from ovnk_core.node import nft
from ovnk_core.node.feature_controllers import NodeFeatureControllers
from ovnk_core.node.gateway_host import GATEWAY_TABLE, TABLE_FAMILY, build_host_table
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import OWNER_CONTROLLER_KEY, OWNER_KEY
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.snapshot import Snapshot, snapshot
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import nbctl
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.app import ZoneApp

POD_NETWORKS = "k8s.ovn.org/pod-networks"
FEATURE_CONTROLLER = "podset-feature-controller"
PODS_ON_NODES = {"web": "ovn-worker", "db": "ovn-worker2"}


class RunningZone:
    """``ZoneApp.run`` on a thread, as the ``ovnk controller`` process runs it."""

    def __init__(self, handle: ServerHandle, nb_remote: str, config: Config,
                 ready_file: Path) -> None:
        client = component_client(handle, CONTROLLER_USER)
        self.app = ZoneApp(config, client, PluginHost.load(config),
                           NbWriter([nb_remote]).start(), identity="t")
        self.ready_file = ready_file
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.app.run, args=(self.stopping, ready_file),
                                       daemon=True)
        self.thread.start()
        wait_until(lambda: ready_file.exists() or not self.thread.is_alive(), timeout=60)
        assert ready_file.exists(), "the zone controller did not start"

    def idle(self) -> bool:
        zone = self.app.zone
        return zone.network_controller.queue.idle() and zone.pod_controller.queue.idle()

    def stop(self) -> None:
        """Stop the process (again: nothing happens)."""
        self.stopping.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def feature_rows(nb: NbClient) -> dict[str, dict[str, Any]]:
    """The feature's Address_Sets by name, with their addresses and external_ids."""
    rows = {}
    for row in nb.row_list("Address_Set"):
        ids = dict(row.external_ids)
        if ids.get(OWNER_CONTROLLER_KEY) == FEATURE_CONTROLLER:
            rows[row.name] = {"addresses": sorted(row.addresses), "external_ids": ids}
    return rows


def core_rows(nb: NbClient) -> Snapshot:
    """Every ovnk-owned row that is not the feature's."""
    return {key: row for key, row in snapshot(nb).items()
            if not key[1].startswith(f"{FEATURE_CONTROLLER}:")}


def pod_ips(client: KubeClient, name: str) -> list[str] | None:
    pod = client.get(PODS, name, "demo")
    raw = (pod["metadata"].get("annotations") or {}).get(POD_NETWORKS)
    if not raw:
        return None
    return sorted(ip.split("/")[0] for entry in json.loads(raw).values()
                  for ip in entry["ip_addresses"])


@pytest.fixture
def admin(kube_apiserver: ServerHandle) -> KubeClient:
    return cluster_with_nodes(kube_apiserver)


@pytest.fixture
def plane(admin: KubeClient, kube_apiserver: ServerHandle) -> Iterator[ControlPlane]:
    running = ControlPlane(kube_apiserver, udn_config())
    yield running
    running.stop()


@pytest.fixture
def zones(kube_apiserver: ServerHandle, nb_server: OvsdbServer, tmp_path: Path
          ) -> Iterator[Callable[[Config], RunningZone]]:
    """``zones(config)`` starts a zone-controller process on the test's NB; all are stopped
    at teardown."""
    started: list[RunningZone] = []

    def start(config: Config) -> RunningZone:
        zone = RunningZone(kube_apiserver, nb_server.remote, config,
                           tmp_path / f"zone-{len(started)}.ready")
        started.append(zone)
        return zone

    yield start
    for zone in started:
        zone.stop()


@pytest.mark.ovsdb
def test_feature_rows_live_while_enabled_untouched_by_the_zone_and_go_when_disabled(
        admin: KubeClient, plane: ControlPlane, zones: Callable[[Config], RunningZone],
        nb_server: OvsdbServer, ovn_nb: NbClient, on_sys_path: Callable[[str], Path]) -> None:
    on_sys_path("podset")
    plane.start_manager()  # allocates the pods' addresses
    admin.create(NAMESPACES, {"metadata": {"name": "demo"}})
    for name, node in PODS_ON_NODES.items():
        admin.create(PODS, {"metadata": {"name": name, "namespace": "demo"},
                            "spec": {"nodeName": node,
                                     "containers": [{"name": "c", "image": "agnhost"}]}},
                     "demo")
    ips: dict[str, list[str]] = {}
    for name in PODS_ON_NODES:
        found = wait_until(functools.partial(pod_ips, admin, name))
        assert found is not None
        ips[name] = found

    # the bundled isolation and networkpolicy features are left out: podset's rows alone
    # are the subject
    enabled = zones(udn_config(extra_features="podset",
                               disabled_features="isolation,networkpolicy"))
    assert [c.name for c in enabled.app.plugin_controllers] == ["podset-zone-controller"]
    wanted = {f"podset_demo_{name}": ips[name] for name in PODS_ON_NODES}
    wait_until(lambda: {n: r["addresses"] for n, r in feature_rows(ovn_nb).items()} == wanted,
               timeout=30, what="the feature's address sets")
    ids = feature_rows(ovn_nb)["podset_demo_web"]["external_ids"]
    assert (ids[OWNER_CONTROLLER_KEY], ids[OWNER_KEY]) == (FEATURE_CONTROLLER,
                                                          "feature:podset:pod:demo/web")
    # The core rendered its own rows next to them: the pods' ports on the default network.
    wait_until(lambda: {"demo_web", "demo_db"} <= {
        row.name for row in ovn_nb.row_list("Logical_Switch_Port")}, timeout=30)

    # While the feature is enabled the zone never deletes nor repairs its rows.  Its own
    # controller is stopped first, so nothing could put back what the zone removed; then a
    # row of it is edited by hand, and the zone reconciles the pods (directly, through an
    # informer event, through its startup sync) and resyncs NB (which repairs drifted rows).
    enabled.app.plugin_controllers[0].stop()
    nbctl(nb_server.remote, "set", "Address_Set", "podset_demo_web", 'addresses="192.0.2.99"')
    edited = {**wanted, "podset_demo_web": ["192.0.2.99"]}
    wait_until(lambda: {n: r["addresses"] for n, r in feature_rows(ovn_nb).items()} == edited)
    zone = enabled.app.zone
    zone.reconcile_pod("demo/web")
    reconciled = zone.pod_controller.stats.reconciles
    admin.patch(PODS, "web", {"metadata": {"labels": {"touched": "yes"}}}, "demo")
    zone.sync_pods()
    zone.sync_networks()
    drifted = zone.resync_nb()
    assert {owner.controller for owner in drifted} == {FEATURE_CONTROLLER}
    wait_until(lambda: zone.pod_controller.stats.reconciles >= reconciled + 2
               and enabled.idle())
    assert {n: r["addresses"] for n, r in feature_rows(ovn_nb).items()} == edited
    # A pod that goes loses its ports (the zone's rows), not the feature's rows of it:
    # removing those is the feature's business.
    admin.delete(PODS, "db", "demo")
    wait_until(lambda: "demo_db" not in {
        row.name for row in ovn_nb.row_list("Logical_Switch_Port")}, timeout=30)
    wait_until(enabled.idle)
    assert {n: r["addresses"] for n, r in feature_rows(ovn_nb).items()} == edited
    enabled.stop()
    before = core_rows(ovn_nb)
    assert before

    # Restarted without the feature: its rows are gone when the zone is running, the
    # core's rows are exactly what they were.
    disabled = zones(udn_config(disabled_features="isolation,networkpolicy"))
    assert disabled.app.plugin_controllers == []
    wait_until(lambda: not feature_rows(ovn_nb), timeout=30)
    wait_until(disabled.idle)
    assert core_rows(ovn_nb) == before


def nft_tables(netns: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Every table of the namespace with its objects (nft JSON)."""
    return {(family, name): nft.list_table(family, name, netns)
            for family, name in nft.list_tables(netns)}


def start_node_features(config: Config, client: KubeClient, netns: str
                        ) -> tuple[NodeFeatureControllers, InformerFactory]:
    """The feature controllers of node ovn-worker, built and started as ``ovnk node`` does."""
    host = PluginHost.load(config)
    informers = InformerFactory(client)
    recorder = EventRecorder(client, "ovnkube-node", "ovn-worker")
    features = NodeFeatureControllers(host, NodeContext(config, client, informers, recorder,
                                                        "ovn-worker", netns))
    informers.start()
    informers.wait_for_sync(30)
    features.start()
    return features, informers


@pytest.mark.netns
def test_feature_table_lives_while_enabled_and_goes_when_disabled(
        admin: KubeClient, kube_apiserver: ServerHandle, netns: str,
        on_sys_path: Callable[[str], Path]) -> None:
    on_sys_path("podset")
    client = component_client(kube_apiserver, node_agent_user("ovn-worker"), (NODES_GROUP,))
    table = ("inet", feature_table_name("podset"))
    assert table == ("inet", "ovnk-feature-podset")
    # The core's own table (the shared gateway's), someone else's, and the table of a
    # feature that is not enabled.
    nft.apply_table(build_host_table(["169.254.0.0/17"], "breth0"), netns)
    subprocess.run(["ip", "netns", "exec", netns, "nft",
                    "add table inet filter; add chain inet filter c { type filter hook input "
                    "priority 0; }; add rule inet filter c tcp dport 22 accept"], check=True)
    nft.apply_table(nft.NftTable("inet", feature_table_name("gone"),
                                 chains=(nft.NftChain("c"),)), netns)
    others = {key: value for key, value in nft_tables(netns).items()
              if key in {(TABLE_FAMILY, GATEWAY_TABLE), ("inet", "filter")}}
    assert len(others) == 2

    # the bundled isolation feature (its own table) is left out: podset's table only
    features, informers = start_node_features(
        udn_config(extra_features="podset", disabled_features="isolation"), client, netns)
    try:
        assert [c.name for c in features.controllers] == ["podset-node-controller"]
        wait_until(lambda: table in nft_tables(netns), timeout=15)
        chains = [item["chain"] for item in nft.list_table(*table, netns) if "chain" in item]
        assert [(c["name"], c.get("hook"), c.get("policy")) for c in chains] == [
            ("forward", "forward", "accept")]
        assert ("inet", "ovnk-feature-gone") not in nft_tables(netns)  # not enabled: removed
    finally:
        features.stop()
        informers.stop()
    assert table in nft_tables(netns)  # stopping leaves it: an agent restart keeps it

    features, informers = start_node_features(udn_config(disabled_features="isolation"),
                                              client, netns)
    try:
        assert features.controllers == []
        current = nft_tables(netns)
        assert table not in current
        assert {key: value for key, value in current.items() if key in others} == others
        assert set(current) == set(others)
    finally:
        features.stop()
        informers.stop()
