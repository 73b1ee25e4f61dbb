"""Per-node OVN zones of the local cluster (``ovnk local up --zones per-node``).

Upstream runs interconnect: every node is its own OVN zone.  In that mode the
local cluster runs, per node, its own NB and SB ``ovsdb-server``,
``ovn-northd`` and a zone controller (``ovnk controller --zone <node>``), all
supervised as the node's records (``NODE/nb-ovsdb``, ``NODE/sb-ovsdb``,
``NODE/northd``, ``NODE/controller``); the node's ovn-controller uses its
zone's SB, and the node's identity annotates ``k8s.ovn.org/zone-name`` with
the node's name (docs/design/interconnect.md).  There is no cluster-wide NB,
SB or ovn-northd then, and no ``ovn-ic``: upstream does not run it.

``single`` (the default) is the one zone of every node, as before.  This module
only builds the records and names the paths; ``cluster.LocalCluster`` runs them.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ovnk_core.ovn.install import command
from ovnk_local.state import ProcessRecord

SINGLE, PER_NODE = "single", "per-node"
ZONE_MODES = (SINGLE, PER_NODE)
ZONE_OVN_DAEMONS = ("nb-ovsdb", "sb-ovsdb", "northd")
ZONE_CONTROLLER = "controller"


def zone_dir(ovn_dir: Path, node: str) -> Path:
    """Where the zone of ``node`` keeps its databases and sockets."""
    return ovn_dir / node


def nb_socket(ovn_dir: Path, node: str) -> Path:
    return zone_dir(ovn_dir, node) / "nb.sock"


def sb_socket(ovn_dir: Path, node: str) -> Path:
    return zone_dir(ovn_dir, node) / "sb.sock"


def ovn_names(node: str) -> list[str]:
    """The records of the zone's OVN, in start order."""
    return [f"{node}/{daemon}" for daemon in ZONE_OVN_DAEMONS]


def controller_name(node: str) -> str:
    return f"{node}/{ZONE_CONTROLLER}"


def ovn_records(ovn_dir: Path, log_dir: Path, run_dir: Path, node: str
                ) -> list[ProcessRecord]:
    """The zone's NB, SB (each once its socket serves) and ovn-northd (once both do)."""
    zone = zone_dir(ovn_dir, node)
    records = []
    for name in ("nb", "sb"):
        log = log_dir / f"{node}-{name}-ovsdb.log"
        records.append(ProcessRecord(
            f"{node}/{name}-ovsdb", "node",
            command("ovsdb-server", str(zone / f"{name}.db"),
                    f"--remote=punix:{zone}/{name}.sock", f"--unixctl={zone}/{name}.ctl",
                    f"--log-file={log}", f"--pidfile={run_dir}/{node}-{name}-ovsdb.pid",
                    "--no-chdir", "-vconsole:off"),
            str(log), supervised=True, ready_socket=str(zone / f"{name}.sock")))
    log = log_dir / f"{node}-northd.log"
    records.append(ProcessRecord(
        f"{node}/northd", "node",
        command("ovn-northd", f"--ovnnb-db=unix:{zone}/nb.sock",
                f"--ovnsb-db=unix:{zone}/sb.sock", f"--unixctl={zone}/northd.ctl",
                f"--log-file={log}", "--no-chdir", "-vconsole:off",
                f"--pidfile={run_dir}/{node}-northd.pid"),
        str(log), supervised=True, ready_socket=str(zone / "northd.ctl"),
        requires=[f"{node}/nb-ovsdb", f"{node}/sb-ovsdb"]))
    return records


def controller_record(ovn_dir: Path, log_dir: Path, ready_file: Path, config_file: Path,
                      kubeconfig: Path, flags: list[str], node: str) -> ProcessRecord:
    """The zone controller of ``node``'s zone, on its NB and SB."""
    return ProcessRecord(
        controller_name(node), "node",
        [sys.executable, "-m", "ovnk_core.cli.main", "controller", "--config", str(config_file),
         "--k8s-kubeconfig", str(kubeconfig), "--ready-file", str(ready_file), *flags,
         # after the cluster's flags: these are the zone's own
         "--zone", node, "--nb-address", f"unix:{nb_socket(ovn_dir, node)}",
         "--sb-address", f"unix:{sb_socket(ovn_dir, node)}"],
        str(log_dir / f"{node}-controller.log"), supervised=True, ready_file=str(ready_file),
        requires=[f"{node}/nb-ovsdb"])


__all__ = ["PER_NODE", "SINGLE", "ZONE_MODES", "controller_name", "controller_record",
           "nb_socket", "ovn_names", "ovn_records", "sb_socket", "zone_dir"]
