"""``ovnk node``: the node agent of one node (pod networking, CNI server) until SIGTERM."""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

from ovnk_core.config import add_config_arguments, load_config
from ovnk_core.contexts import NodeContext
from ovnk_core.errors import OvnkError
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.events import EventRecorder, undecodable_reporter
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.logsetup import setup_logging
from ovnk_core.node.agent import NodeAgent
from ovnk_core.node.feature_controllers import NodeFeatureControllers
from ovnk_core.node.gateway import NodeGateway
from ovnk_core.node.management_port import ManagementPorts
from ovnk_core.node.service_health import ServiceHealthChecks
from ovnk_core.ovn.install import command
from ovnk_core.plugins import PluginHost

OWN_ARGUMENTS = ("ready_file", "func", "command", "ovs_db", "cni_socket", "pod_netns_prefix",
                 "node_netns", "gateway", "ovs_rundir", "physical_network", "uplink")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "node", help="run the node agent (pod interfaces, OVS ports, CNI server)",
        description="Serves CNI ADD/DEL for the pods bound to --node-name on a unix socket: "
                    "creates each pod's network namespace and interfaces from its "
                    "k8s.ovn.org/pod-networks annotation, plugs them into br-int and answers "
                    "once ovn-controller has bound them; removes them when the pod goes. "
                    "Works in the node's network namespace (--node-netns, or the one it runs in). "
                    "Stops on SIGTERM.")
    parser.add_argument("--ovs-db", required=True,
                        help="the node's OVS database (unix:PATH or PATH of its socket)")
    parser.add_argument("--cni-socket", type=Path, required=True,
                        help="unix socket to serve CNI requests on")
    parser.add_argument("--pod-netns-prefix", required=True,
                        help="pods get network namespaces named PREFIX<namespace>.<name>")
    parser.add_argument("--node-netns", default=None,
                        help="the node's network namespace, when the agent runs outside it "
                             "(the node ends of pod veths are created there)")
    parser.add_argument("--gateway", action=argparse.BooleanOptionalAction, default=True,
                        help="own the shared-gateway bridge named in the node's "
                             "l3-gateway-config: its flows, host masquerade rules and "
                             "ovn-bridge-mappings (default: on)")
    parser.add_argument("--ovs-rundir", type=Path, default=None,
                        help="OVS run directory with the bridges' .mgmt sockets (default: the "
                             "directory of --ovs-db)")
    parser.add_argument("--physical-network", default="physnet",
                        help="physical network name (OVN network_name) of the gateway routers' "
                             "ports onto the external bridge")
    parser.add_argument("--uplink", default="eth0", help="the gateway bridge's uplink port")
    parser.add_argument("--ready-file", type=Path, default=None,
                        help="write this file once serving (for supervisors)")
    add_config_arguments(parser)
    parser.set_defaults(func=run)


def vsctl_for(database: str) -> Any:
    target = database if database.startswith(("unix:", "tcp:")) else f"unix:{database}"

    def vsctl(*args: str) -> str:
        result = subprocess.run(command("ovs-vsctl", f"--db={target}", "--timeout=30", *args),
                                capture_output=True, text=True)
        if result.returncode != 0:
            raise OvnkError(f"ovs-vsctl {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout.strip()
    return vsctl


def run(args: argparse.Namespace) -> int:
    config = load_config({k: v for k, v in vars(args).items() if k not in OWN_ARGUMENTS})
    setup_logging(config.loglevel)
    node = config.node_name or os.environ.get("NODE_NAME", "")
    if not node:
        raise OvnkError("ovnk node needs --node-name (or NODE_NAME)")
    client = KubeClient(api_client_from_kubeconfig(config.kubeconfig))
    vsctl = vsctl_for(args.ovs_db)
    recorder = EventRecorder(client, "ovnkube-node", node)
    informers = InformerFactory(client, on_undecodable=undecodable_reporter(recorder))
    host = PluginHost.load(config)
    topologies = host.topologies
    gateway = None
    if args.gateway:
        rundir = args.ovs_rundir or Path(args.ovs_db.removeprefix("unix:")).parent
        gateway = NodeGateway(informers, node, vsctl, rundir, args.node_netns,
                              [str(config.v4_masquerade_subnet),
                               str(config.v6_masquerade_subnet)], args.physical_network,
                              uplink=args.uplink, topologies=topologies,
                              service_cidrs=[str(c) for c in config.service_cidrs],
                              allowed_default_services=(
                                  config.udn_allowed_default_services
                                  if config.enable_network_segmentation else ()),
                              mtu=config.mtu, recorder=recorder)
    ports = ManagementPorts(informers, node, vsctl, args.node_netns,
                            [str(s.cidr) for s in config.cluster_subnets],
                            recorder, topologies, masquerade_subnets=[
                                str(config.v4_masquerade_subnet),
                                str(config.v6_masquerade_subnet)])
    agent = NodeAgent(client, node, vsctl, args.pod_netns_prefix, args.cni_socket,
                      node_netns=args.node_netns, gateway=gateway, management_ports=ports,
                      informers=informers, topologies=topologies, recorder=recorder,
                      config=config)
    # health-check node ports of ETP=Local LoadBalancer services, in the node's namespace
    health_checks = ServiceHealthChecks(informers, node, args.node_netns, recorder)
    features = NodeFeatureControllers(host, NodeContext(
        config, client, informers, recorder, node, args.node_netns))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    informers.start()
    # InformersNotSynced (which resources, why) ends the process non-zero: its supervisor
    # restarts it, rather than leaving an agent whose controllers never start
    informers.wait_for_sync(config.informer_sync_timeout)
    agent.start()
    health_checks.start()
    features.start()
    if args.ready_file is not None:
        args.ready_file.parent.mkdir(parents=True, exist_ok=True)
        args.ready_file.write_text("ready\n")
    stop.wait()
    if args.ready_file is not None:
        args.ready_file.unlink(missing_ok=True)
    features.stop()
    health_checks.stop()
    agent.stop()
    return 0
