"""Benchmark: UDN isolation with N primary-UDN pods, node side (nftables) and zone side (NB).

Node side (root; a throwaway network namespace, removed at the end), through the node
agent's own ``HostIsolation`` controller fed from a static pod cache (no API server):

* **full sync**: a fresh controller's start-up sync (``initial_sync``: kubelet cgroup,
  every pod's elements, the table compared, then the whole table written in one nftables
  transaction) into a namespace without the table, against two floors fed the same
  ruleset text (the script ``nft.apply_table`` sends): one ``nft -f`` process, and one
  fresh libnftables context in this process (created, ``cmd``, freed);
* **per-pod update**: pods added, their open ports changed, pods deleted, one at a time
  through the controller's ``reconcile`` (the incremental element adds/deletes), against
  the same element commands sent to copies of the table by one ``nft -f`` process each, by
  one fresh libnftables context each (created, ``cmd``, freed) and by one ``cmd`` of a
  libnftables context kept open in the namespace.

Zone side (standalone NB ovsdb-servers): the default network, one node and N isolated
pods' ports already written; then the ``SecondaryPods`` port group, its five ACLs, the N
ports' membership and the OpenPort ACLs of pods with open ports, built by the plugins'
``ovnk_zone_pod_port`` hook and written with ``apply_many`` through ``NbWriter``, once as
one transaction and once as the zone controller does it (the group, then one transaction
per pod), against one ``ovn-nbctl`` invocation creating the same rows.

Every run checks itself: the NBs are compared row by row, a restarted writer must write
nothing, deleting everything leaves no owned row, and no nft element, table or namespace
is left.

    python bench/isolation.py --pods 1000 --updates 200 --repeat 5

prints a table and writes ``bench/results/isolation-<time>.json``.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from nb_digest import digest, digest_difference
from nbctl_floor import nbctl_commands, run_nbctl
from ovnk_isolation import host_rules
from ovnk_isolation.host_isolation import HostIsolation
from ovnk_isolation.ovn_acls import OWNER as ISOLATION_OWNER
from ovnk_isolation.ovn_acls import build_isolation_rows
from ovnk_layer3.desired import build_network, build_node, build_pod
from results_file import write_results

from ovnk_core.config import Config
from ovnk_core.contexts import NodeContext
from ovnk_core.kube.resources import object_key
from ovnk_core.networks.addressing import mac_from_ip, management_ip
from ovnk_core.node import nft
from ovnk_core.node.netns import run_in_netns
from ovnk_core.node.nft import cgroup2_root as cgroup2_mount
from ovnk_core.ovn.declarative import DesiredRow, apply_many
from ovnk_core.ovn.install import command, schema, use_development_default
from ovnk_core.ovn.jsonrpc import OvsdbConnection
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.plugins import PluginHost
from ovnk_core.render_state import GatewayConfig, NodeState, PodAttachment
from ovnk_core.testing.configs import udn_config
from ovnk_core.zone.networks import default_network
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner
from ovnk_core.zone.pod_port_extras import merge_pod_port

NODE = "node-0"
NAMESPACE = "udn"
TABLE = "ovn-kubernetes"
OPEN_PORTS = "- protocol: tcp\n  port: 8080\n- protocol: icmp\n"
OPEN_PORTS_2 = "- protocol: udp\n  port: 53\n"


# -- the pods --------------------------------------------------------------------------------
def pod_ip(index: int, base: int = 244) -> str:
    return str(ipaddress.ip_address(f"10.{base}.0.0") + 3 + index)


def has_open_ports(index: int) -> bool:
    return index % 10 == 0  # one pod in ten: tcp/8080 and icmp


def make_pod(name: str, ip: str, open_ports: str | None) -> dict[str, Any]:
    """A running primary-UDN pod on NODE as the node agent and zone controller see it."""
    entry = {"ip_addresses": [f"{ip}/16"], "mac_address": mac_from_ip(ip),
             "role": "infrastructure-locked"}
    annotations = {"k8s.ovn.org/pod-networks": json.dumps({"default": entry})}
    if open_ports is not None:
        annotations["k8s.ovn.org/open-default-ports"] = open_ports
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": f"uid-{name}",
                         "annotations": annotations},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "pause"}]},
            "status": {"phase": "Running", "podIPs": [{"ip": ip}]}}


def base_pods(count: int) -> list[dict[str, Any]]:
    return [make_pod(f"pod-{i}", pod_ip(i), OPEN_PORTS if has_open_ports(i) else None)
            for i in range(count)]


# -- node side -------------------------------------------------------------------------------
class StaticPods:
    """The node agent's pod informer, filled by the benchmark (no API server)."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.items = {object_key(pod): pod for pod in pods}

    def add_handler(self, _handler: Callable[..., None]) -> None:
        pass

    def peek(self, key: str) -> dict[str, Any] | None:
        return self.items.get(key)

    def peek_all(self) -> list[dict[str, Any]]:
        return list(self.items.values())


class StaticInformers:
    def __init__(self, pods: StaticPods) -> None:
        self.pods = pods

    def get(self, _resource: Any, **_selectors: Any) -> StaticPods:
        return self.pods


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def event(self, _obj: Any, _kind: str, reason: str, message: str) -> None:
        self.events.append((reason, message))


def agent(config: Config, pods: StaticPods, netns: str, kubelet_path: str | None
          ) -> HostIsolation:
    """The isolation controller as the node agent builds it (``HostIsolationHooks``);
    ``kubelet_path`` ``None``: as on a node without cgroup v2 (no kubelet rule)."""
    context = NodeContext(config, None, StaticInformers(pods), Recorder(),  # type: ignore
                          NODE, netns, nft_table=lambda _feature: TABLE)
    if kubelet_path is None:
        return HostIsolation(context, kubelet_cgroup_path="", find_cgroup2=lambda: None,
                             kubelet_check_period=0)
    return HostIsolation(context, kubelet_cgroup_path=kubelet_path, kubelet_check_period=0)


class WriteTimer:
    """Times ``nft.apply_table`` calls (the controller's own module attribute is wrapped):
    the full sync's nftables write apart from building the elements."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.original = nft.apply_table

    def __enter__(self) -> WriteTimer:
        def timed(*args: Any, **kwargs: Any) -> None:
            start = time.perf_counter()
            try:
                self.original(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start
        nft.apply_table = timed  # type: ignore[assignment]
        return self

    def __exit__(self, *_exc: object) -> None:
        nft.apply_table = self.original  # type: ignore[assignment]


def make_netns() -> str:
    name = f"ovnkb-{secrets.token_hex(4)}"
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True,
                   capture_output=True)
    return name


def remove_netns(name: str) -> None:
    subprocess.run(["ip", "netns", "del", name], check=True, capture_output=True)


def nft_process(netns: str, script: str, workdir: Path) -> float:
    """One ``nft -f`` process (started from a thread inside ``netns``): its wall time."""
    path = workdir / f"nft-{time.monotonic_ns()}.nft"
    path.write_text(script)

    def run() -> float:
        start = time.perf_counter()
        subprocess.run(["nft", "-f", str(path)], check=True, capture_output=True)
        return time.perf_counter() - start
    try:
        return run_in_netns(netns, run)
    finally:
        path.unlink()


def nft_library(netns: str, script: str) -> float:
    """One ``cmd`` of a fresh libnftables context in ``netns`` (what ``nft -f`` does inside,
    without its process)."""
    import nftables

    def run() -> float:
        start = time.perf_counter()
        context = nftables.Nftables()
        rc, _out, err = context.cmd(script)
        del context  # freeing it closes its netlink socket, inside the time
        seconds = time.perf_counter() - start
        if rc != 0:
            raise RuntimeError(f"nft refused the floor script: {err}")
        return seconds
    return run_in_netns(netns, run)


def elements_of(netns: str, table: str) -> dict[str, set[str]]:
    return {name: set(nft.set_elements(host_rules.FAMILY, table, name, netns))
            for name in host_rules.SET_NAMES}


def full_sync_run(config: Config, pods: list[dict[str, Any]], netns: str,
                  kubelet_path: str | None, workdir: Path) -> dict[str, Any]:
    """One start-up sync of ovnk into an empty namespace, and the two floors."""
    nft.delete_table(host_rules.FAMILY, TABLE, netns)
    controller = agent(config, StaticPods(pods), netns, kubelet_path)
    with WriteTimer() as write:
        start = time.perf_counter()
        controller.initial_sync()
        ovnk = time.perf_counter() - start
    if not controller._synced:
        raise SystemExit("the full sync did not write the table (see the log)")
    members = {name: controller.refs.members(name) for name in host_rules.SET_NAMES}
    script = nft.build_table_script(host_rules.build_table(
        TABLE, controller.kubelet, controller.ip_versions, members))
    ours = (nft.list_table_text(host_rules.FAMILY, TABLE, netns, terse=False),
            elements_of(netns, TABLE))
    nft.delete_table(host_rules.FAMILY, TABLE, netns)
    process = nft_process(netns, script, workdir)
    floor = (nft.list_table_text(host_rules.FAMILY, TABLE, netns, terse=False),
             elements_of(netns, TABLE))
    if floor != ours:
        raise SystemExit("the nft -f floor's table differs from ovnk's")
    nft.delete_table(host_rules.FAMILY, TABLE, netns)
    library = nft_library(netns, script)
    # leave ovnk's own table for the updates that follow
    nft.delete_table(host_rules.FAMILY, TABLE, netns)
    controller.initial_sync()
    elements = sum(len(m) for m in members.values())
    return {"ovnk_seconds": ovnk, "ovnk_write_seconds": write.seconds,
            "nft_f_seconds": process, "libnftables_seconds": library,
            "ratio_nft_f": ovnk / process, "ratio_libnftables": ovnk / library,
            "ratio_write_nft_f": write.seconds / process,
            "elements": elements, "script_bytes": len(script),
            "kubelet_rule": controller.kubelet is not None}


def update_ops(count: int, pods: int) -> list[tuple[str, int]]:
    """``count`` single-pod changes: add a new pod, change a pod's open ports, delete a
    pod added before, in turn."""
    ops: list[tuple[str, int]] = []
    added = 0
    for i in range(count):
        kind = ("add", "update", "delete")[i % 3]
        if kind == "add":
            ops.append(("add", added))
            added += 1
        elif kind == "update":
            ops.append(("update", (i * 7) % pods))
        else:
            ops.append(("delete", added - 1))
    return ops


FLOORS = ("nft_f", "libnftables_fresh", "libnftables_kept")
FLOOR_TABLES = {floor: f"ovnkb-{floor.replace('_', '-')}" for floor in FLOORS}


def floor_script(changes: Mapping[str, Any], table: str) -> str:
    """The element commands of one change on a floor's table (deletes, then adds: what
    ``nft.update_elements`` sends)."""
    lines = [f"delete element {host_rules.FAMILY} {table} {name} "
             f"{{ {', '.join(sorted(change.delete))} }}\n"
             for name, change in changes.items() if change.delete]
    lines += [f"add element {host_rules.FAMILY} {table} {name} "
              f"{{ {', '.join(sorted(change.add))} }}\n"
              for name, change in changes.items() if change.add]
    return "".join(lines)


def updates_run(config: Config, pods: list[dict[str, Any]], netns: str,
                kubelet_path: str | None, count: int, workdir: Path) -> dict[str, Any]:
    """``count`` pod changes through the controller's reconcile, each followed by the same
    element commands on each floor's own copy of the table: one ``nft -f`` process, one
    fresh libnftables context, one libnftables context kept open."""
    cache = StaticPods(pods)
    controller = agent(config, cache, netns, kubelet_path)
    controller.initial_sync()  # the table is already as wanted: nothing written
    members = {name: controller.refs.members(name) for name in host_rules.SET_NAMES}
    for table in FLOOR_TABLES.values():
        nft.apply_table(host_rules.build_table(table, controller.kubelet,
                                               controller.ip_versions, members), netns)
    open_now = {i: has_open_ports(i) for i in range(len(pods))}
    timings: dict[str, list[tuple[str, float, float, float, float]]] = {}
    path = workdir / "update.nft"

    def run_all() -> None:  # in the namespace: nft -f and the contexts start there
        import nftables

        kept = nftables.Nftables()

        def library(context: Any, script: str) -> None:
            rc, _out, err = context.cmd(script)
            if rc != 0:
                raise RuntimeError(f"nft refused the floor's update: {err}")


        for done, (kind, index) in enumerate(update_ops(count, len(pods))):
            if kind == "add":
                pod = make_pod(f"new-{index}", pod_ip(index, 245),
                               OPEN_PORTS_2 if index % 2 else None)
                key = object_key(pod)
                cache.items[key] = pod
            elif kind == "delete":
                key = f"{NAMESPACE}/new-{index}"
                del cache.items[key]
            else:
                key = f"{NAMESPACE}/pod-{index}"
                open_now[index] = not open_now[index]
                cache.items[key] = make_pod(f"pod-{index}", pod_ip(index),
                                            OPEN_PORTS if open_now[index] else None)
            desired = controller.desired_of(key)
            assert desired is not None
            changes = controller.refs.changes(key, desired.elements)
            scripts = {floor: floor_script(changes, table)
                       for floor, table in FLOOR_TABLES.items()}
            path.write_text(scripts["nft_f"])

            def ovnk(key: str = key) -> None:
                controller.reconcile(key)

            def process() -> None:
                subprocess.run(["nft", "-f", str(path)], check=True, capture_output=True)

            def fresh(script: str = scripts["libnftables_fresh"]) -> None:
                context = nftables.Nftables()  # what nft -f does, without its process;
                library(context, script)
                del context  # freeing it closes its netlink socket: inside the time

            def kept_one(script: str = scripts["libnftables_kept"]) -> None:
                library(kept, script)

            # the four in turn, starting with another one each time (no order bias)
            steps = [("ovnk", ovnk), ("nft_f", process), ("libnftables_fresh", fresh),
                     ("libnftables_kept", kept_one)]
            shift = done % len(steps)
            seconds: dict[str, float] = {}
            for name, step in steps[shift:] + steps[:shift]:
                start = time.perf_counter()
                step()
                seconds[name] = time.perf_counter() - start
            timings.setdefault(kind, []).append(
                (key, seconds["ovnk"], seconds["nft_f"], seconds["libnftables_fresh"],
                 seconds["libnftables_kept"]))

    run_in_netns(netns, run_all)
    ours = elements_of(netns, TABLE)
    if any(ours != elements_of(netns, table) for table in FLOOR_TABLES.values()):
        raise SystemExit("after the updates ovnk's sets differ from the floors'")
    wanted = {name: controller.refs.members(name) for name in host_rules.SET_NAMES}
    if ours != wanted:
        raise SystemExit("after the updates the sets are not what the pods want")
    # leak check: every pod deleted through the same path leaves every set empty
    for key in list(cache.items):
        del cache.items[key]
        controller.reconcile(key)
    left = sum(len(e) for e in elements_of(netns, TABLE).values())
    for table in (TABLE, *FLOOR_TABLES.values()):
        nft.delete_table(host_rules.FAMILY, table, netns)
    if left or nft.list_tables(netns):
        raise SystemExit(f"leak: {left} nft element(s) left after deleting every pod")
    every = [t for rows in timings.values() for t in rows]
    return {"by_kind": {kind: latency_summary(rows) for kind, rows in timings.items()},
            "all": latency_summary(every), "updates": len(every)}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def latency_summary(rows: list[tuple[str, float, float, float, float]]) -> dict[str, Any]:
    result: dict[str, Any] = {"count": len(rows)}
    for column, name in enumerate(("ovnk", *FLOORS), start=1):
        values = [float(row[column]) * 1000 for row in rows]
        result[f"{name}_ms"] = {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99)}
    return result


def node_side(config: Config, pods: int, updates: int, repeat: int, warmup: bool,
              workdir: Path, kubelet_rule: bool = True) -> dict[str, Any]:
    netns = make_netns()
    mount = cgroup2_mount() if kubelet_rule else None
    kubelet_path: str | None = None  # no cgroup v2: no kubelet rule
    cgroup_dir: Path | None = None
    if mount is not None:  # a kubelet cgroup for the kubelet rule, as on a real node
        kubelet_path = f"ovnk-bench-{secrets.token_hex(4)}/kubelet.slice/kubelet.service"
        cgroup_dir = mount / kubelet_path
        cgroup_dir.mkdir(parents=True)
    try:
        the_pods = base_pods(pods)
        if warmup:
            full_sync_run(config, base_pods(10), netns, kubelet_path, workdir)
            updates_run(config, base_pods(10), netns, kubelet_path, 6, workdir)
        syncs = [full_sync_run(config, the_pods, netns, kubelet_path, workdir)
                 for _ in range(repeat)]
        update_runs = [updates_run(config, the_pods, netns, kubelet_path, updates, workdir)
                       for _ in range(repeat)]
    finally:
        remove_netns(netns)
        if cgroup_dir is not None:
            for path in (cgroup_dir, cgroup_dir.parent, cgroup_dir.parent.parent):
                path.rmdir()
    keys = ("ovnk_seconds", "ovnk_write_seconds", "nft_f_seconds", "libnftables_seconds",
            "ratio_nft_f", "ratio_libnftables", "ratio_write_nft_f")
    sync = {key: statistics.median(run[key] for run in syncs) for key in keys}
    sync |= {"elements": syncs[0]["elements"], "script_bytes": syncs[0]["script_bytes"],
             "kubelet_rule": syncs[0]["kubelet_rule"]}
    return {"full_sync": sync, "full_sync_runs": syncs, "updates": median_updates(update_runs),
            "update_runs": update_runs}


def median_updates(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per percentile, the median over runs; ratios of those medians."""
    def merged(pick: Callable[[dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in ("ovnk", *FLOORS):
            out[f"{name}_ms"] = {p: statistics.median(pick(r)[f"{name}_ms"][p] for r in runs)
                                 for p in ("p50", "p99")}
        for p in ("p50", "p99"):
            for floor in FLOORS:
                out[f"ratio_{floor}_{p}"] = out["ovnk_ms"][p] / out[f"{floor}_ms"][p]
        out["count"] = pick(runs[0])["count"]
        return out
    result = {"all": merged(lambda r: r["all"])}
    for kind in runs[0]["by_kind"]:
        result[kind] = merged(lambda r, kind=kind: r["by_kind"][kind])  # type: ignore
    return result


# -- zone side -------------------------------------------------------------------------------
NODE_SUBNET = ipaddress.ip_network("10.244.0.0/24")
MANAGEMENT_IPS = [str(management_ip(NODE_SUBNET))]


def node_state() -> NodeState:
    return NodeState(NODE, (NODE_SUBNET,), 2, "chassis-0",
                     GatewayConfig("shared", "breth0", mac_from_ip("172.18.0.2"),
                                   ("172.18.0.2/16",), ("172.18.0.1",)))


class ZoneWorkload:
    """The default network with one node, and per pod its port and its isolation part."""

    def __init__(self, config: Config, pods: int) -> None:
        self.state = default_network(config)
        self.netinfo = self.state.netinfo
        self.hook = PluginHost.load(config).hook
        self.pods = base_pods(pods)
        self.attachments = [PodAttachment(
            NAMESPACE, pod["metadata"]["name"], pod["metadata"]["uid"], NODE, "default",
            mac_from_ip(pod_ip(i)), (f"{pod_ip(i)}/16",), role="infrastructure-locked")
            for i, pod in enumerate(self.pods)]
        self.owners = [pod_owner(self.netinfo, a.namespace, a.name) for a in self.attachments]

    def topology(self) -> dict[Owner, list[DesiredRow]]:
        return {network_owner(self.netinfo): build_network(self.state),
                node_owner(self.netinfo, NODE): build_node(self.state, node_state())}

    def ports(self) -> dict[Owner, list[DesiredRow]]:
        """The pods' ports alone (before isolation adds to them)."""
        return {owner: build_pod(self.state, attachment)
                for owner, attachment in zip(self.owners, self.attachments, strict=True)}

    def isolated_pod(self, index: int) -> list[DesiredRow]:
        """The pod's rows as the zone controller writes them: its port with every plugin's
        part (``ovnk_zone_pod_port``: membership, OpenPort ACLs)."""
        attachment = self.attachments[index]
        merged = merge_pod_port(self.hook, self.pods[index], attachment, self.netinfo,
                                self.owners[index], build_pod(self.state, attachment))
        if merged.errors or merged.failure:
            raise SystemExit(f"pod {attachment.name}: {merged.errors or merged.failure}")
        return merged.rows

    def everything(self) -> dict[Owner, list[DesiredRow]]:
        wanted = {ISOLATION_OWNER: build_isolation_rows(MANAGEMENT_IPS)}
        wanted.update({owner: self.isolated_pod(i) for i, owner in enumerate(self.owners)})
        return wanted


def prepared_nb(workload: ZoneWorkload, workdir: Path, name: str) -> OvsdbServer:
    """A fresh NB holding the network, the node and the pods' ports (written by ovnk)."""
    from ovnk_core.ovn.writer import NbWriter

    server = OvsdbServer(name, workdir / f"{name}-{time.monotonic_ns()}", schema("ovn-nb")).start()
    with NbWriter([server.remote], timeout=600).start() as nb:
        apply_many(nb, workload.topology())
        apply_many(nb, workload.ports())
    return server


def port_uuids(remote: str) -> dict[str, str]:
    connection = OvsdbConnection(remote, timeout=600)
    try:
        [result] = connection.transact("OVN_Northbound", [
            {"op": "select", "table": "Logical_Switch_Port", "where": [],
             "columns": ["_uuid", "name"]}])
    finally:
        connection.close()
    return {row["name"]: row["_uuid"][1] for row in result["rows"]}


def floor_args(workload: ZoneWorkload, uuids: Mapping[str, str]) -> list[str]:
    """One ovn-nbctl transaction: the group (naming the existing ports and every ACL), its
    five ACLs and the OpenPort ACLs."""
    rows = list(build_isolation_rows(MANAGEMENT_IPS))
    members = []
    for index in range(len(workload.pods)):
        pod_rows = workload.isolated_pod(index)
        port = next(r for r in pod_rows if r.table == "Logical_Switch_Port")
        members.append(uuids[str(port.columns["name"])])
        rows += [r for r in pod_rows if r.table == "ACL"]
    args = nbctl_commands(rows)
    at = args.index("Port_Group") - 1
    assert args[at] == "create"
    end = args.index("--", at) if "--" in args[at:] else len(args)
    args.insert(end, f"ports=[{','.join(members)}]")
    return args


def zone_run(workload: ZoneWorkload, workdir: Path, check: bool) -> dict[str, Any]:
    from ovnk_core.ovn.writer import NbWriter

    servers = [prepared_nb(workload, workdir, name) for name in ("ovnk", "perpod", "floor")]
    ovnk_db, perpod_db, floor_db = servers
    try:
        args = floor_args(workload, port_uuids(floor_db.remote))
        start = time.perf_counter()
        run_nbctl(floor_db.remote, args)
        floor = time.perf_counter() - start

        with NbWriter([ovnk_db.remote], timeout=600).start() as nb:
            before = nb.transactions
            start = time.perf_counter()
            wanted = workload.everything()
            built = time.perf_counter()
            apply_many(nb, wanted)
            ovnk = time.perf_counter() - start
            build = built - start
            ovnk_txns = nb.transactions - before

        with NbWriter([perpod_db.remote], timeout=600).start() as nb:
            before = nb.transactions
            start = time.perf_counter()
            apply_many(nb, {ISOLATION_OWNER: build_isolation_rows(MANAGEMENT_IPS)})
            for index, owner in enumerate(workload.owners):
                apply_many(nb, {owner: workload.isolated_pod(index)})
            perpod = time.perf_counter() - start
            perpod_txns = nb.transactions - before

        differences: list[str] = []
        if check:
            floor_rows = digest(floor_db.remote)
            differences = digest_difference(digest(ovnk_db.remote), floor_rows)
            differences += digest_difference(digest(perpod_db.remote), floor_rows)
        # a restart with nothing changed writes nothing
        with NbWriter([ovnk_db.remote], timeout=600).start() as nb:
            everything = {**workload.topology(), **workload.everything()}
            apply_many(nb, everything)
            restart_writes = nb.transactions
            apply_many(nb, {owner: [] for owner in workload.everything()})
            apply_many(nb, {owner: [] for owner in workload.topology()})
        with NbWriter([ovnk_db.remote], timeout=600).start() as nb:
            left = nb.owned_row_count()
    finally:
        for server in servers:
            server.stop()
    if differences:
        raise SystemExit("ovnk and the ovn-nbctl floor wrote different rows:\n" +
                         "\n".join(differences[:20]))
    if restart_writes:
        raise SystemExit(f"restart wrote {restart_writes} transaction(s); expected 0")
    if left:
        raise SystemExit(f"leak: {left} ovnk-owned rows left after deleting all")
    acls = sum(1 for rows in workload.everything().values() for r in rows if r.table == "ACL")
    return {"floor_seconds": floor, "ovnk_seconds": ovnk, "build_seconds": build,
            "perpod_seconds": perpod, "ratio": ovnk / floor, "ratio_perpod": perpod / floor,
            "ovnk_transactions": ovnk_txns, "perpod_transactions": perpod_txns,
            "acls": acls, "members": len(workload.pods), "restart_writes": restart_writes}


def zone_side(config: Config, pods: int, repeat: int, warmup: bool,
              workdir: Path) -> dict[str, Any]:
    if warmup:
        zone_run(ZoneWorkload(config, 10), workdir, True)
    workload = ZoneWorkload(config, pods)
    runs = [zone_run(workload, workdir, check=(i == 0)) for i in range(repeat)]
    keys = ("floor_seconds", "ovnk_seconds", "build_seconds", "perpod_seconds", "ratio",
            "ratio_perpod")
    median = {key: statistics.median(run[key] for run in runs) for key in keys}
    median |= {k: runs[0][k] for k in ("acls", "members", "ovnk_transactions",
                                       "perpod_transactions")}
    return {"median": median, "runs": runs}


# -- report ----------------------------------------------------------------------------------
def environment() -> dict[str, Any]:
    def first_line(*argv: str) -> str:
        try:
            out = subprocess.run(argv, capture_output=True, text=True).stdout
        except OSError:
            return "missing"
        return out.splitlines()[0] if out else "unknown"
    return {"python": platform.python_version(),
            "ovn": first_line(*command("ovn-nbctl", "--version")),
            "nft": first_line("nft", "--version"), "kernel": platform.release(),
            "cpus": os.cpu_count(), "db_mode": "standalone"}


def print_node(node: dict[str, Any], pods: int) -> None:
    sync = node["full_sync"]
    print(f"\nnode: full sync of {pods} pods ({sync['elements']} elements, "
          f"{sync['script_bytes']} bytes of nft text, kubelet rule: {sync['kubelet_rule']})")
    print(f"{'ovnk ms':>9}{'(nft write ms)':>16}{'nft -f ms':>11}{'libnftables ms':>16}"
          f"{'/ nft -f':>10}{'write / nft -f':>16}{'/ libnftables':>15}")
    print(f"{sync['ovnk_seconds'] * 1000:>9.1f}{sync['ovnk_write_seconds'] * 1000:>16.1f}"
          f"{sync['nft_f_seconds'] * 1000:>11.1f}{sync['libnftables_seconds'] * 1000:>16.1f}"
          f"{sync['ratio_nft_f']:>9.2f}x{sync['ratio_write_nft_f']:>15.2f}x"
          f"{sync['ratio_libnftables']:>14.2f}x")
    print(f"\nnode: per-pod updates ({node['updates']['all']['count']} per run), "
          "p50 / p99 ms and ovnk's p50, p99 ratios to each floor")
    header = "".join(f"{name:>20}" for name in ("ovnk", *FLOORS))
    print(f"{'change':<8}{'n':>4}{header}" + "".join(f"{'/ ' + f:>22}" for f in FLOORS))
    for kind, row in node["updates"].items():
        cells = "".join(f"{row[f'{name}_ms']['p50']:>12.2f} /{row[f'{name}_ms']['p99']:>6.2f}"
                        for name in ("ovnk", *FLOORS))
        ratios = "".join(f"{row[f'ratio_{f}_p50']:>14.2f}x,{row[f'ratio_{f}_p99']:>6.2f}x"
                         for f in FLOORS)
        print(f"{kind:<8}{row['count']:>4}{cells}{ratios}")


def print_zone(zone: dict[str, Any]) -> None:
    m = zone["median"]
    print(f"\nzone: port group, 5 ACLs, {m['members']} members, {m['acls'] - 5} OpenPort ACLs")
    print(f"{'floor s':>9}{'ovnk s':>9}{'(build s)':>11}{'ratio':>8}{'per-pod s':>11}"
          f"{'ratio':>8}{'txns':>6}")
    print(f"{m['floor_seconds']:>9.3f}{m['ovnk_seconds']:>9.3f}{m['build_seconds']:>11.3f}"
          f"{m['ratio']:>7.2f}x{m['perpod_seconds']:>11.3f}{m['ratio_perpod']:>7.2f}x"
          f"{m['perpod_transactions']:>6}")


def main(argv: list[str] | None = None) -> int:
    use_development_default()  # OVN 26.03 unless OVNK_OVN names another
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=200, help="per-pod changes per run")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument("--skip-node", action="store_true", help="zone side only (no root)")
    parser.add_argument("--skip-zone", action="store_true", help="node side only")
    parser.add_argument("--no-kubelet-rule", action="store_true",
                        help="node side as on a node without cgroup v2 (no kubelet rule)")
    parser.add_argument("--results", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    if not args.skip_node and os.geteuid() != 0:
        parser.error("the node side needs root (network namespace, nftables); "
                     "--skip-node runs the zone side alone")
    config = udn_config()
    report: dict[str, Any] = {"workload": {"pods": args.pods, "updates": args.updates,
                                           "repeat": args.repeat},
                              "environment": environment()}
    env = report["environment"]
    print(f"UDN isolation, {args.pods} pods, median of {args.repeat} run(s) ({env['ovn']}, "
          f"{env['nft']}, Python {env['python']}, {env['cpus']} CPUs, standalone NB)")
    with tempfile.TemporaryDirectory(prefix="ovnk-bench-") as tmp:
        workdir = Path(tmp)
        if not args.skip_node:
            report["node"] = node_side(config, args.pods, args.updates, args.repeat,
                                       not args.no_warmup, workdir,
                                       kubelet_rule=not args.no_kubelet_rule)
            print_node(report["node"], args.pods)
        if not args.skip_zone:
            report["zone"] = zone_side(config, args.pods, args.repeat, not args.no_warmup,
                                       workdir)
            print_zone(report["zone"])
    print("\nchecked: nft tables equal the floors', sets as the pods want, nothing left after "
          "deleting every pod; NB rows equal the floor's, restart wrote nothing, no owned "
          "row left")
    out = write_results(args.results, "isolation", report)
    print(f"raw results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
