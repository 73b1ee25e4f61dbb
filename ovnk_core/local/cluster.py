"""``ovnk local``: one command for a whole local cluster.

``up`` starts, as separate processes, the local API server, the OVN NB and
SB databases and ovn-northd (the infrastructure, which keeps state across
restarts), then the components (scheduler, kubelet stand-in, EndpointSlice
controller, and the ovnk components as they arrive); it creates the Node
objects, applies the project's CRDs, writes ``DIR/kubeconfig`` and waits
until every component reports ready.  ``restart`` restarts components only,
the way an operator restarts ovnkube pods; ``down`` stops everything by pid.

Where the machine allows it (root, iproute2, Open vSwitch and ovn-controller
installed), ``up`` also gives every node a real dataplane (``dataplane``): a
network namespace with its own OVS and ovn-controller, and a node agent
(``ovnk node``) that wires pods for the kubelet stand-in; pods then carry real
traffic.  Without it the cluster runs as before and says why.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import ssl
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from ovnk_core.apiserver.security import SecurityOptions, admin_kubeconfig
from ovnk_core.kube.apply import apply_documents
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.errors import AlreadyExists, NotFound
from ovnk_core.kube.resources import NAMESPACES, NODES, PODS
from ovnk_core.local.components import COMPONENTS as STAND_INS
from ovnk_core.local.credentials import Credentials
from ovnk_core.local.dataplane import Dataplane, NodeDataplane, node_ip
from ovnk_core.local.supervisor import (
    ClusterState,
    LocalClusterError,
    ProcessRecord,
    pid_running,
    spawn,
    terminate,
    wait_until,
)
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.node.netns import NETNS_DIR
from ovnk_core.ovn.processes import NB_SCHEMA, SB_SCHEMA
from ovnk_core.zone.node_facts import CHASSIS_ID_ANNOTATION, GATEWAY_CONFIG_ANNOTATION

log = logging.getLogger(__name__)

CRD_DIR = Path(__file__).resolve().parent.parent / "manifests" / "crds"
DATAPLANE_BINARIES = ("ip", "ovsdb-server", "ovsdb-tool", "ovs-vswitchd", "ovs-vsctl",
                      "ovn-controller")
VSWITCH_SCHEMA = Path("/usr/share/openvswitch/vswitch.ovsschema")
INFRA = ("apiserver", "nb-ovsdb", "sb-ovsdb", "northd")
OVNK_COMPONENTS = ("cluster-manager", "controller")
NODE_AGENT = "node-agent"
COMPONENTS = (*STAND_INS, *OVNK_COMPONENTS)
SYSTEM_NAMESPACES = ("default", "kube-system", "ovn-kubernetes")
NODE_NETWORK_GATEWAY = "172.18.0.1"
NODE_NETWORK_PREFIX = 16
PRIMARY_IFADDR_ANNOTATION = "k8s.ovn.org/node-primary-ifaddr"


def node_names(count: int) -> list[str]:
    """kind's naming, as in the upstream docs: ovn-worker, ovn-worker2, ..."""
    return ["ovn-worker" if i == 0 else f"ovn-worker{i + 1}" for i in range(count)]


def node_gateway_annotations(name: str, ip: str, gateway: str = NODE_NETWORK_GATEWAY,
                             prefix: int = NODE_NETWORK_PREFIX) -> dict[str, str]:
    """What a node agent publishes about the node's external gateway (shared mode, breth0).

    ``ovnk local`` writes these itself when it creates the Node, with the values the
    node's namespace gets: the node IP on ``breth0``, the node network's gateway as next
    hop, and the chassis name (= node name) its ovn-controller registers.
    """
    cidr = f"{ip}/{prefix}"
    config = {"default": {"mode": "shared", "bridge-id": "breth0",
                          "interface-id": f"breth0_{name}", "mac-address": mac_from_ip(ip),
                          "ip-addresses": [cidr], "ip-address": cidr,
                          "next-hops": [gateway], "next-hop": gateway,
                          "node-port-enable": "true", "vlan-id": "0"}}
    return {GATEWAY_CONFIG_ANNOTATION: json.dumps(config, separators=(",", ":")),
            CHASSIS_ID_ANNOTATION: name,
            PRIMARY_IFADDR_ANNOTATION: json.dumps({"ipv4": cidr})}


def dataplane_unavailable() -> str | None:
    """Why this machine cannot run the real dataplane, or None when it can."""
    if os.geteuid() != 0:
        return "not root (network namespaces and veths need it)"
    missing = [name for name in DATAPLANE_BINARIES if shutil.which(name) is None]
    if missing:
        return (f"missing {', '.join(missing)} (Debian packages iproute2, "
                "openvswitch-switch, ovn-host)")
    if not VSWITCH_SCHEMA.exists():
        return f"missing the Open vSwitch schema {VSWITCH_SCHEMA}"
    return None


def build_node(name: str, index: int) -> dict[str, object]:
    ip = node_ip(index)
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                              "kubernetes.io/os": "linux"},
                     "annotations": node_gateway_annotations(name, ip)},
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "ovnk local kubelet stand-in is posting ready status"}],
            "addresses": [{"type": "InternalIP", "address": ip},
                          {"type": "Hostname", "address": name}],
        },
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class ProcessStatus:
    name: str
    role: str
    pid: int
    running: bool
    ready: bool
    log: str


class LocalCluster:
    def __init__(self, directory: Path | str) -> None:
        self.dir = Path(directory).resolve()
        self.state_file = self.dir / "cluster.json"
        self.kubeconfig = self.dir / "kubeconfig"
        self.ovn_dir = self.dir / "ovn"
        self.run_dir = self.dir / "run"
        self.log_dir = self.dir / "logs"
        self.pki_dir = self.dir / "pki"

    @property
    def dataplane(self) -> Dataplane:
        return Dataplane(self.dir, self.sb_socket, self.log_dir)

    @property
    def nb_socket(self) -> Path:
        return self.ovn_dir / "nb.sock"

    @property
    def sb_socket(self) -> Path:
        return self.ovn_dir / "sb.sock"

    def state(self) -> ClusterState:
        return ClusterState.load(self.state_file)

    def server_url(self, port: int) -> str:
        return f"https://127.0.0.1:{port}"

    def credentials(self, port: int) -> Credentials:
        return Credentials(self.pki_dir, self.dir / "kubeconfigs", self.server_url(port))

    def component_kubeconfig(self, name: str) -> Path:
        """The kubeconfig of one process (its own identity), written by ``up``."""
        return self.credentials(0).path(name)

    # -- records ---------------------------------------------------------------------------
    def _infra_records(self, port: int) -> list[ProcessRecord]:
        ovn = self.ovn_dir
        records = [ProcessRecord(
            "apiserver", "infra",
            [sys.executable, "-m", "ovnk_core.apiserver", "--host", "127.0.0.1", "--port",
             str(port), "--data", str(self.dir / "apiserver-data.json"),
             "--cert-dir", str(self.pki_dir),
             # kubectl exec: the command runs in the pod's namespace (real dataplane)
             "--pod-netns-template",
             self.dataplane.pod_netns_prefix("{node}") + "{namespace}.{name}"],
            str(self.log_dir / "apiserver.log"))]
        for name in ("nb", "sb"):
            records.append(ProcessRecord(
                f"{name}-ovsdb", "infra",
                ["ovsdb-server", str(ovn / f"{name}.db"), f"--remote=punix:{ovn}/{name}.sock",
                 f"--unixctl={ovn}/{name}.ctl", f"--log-file={self.log_dir}/{name}-ovsdb.log",
                 f"--pidfile={self.run_dir}/{name}-ovsdb.pid", "--no-chdir", "-vconsole:off"],
                str(self.log_dir / f"{name}-ovsdb.out")))
        records.append(ProcessRecord(
            "northd", "infra",
            ["ovn-northd", f"--ovnnb-db=unix:{ovn}/nb.sock", f"--ovnsb-db=unix:{ovn}/sb.sock",
             f"--unixctl={ovn}/northd.ctl", f"--log-file={self.log_dir}/northd.log",
             "--no-chdir", "-vconsole:off", f"--pidfile={self.run_dir}/northd.pid"],
            str(self.log_dir / "northd.out")))
        return records

    @property
    def config_file(self) -> Path:
        return self.dir / "ovnk.toml"

    def write_config(self) -> None:
        """The configuration every ovnk component of this cluster runs with."""
        self.config_file.write_text(
            "# written by ovnk local up: the local cluster's ovnk configuration\n"
            "enable-multi-network = true\n"
            "enable-network-segmentation = true\n"
            'gateway-v4-masquerade-subnet = "169.254.0.0/17"\n'
            f'nb-address = "unix:{self.nb_socket}"\n'
            f'sb-address = "unix:{self.sb_socket}"\n'
            f'k8s-kubeconfig = "{self.kubeconfig}"\n')

    def _component_record(self, name: str) -> ProcessRecord:
        if name in OVNK_COMPONENTS:
            args = [sys.executable, "-m", "ovnk_core.cli.main", name, "--config",
                    str(self.config_file), "--k8s-kubeconfig",
                    str(self.component_kubeconfig(name)),
                    "--ready-file", str(self.ready_file(name))]
        else:
            args = [sys.executable, "-m", "ovnk_core.cli.main", "local", "component", name,
                    "--dir", str(self.dir)]
        return ProcessRecord(name, "component", args, str(self.log_dir / f"{name}.log"))

    def ready_file(self, name: str) -> Path:
        return self.run_dir / f"{name}.ready"

    # -- up --------------------------------------------------------------------------------
    def up(self, nodes: int = 2, timeout: float = 60.0,
           dataplane: bool | None = None) -> ClusterState:
        """Start everything; ``dataplane`` None means: a real one when the machine allows."""
        if nodes < 1:
            raise LocalClusterError("--nodes must be at least 1")
        unavailable = dataplane_unavailable()
        if dataplane and unavailable:
            raise LocalClusterError(f"no real dataplane on this machine: {unavailable}")
        if dataplane is None:
            dataplane = unavailable is None
            if unavailable:
                log.warning("local cluster without a real dataplane (pods get addresses but "
                            "carry no traffic): %s", unavailable)
        state = self.state()
        running = [r.name for r in state.processes.values() if pid_running(r.pid, r.args)]
        if running:
            raise LocalClusterError(
                f"a local cluster is already running in {self.dir} ({', '.join(running)}); "
                "see 'ovnk local status' or stop it with 'ovnk local down'")
        for directory in (self.ovn_dir, self.run_dir, self.log_dir):
            directory.mkdir(parents=True, exist_ok=True)
        for stale in self.run_dir.glob("*.ready"):
            stale.unlink()
        self._create_databases()
        SecurityOptions.in_directory(self.pki_dir)
        port = state.api_port or _free_port()
        state = ClusterState(api_port=port, nodes=node_names(nodes), dataplane=dataplane)
        try:
            for record in self._infra_records(port):
                state.processes[record.name] = spawn(record)
                state.save(self.state_file)
            self._wait_infra(state, timeout)
            admin_kubeconfig(self.pki_dir, self.server_url(port), self.kubeconfig)
            self.write_config()
            client = KubeClient(api_client_from_kubeconfig(str(self.kubeconfig)))
            self._apply_crds(client)
            for namespace in SYSTEM_NAMESPACES:
                try:
                    client.create(NAMESPACES, {"metadata": {"name": namespace}})
                except AlreadyExists:
                    pass
            self.credentials(port).issue_all(client, state.nodes)
            for index, name in enumerate(state.nodes):
                self._register_node(client, name, index)
            if dataplane:
                self._start_dataplane(state, timeout)
            for name in COMPONENTS:
                state.processes[name] = spawn(self._component_record(name))
                state.save(self.state_file)
            self._wait_components(state, list(COMPONENTS), timeout)
            if dataplane:
                self._wait_node_agents(state, timeout)
        except BaseException:
            self.down()
            raise
        return state

    def _register_node(self, admin: KubeClient, name: str, index: int) -> None:
        """Create the Node (as the admin), then publish what its node side knows about it
        (gateway, chassis, addresses) as that node's own agent identity, through
        ``nodes/status`` — the path and identity the annotation admission rules expect."""
        node = build_node(name, index)
        meta = node["metadata"]
        assert isinstance(meta, dict)
        annotations = meta.pop("annotations")
        try:
            admin.create(NODES, node)
        except AlreadyExists:
            pass  # a restart over kept state: what the node side publishes is refreshed
        agent = KubeClient(api_client_from_kubeconfig(
            str(self.component_kubeconfig(f"node-agent-{name}"))))
        agent.patch_status(NODES, name, {"metadata": {"annotations": annotations}})

    # -- the real dataplane ----------------------------------------------------------------
    def _nodes(self, state: ClusterState) -> list[NodeDataplane]:
        return [self.dataplane.node(name, index) for index, name in enumerate(state.nodes)]

    def _start_dataplane(self, state: ClusterState, timeout: float) -> None:
        """Underlay, then per node: namespace, OVS, its configuration, ovn-controller, agent."""
        dataplane = self.dataplane
        dataplane.create_underlay()
        nodes = self._nodes(state)
        for node in nodes:
            dataplane.create_node(node)
            for record in dataplane.ovs_records(node):
                state.processes[record.name] = spawn(record)
            state.save(self.state_file)
        northd = state.processes["northd"]
        wait_until(dataplane.southbound_ready, timeout, "SB_Global (written by ovn-northd)",
                   northd.log)
        for node in nodes:
            record = state.processes[f"{node.name}/ovs-vswitchd"]
            wait_until(lambda n=node: (n.dir / "ovs-vswitchd.ctl").exists()  # type: ignore[misc]
                       and n.ovs_db.exists(), timeout, f"OVS of node {node.name}", record.log)
            dataplane.configure_node(node)
            for record in (dataplane.controller_record(node), self._agent_record(node)):
                state.processes[record.name] = spawn(record)
            state.save(self.state_file)

    def pod_netns(self, namespace: str, name: str) -> str:
        """The network namespace of a running pod of this cluster's real dataplane.

        :raises LocalClusterError: no cluster, no such pod, not scheduled, or no real dataplane.
        """
        state = self.state()
        if not state.processes:
            raise LocalClusterError(f"no local cluster in {self.dir}; run 'ovnk local up'")
        if not state.dataplane:
            raise LocalClusterError(f"the local cluster in {self.dir} runs without a real "
                                    "dataplane: pods have no network namespaces")
        client = KubeClient(api_client_from_kubeconfig(str(self.kubeconfig)))
        try:
            pod = client.get(PODS, name, namespace)
        except NotFound:
            raise LocalClusterError(f"pod {namespace}/{name} not found") from None
        node = (pod.get("spec") or {}).get("nodeName")
        if not node:
            raise LocalClusterError(f"pod {namespace}/{name} is not scheduled yet")
        netns = self.dataplane.pod_netns_prefix(str(node)) + f"{namespace}.{name}"
        if not (NETNS_DIR / netns).exists():
            raise LocalClusterError(f"pod {namespace}/{name} has no network namespace yet "
                                    f"({netns}); is it Ready?")
        return netns

    def _agent_record(self, node: NodeDataplane) -> ProcessRecord:
        dataplane = self.dataplane
        return ProcessRecord(
            f"{node.name}/node-agent", "node",
            [sys.executable, "-m", "ovnk_core.cli.main", "node", "--config",
             str(self.config_file), "--k8s-kubeconfig",
             str(self.component_kubeconfig(f"node-agent-{node.name}")),
             "--node-name", node.name, "--ovs-db", str(node.ovs_db),
             "--cni-socket", str(dataplane.cni_socket(node.name)),
             "--pod-netns-prefix", dataplane.pod_netns_prefix(node.name),
             "--node-netns", node.netns,
             "--ready-file", str(self.ready_file(f"node-agent-{node.name}"))],
            # in the host's namespace, where the API server's loopback address is; it works
            # on the node's namespace by name (netlink) and on its OVS by socket
            str(self.log_dir / f"{node.name}-node-agent.log"))

    def _wait_node_agents(self, state: ClusterState, timeout: float) -> None:
        for node in state.nodes:
            record = state.processes[f"{node}/node-agent"]
            wait_until(lambda r=record, n=node: self.ready_file(  # type: ignore[misc]
                f"node-agent-{n}").exists() or not pid_running(r.pid, r.args), timeout,
                f"node agent of {node}", record.log)
            if not pid_running(record.pid, record.args):
                raise LocalClusterError(f"node agent of {node} exited; see {record.log}")

    def _create_databases(self) -> None:
        for name, schema in (("nb", NB_SCHEMA), ("sb", SB_SCHEMA)):
            db = self.ovn_dir / f"{name}.db"
            if not db.exists():
                subprocess.run(["ovsdb-tool", "create", str(db), str(schema)], check=True,
                               capture_output=True)

    def _wait_infra(self, state: ClusterState, timeout: float) -> None:
        api = state.processes["apiserver"]
        wait_until(lambda: self._healthz(state.api_port) or not pid_running(api.pid, api.args),
                   timeout, "API server", api.log)
        if not pid_running(api.pid, api.args):
            raise LocalClusterError(f"API server exited; see {api.log}")
        for name, sock in (("nb-ovsdb", self.nb_socket), ("sb-ovsdb", self.sb_socket)):
            record = state.processes[name]
            wait_until(sock.exists, timeout, f"{name} socket", record.log)
        northd = state.processes["northd"]
        wait_until((self.ovn_dir / "northd.ctl").exists, timeout, "ovn-northd", northd.log)

    def _wait_components(self, state: ClusterState, names: list[str], timeout: float) -> None:
        for name in names:
            record = state.processes[name]
            wait_until(lambda r=record: self.ready_file(r.name).exists()  # type: ignore[misc]
                       or not pid_running(r.pid, r.args), timeout, f"component {name}",
                       record.log)
            if not pid_running(record.pid, record.args):
                raise LocalClusterError(f"component {name} exited; see {record.log}")

    def _healthz(self, port: int) -> bool:
        """Whether the API server answers /healthz (HTTPS, verified against the cluster CA)."""
        try:
            context = ssl.create_default_context(cafile=str(self.pki_dir / "ca.crt"))
            with urllib.request.urlopen(f"{self.server_url(port)}/healthz", timeout=1,
                                        context=context) as rsp:
                return bool(rsp.status == 200)
        except (OSError, ssl.SSLError):
            return False

    def _apply_crds(self, client: KubeClient) -> None:
        for path in sorted(CRD_DIR.glob("*.yaml")):
            apply_documents(client, yaml.safe_load_all(path.read_text()))

    # -- status / restart / down -----------------------------------------------------------
    def status(self) -> list[ProcessStatus]:
        state = self.state()
        result = []
        for record in state.processes.values():
            running = pid_running(record.pid, record.args)
            if record.name == "apiserver":
                ready = running and self._healthz(state.api_port)
            elif record.role == "component":
                ready = running and self.ready_file(record.name).exists()
            elif record.name.endswith("/node-agent"):
                node = record.name.split("/", 1)[0]
                ready = running and self.ready_file(f"node-agent-{node}").exists()
            else:
                ready = running
            result.append(ProcessStatus(record.name, record.role, record.pid, running, ready,
                                        record.log))
        return result

    def restart(self, component: str | None = None, timeout: float = 60.0) -> list[str]:
        """Restart the components (all, or one); ``node-agent`` restarts every node's agent.

        The API server, OVN databases and the nodes' OVS and ovn-controller keep running.
        """
        state = self.state()
        if not state.processes:
            raise LocalClusterError(f"no local cluster in {self.dir}; run 'ovnk local up'")
        names = [component] if component else list(COMPONENTS)
        agents = state.dataplane and (component is None or component == NODE_AGENT)
        names = [name for name in names if name != NODE_AGENT]
        for name in names:
            if name not in COMPONENTS:
                raise LocalClusterError(
                    f"{name!r} is not a restartable component (components: "
                    f"{', '.join(self.restartable(state))}; the API server and OVN databases "
                    "keep running)")
        if component == NODE_AGENT and not state.dataplane:
            raise LocalClusterError("this local cluster runs without a real dataplane: it has "
                                    "no node agents")
        for name in names:
            record = state.processes.get(name) or self._component_record(name)
            terminate(record)
            self.ready_file(name).unlink(missing_ok=True)
            state.processes[name] = spawn(self._component_record(name))
            state.save(self.state_file)
        restarted = list(names)
        if agents:
            for node in self._nodes(state):
                name = f"{node.name}/{NODE_AGENT}"
                if name in state.processes:
                    terminate(state.processes[name])
                self.ready_file(f"{NODE_AGENT}-{node.name}").unlink(missing_ok=True)
                state.processes[name] = spawn(self._agent_record(node))
                state.save(self.state_file)
                restarted.append(name)
        self._wait_components(state, names, timeout)
        if agents:
            self._wait_node_agents(state, timeout)
        return restarted

    @staticmethod
    def restartable(state: ClusterState) -> list[str]:
        return [*COMPONENTS, *([NODE_AGENT] if state.dataplane else [])]

    def down(self) -> list[str]:
        state = self.state()
        stopped = []
        # components first (the kubelet still reaches the node agents), then each node's
        # daemons in the reverse of their start order, the infrastructure last
        components = [n for n, r in state.processes.items() if r.role == "component"]
        node_daemons = [n for n, r in reversed(state.processes.items()) if r.role == "node"]
        order = components + node_daemons + [n for n in reversed(INFRA)
                                             if n in state.processes]
        for name in order:
            if terminate(state.processes[name]):
                stopped.append(name)
        for ready in self.run_dir.glob("*.ready") if self.run_dir.exists() else ():
            ready.unlink()
        removed = self.dataplane.destroy()
        if removed:
            log.info("removed network namespaces: %s", ", ".join(removed))
        state.processes = {}
        if self.dir.exists():
            state.save(self.state_file)
        return stopped
