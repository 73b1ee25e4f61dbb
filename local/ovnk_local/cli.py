"""``ovnk local``: bring a whole local cluster up, inspect it, restart parts, take it down."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

from ovnk_core.config import add_config_arguments
from ovnk_core.logsetup import setup_logging
from ovnk_core.manifests.dist import DIST_DIR
from ovnk_core.ovn import install
from ovnk_local.cluster import (
    COMPONENTS,
    NODE_DAEMONS,
    OVN,
    LocalCluster,
    dataplane_unavailable,
)
from ovnk_local.components import COMPONENTS as STAND_INS
from ovnk_local.components import run_component
from ovnk_local.dataplane import EXTERNAL_HOST_IPS, UNDERLAY_NETWORKS
from ovnk_local.physical_networks import VLANS
from ovnk_local.settings import IP_FAMILIES, OWNED, ComponentSettings
from ovnk_local.supervision import BACKOFF_BASE, BACKOFF_CAP, Supervisor
from ovnk_local.supervisor import LocalClusterError
from ovnk_local.zones import PER_NODE, SINGLE, ZONE_MODES, nb_socket, sb_socket

DEFAULT_DIR = ".ovnk"
TAKES_A_COMMAND = (("local", "exec"),)  # ovnk local exec POD -- COMMAND ARGS (cli.main)

log = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "local", help="run a local cluster (API server, OVN, stand-ins, ovnk components)",
        description="A whole cluster on this machine, each part its own process, all state "
                    "under --dir (default .ovnk/).")
    commands = parser.add_subparsers(dest="local_command", metavar="ACTION", required=True)

    up = commands.add_parser(
        "up", help="start everything and wait until it is ready",
        description="Start the API server, OVN, the stand-ins, the ovnk components and (when "
                    "the machine allows) a real dataplane per node. Every ovnk component "
                    "option is accepted and passed on to the cluster manager, the zone "
                    "controller and the node agents, e.g. ovnk local up "
                    "--enable-dynamic-udn-allocation --udn-deletion-grace-period=5s; "
                    "--config FILE is merged into DIR/ovnk.toml. 'ovnk local status' shows "
                    "them. The OVN addresses, kubeconfigs, node names and metrics address "
                    "are the cluster's own.")
    up.add_argument("--dir", default=DEFAULT_DIR, help="state directory (default .ovnk)")
    up.add_argument("--nodes", type=int, default=2, help="number of Node objects (default 2)")
    up.add_argument("--ip-family", choices=IP_FAMILIES, default="ipv4",
                    help="the cluster's IP families, as kind's ipFamily: the nodes' underlay "
                         "addresses and ovnk local's default --cluster-subnets and "
                         "--service-cluster-ip-range (ipv6: fd00:10:244::/48/64 and "
                         "fd00:10:96::/112; dual: IPv4 first, then those) (default ipv4)")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness")
    up.add_argument("--dataplane", action=argparse.BooleanOptionalAction, default=None,
                    help="give every node a real dataplane (namespace, OVS, ovn-controller, "
                         "node agent) so pods carry traffic; default: when the machine can")
    up.add_argument("--physical-networks", default=None, metavar="NAME[,NAME...]",
                    help="physical networks for Localnet networks, each a VLAN-aware segment "
                         "with a host on it that every node bridges onto (br-NAME, mapped as "
                         "NAME:br-NAME); default physnet1; '' for none (real dataplane only)")
    up.add_argument("--zones", choices=ZONE_MODES, default=None,
                    help="one OVN zone for every node (single, the default) or one per node "
                         "(per-node: its own NB, SB, ovn-northd and zone controller, as "
                         "upstream's interconnect; the default with --from-manifests)")
    up.add_argument("--from-manifests", nargs="?", const=DIST_DIR, default=None, type=Path,
                    metavar="DIR",
                    help="create the objects of the kustomize directory DIR (default: dist/) "
                         "and run the cluster manager and the zone controllers as its "
                         "Deployment and DaemonSet declare them: args, env, the ConfigMap "
                         "and the service account's token as files "
                         "(docs/operations/install.md)")
    up.add_argument("--ovn", default=None, metavar="system|26.03|ROOT",
                    help="the OVN (and OVS) every process runs: 26.03, the one upstream runs "
                         "(a Debian root made by make bootstrap, run through its own loader); "
                         "system, the host's; or a root's directory (default: $OVNK_OVN, else "
                         "26.03)")
    add_config_arguments(
        up, exclude=OWNED,
        title="ovnk component options (passed on to cluster-manager, controller and every "
              "node agent; flag > OVNK_* env > --config file > ovnk local's settings)")
    up.set_defaults(func=run_up)

    status = commands.add_parser("status", help="each process, its pid, health and log")
    status.add_argument("--dir", default=DEFAULT_DIR)
    status.set_defaults(func=run_status)

    restart = commands.add_parser(
        "restart", help="restart the components (all, or one), an OVN process or a node's "
                        "daemon, keeping API and OVN state")
    restart.add_argument("component", nargs="?", metavar="NAME",
                         help=f"a component ({', '.join(COMPONENTS)}), an OVN process "
                              f"({', '.join(OVN)}), every node's {', '.join(NODE_DAEMONS)}, "
                              "or one node's as NODE/DAEMON (default: every component and "
                              "node agent)")
    restart.add_argument("--dir", default=DEFAULT_DIR)
    restart.set_defaults(func=run_restart)

    down = commands.add_parser("down", help="stop every process the cluster started")
    down.add_argument("--dir", default=DEFAULT_DIR)
    down.set_defaults(func=run_down)

    exec_ = commands.add_parser(
        "exec", help="run a command inside a pod's network namespace (real dataplane)",
        description="Like 'kubectl exec' for the network: runs COMMAND in the pod's network "
                    "namespace on its node, e.g. ovnk local exec -n blue blue -- ping -c 2 IP. "
                    "Everything after -- is the command, options included.")
    exec_.add_argument("pod")
    exec_.add_argument("-n", "--namespace", default="default")
    exec_.add_argument("--dir", default=DEFAULT_DIR)
    # the words after "--" are cut off before parsing and appended here (cli.main)
    exec_.add_argument("exec_command", nargs="*", metavar="-- COMMAND")
    exec_.set_defaults(func=run_exec)

    component = commands.add_parser("component", help="(internal) run one component")
    component.add_argument("name", choices=sorted(STAND_INS))
    component.add_argument("--dir", default=DEFAULT_DIR)
    component.add_argument("--loglevel", default="info")
    component.set_defaults(func=run_one_component)

    supervise = commands.add_parser(
        "supervise", help="(internal) restart the cluster's components when they die")
    supervise.add_argument("--dir", default=DEFAULT_DIR)
    supervise.add_argument("--backoff-base", type=float, default=BACKOFF_BASE,
                           help=f"seconds before the first restart (default {BACKOFF_BASE:g}); "
                                "doubled for every death in a row")
    supervise.add_argument("--backoff-max", type=float, default=BACKOFF_CAP,
                           help=f"longest wait between restarts (default {BACKOFF_CAP:g}s)")
    supervise.add_argument("--loglevel", default="info")
    supervise.set_defaults(func=run_supervise)


def run_up(args: argparse.Namespace) -> int:
    cluster = LocalCluster(args.dir)
    physical = None if args.physical_networks is None else \
        [name.strip() for name in args.physical_networks.split(",") if name.strip()]
    state = cluster.up(nodes=args.nodes, timeout=args.timeout, dataplane=args.dataplane,
                       settings=ComponentSettings.from_args(args), physical_networks=physical,
                       ovn=args.ovn, zone_mode=args.zones or (
                           PER_NODE if args.from_manifests else SINGLE),
                       manifests=args.from_manifests)
    print(f"local cluster up in {cluster.dir}: API server https://127.0.0.1:{state.api_port}, "
          f"nodes {', '.join(state.nodes)}")
    print(f"  {install.select(state.ovn).describe()}")
    if state.dataplane:
        print(f"  real dataplane: network namespaces {cluster.dataplane.prefix}-* (ip netns), "
              "one OVS + ovn-controller + node agent per node")
        print("  underlay " + ", ".join(str(UNDERLAY_NETWORKS[v]) for v in state.ip_families)
              + ": external host " + ", ".join(EXTERNAL_HOST_IPS[v] for v in state.ip_families))
        for network in cluster.physical_networks(state):
            print(f"  physical network {network.name} (Localnet physicalNetworkName): nodes' "
                  f"{network.bridge}, host {network.host_netns} at "
                  f"{network.host_address(None).ip} untagged, "
                  + ", ".join(f"{network.host_address(v).ip} on VLAN {v}" for v in VLANS))
    else:
        print(f"  no real dataplane: {dataplane_unavailable() or 'disabled (--no-dataplane)'}")
    if state.zones == PER_NODE:
        for node in state.nodes:
            print(f"  zone {node}: OVN NB: unix:{nb_socket(cluster.ovn_dir, node)}  SB: "
                  f"unix:{sb_socket(cluster.ovn_dir, node)}")
    else:
        print(f"  OVN NB: unix:{cluster.nb_socket}  SB: unix:{cluster.sb_socket}")
    for line in component_settings_lines(cluster):
        print(f"  {line}")
    print(f"  kubectl --kubeconfig {cluster.kubeconfig} get nodes")
    print(f"  ovnk local status --dir {args.dir}   |   ovnk local down --dir {args.dir}")
    return 0


def component_settings_lines(cluster: LocalCluster) -> list[str]:
    """What the ovnk components run with, as they got it: their config file (and what it
    was made of) and the flags on their command lines."""
    state = cluster.state()
    made_of = "ovnk local's settings" + (f" + {state.config_source}"
                                         if state.config_source else "")
    return [f"ovnk components' config: {cluster.config_file} ({made_of})",
            "ovnk components' flags:  " + (" ".join(state.component_flags) or "(none)")]


def run_status(args: argparse.Namespace) -> int:
    cluster = LocalCluster(args.dir)
    rows = cluster.status()
    if not rows:
        print(f"no local cluster in {Path(args.dir).resolve()}")
        return 1
    for line in component_settings_lines(cluster):
        print(line)
    now = time.time()
    width = max(28, *(len(row.name) + 2 for row in rows))
    print(f"{'NAME':<{width}}{'ROLE':<11}{'PID':<9}{'STATE':<10}{'RESTARTS':<10}LOG")
    for row in rows:
        state = "ready" if row.ready else ("running" if row.running else "DOWN")
        print(f"{row.name:<{width}}{row.role:<11}{row.pid:<9}{state:<10}{row.restarts:<10}"
              f"{row.log}")
        if row.not_ready:
            print(f"    not ready: {row.not_ready}")
        if row.waiting_for:
            print(f"    waiting for {', '.join(row.waiting_for)} (to start)")
        if row.next_start:
            print(f"    restarting in {max(0.0, row.next_start - now):.0f}s (backoff)")
        if row.last_exit:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(row.last_exit_at))
            print(f"    last exit {when}: {row.last_exit}")
            for line in row.last_exit_log:
                print(f"    | {line}")
    return 0 if all(row.ready for row in rows) else 1


def run_restart(args: argparse.Namespace) -> int:
    names = LocalCluster(args.dir).restart(args.component)
    print(f"restarted: {', '.join(names)}")
    return 0


def run_down(args: argparse.Namespace) -> int:
    stopped = LocalCluster(args.dir).down()
    print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
    return 0


def run_one_component(args: argparse.Namespace) -> int:
    setup_logging(args.loglevel)
    logging.getLogger(__name__).info("starting component %s", args.name)
    cluster = LocalCluster(args.dir)
    return run_component(args.name, str(cluster.component_kubeconfig(args.name)),
                         cluster.ready_file(args.name),
                         cluster.dir)


def run_supervise(args: argparse.Namespace) -> int:
    setup_logging(args.loglevel)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    cluster = LocalCluster(args.dir)
    cluster.use_recorded_ovn()  # what it restarts runs the cluster's OVN
    if Supervisor(cluster.states, base=args.backoff_base, cap=args.backoff_max).run(stop):
        return 0
    removed = cluster.dataplane.destroy()  # its daemons are stopped: nothing else will
    if removed:
        log.error("removed the network namespaces of the vanished cluster: %s",
                  ", ".join(removed))
    return 1


def run_exec(args: argparse.Namespace) -> int:
    command = list(args.exec_command)
    if not command:
        raise LocalClusterError("exec: give the command to run after --, e.g. ovnk local exec "
                                f"-n {args.namespace} {args.pod} -- ip addr")
    netns = LocalCluster(args.dir).pod_netns(args.namespace, args.pod)
    os.execvp("ip", ["ip", "netns", "exec", netns, *command])
    return 127  # not reached
