"""The zone side of the isolation benchmark (``bench/isolation.py``): the isolation port
group and ACLs written through ``NbWriter`` against one ``ovn-nbctl`` floor."""

from __future__ import annotations

import ipaddress
import statistics
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from isolation_pods import NAMESPACE, NODE, base_pods, pod_ip
from nb_digest import digest, digest_difference
from nbctl_floor import nbctl_commands, run_nbctl
from ovnk_isolation.ovn_acls import OWNER as ISOLATION_OWNER
from ovnk_isolation.ovn_acls import build_isolation_rows
from ovnk_layer3.desired import build_network, build_node, build_pod

from ovnk_core.config import Config
from ovnk_core.networks.addressing import mac_from_ip, management_ip
from ovnk_core.ovn.declarative import DesiredRow, apply_many
from ovnk_core.ovn.install import schema
from ovnk_core.ovn.jsonrpc import OvsdbConnection
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.plugins import PluginHost
from ovnk_core.render_state import GatewayConfig, NodeState, PodAttachment
from ovnk_core.zone.networks import default_network
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner
from ovnk_core.zone.pod_port_extras import merge_pod_port

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
