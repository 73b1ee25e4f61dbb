"""``ovnk local``: one command for a whole local cluster.

``up`` starts, as separate processes, the local API server, the OVN NB and
SB databases and ovn-northd (the infrastructure, which keeps state across
restarts), then the components (scheduler, kubelet stand-in, EndpointSlice
controller, and the ovnk components as they arrive); it creates the Node
objects, applies the project's CRDs, writes ``DIR/kubeconfig`` and waits
until every component reports ready.  ``restart`` restarts components only,
the way an operator restarts ovnkube pods; ``down`` stops everything by pid.
The ovnk components (cluster manager, zone controller, node agents) run with
``DIR/ovnk.toml`` and the flags given to ``up`` (``ovnk_local.settings``),
kept in ``cluster.json`` for restarts and ``status``.

The components and node agents are supervised: ``up`` starts a supervisor
process (``ovnk local supervise``, ``ovnk_local.supervision``) right
after the infrastructure, records it in ``cluster.json`` and leaves it the
starting of every supervised process, so the supervisor is their parent,
knows how each one ended and restarts whatever dies, with backoff.
``restart`` asks it for restarts through ``cluster.json`` (a request flag per
record) and waits for them; ``down`` marks every record unwanted, stops the
supervisor first, then everything else.  Every change of ``cluster.json`` is
made under its lock and written atomically (``ovnk_local.state``).

Where the machine allows it (root, iproute2, Open vSwitch and ovn-controller
installed), ``up`` also gives every node a real dataplane (``dataplane``): a
network namespace with its own OVS and ovn-controller, and a node agent
(``ovnk node``) that wires pods for the kubelet stand-in; pods then carry real
traffic.  Without it the cluster runs as before and says why.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import os
import shutil
import socket
import ssl
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ovnk_core.annotations import node_encap_ips, node_gateway
from ovnk_core.annotations.node_zone import ZONE_ANNOTATION
from ovnk_core.cli.cluster_access import LOCAL_OVN_NAME
from ovnk_core.config import Config, as_environment
from ovnk_core.config.loader import CONFIG_FILE_ENV
from ovnk_core.kube.apply import apply_documents
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.errors import AlreadyExists, NotFound
from ovnk_core.kube.resources import NAMESPACES, NODES, PODS
from ovnk_core.manifests.crds import build_crds
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.node.netns import NETNS_DIR
from ovnk_core.ovn import install
from ovnk_core.ovn.install import command
from ovnk_core.ovn.processes import ensure_database
from ovnk_core.readiness import not_ready_reason
from ovnk_core.udn.sections import sections_for
from ovnk_local import manifest_components, zones
from ovnk_local.admission_webhook import WEBHOOK, LocalWebhook
from ovnk_local.apiserver.security import SecurityOptions, admin_kubeconfig
from ovnk_local.cgroups import ensure_kubelet_cgroup, kubelet_cgroup_flags, remove_cluster_cgroups
from ovnk_local.cni_runtime import install_cni_config
from ovnk_local.components import COMPONENTS as STAND_INS
from ovnk_local.credentials import Credentials
from ovnk_local.dataplane import (
    UNDERLAY_GATEWAYS,
    UNDERLAY_NETWORKS,
    Dataplane,
    DataplaneError,
    NodeDataplane,
    ipv6_unavailable,
    node_cidr,
)
from ovnk_local.physical_networks import (
    DEFAULT_PHYSICAL_NETWORKS,
    PhysicalNetwork,
    attach_node,
    check_names,
    configure_segment,
    create_segment,
)
from ovnk_local.runtime import kill_leftovers
from ovnk_local.settings import ComponentSettings
from ovnk_local.state import ClusterState, ProcessRecord, StateFile
from ovnk_local.supervision import waiting_for
from ovnk_local.supervisor import (
    LocalClusterError,
    cluster_marker,
    kill_pids,
    marked_processes,
    pid_running,
    record_ready,
    spawn,
    terminate,
    terminate_all,
    wait_until,
)

log = logging.getLogger(__name__)

DATAPLANE_PROGRAMS = ("ovsdb-server", "ovsdb-tool", "ovs-vswitchd", "ovs-vsctl",
                      "ovn-controller")  # the selected OVN's (ovnk_core.ovn.install)
OVN_DATABASES = ("nb-ovsdb", "sb-ovsdb")
OVN = (*OVN_DATABASES, "northd")
INFRA = ("apiserver", *OVN)
OVNK_COMPONENTS = ("cluster-manager", "controller")
NODE_AGENT = "node-agent"
NODE_DAEMONS = ("ovsdb-server", "ovs-vswitchd", "ovn-controller", NODE_AGENT)  # per node
SUPERVISOR = "supervisor"
COMPONENTS = (*STAND_INS, *OVNK_COMPONENTS)
SYSTEM_NAMESPACES = ("default", "kube-system", "ovn-kubernetes")
GATEWAY_PHYSICAL_NETWORK = "physnet"  # the node agent's (--physical-network) for breth0


def node_names(count: int) -> list[str]:
    """kind's naming, as in the upstream docs: ovn-worker, ovn-worker2, ..."""
    return ["ovn-worker" if i == 0 else f"ovn-worker{i + 1}" for i in range(count)]


def node_gateway_annotations(name: str, *cidrs: str) -> dict[str, str]:
    """What a node agent publishes about the node's external gateway (shared mode, breth0)
    and its tunnel endpoint.

    ``ovnk local`` writes these itself when it creates the Node, with the values the
    node's namespace gets: the node IPs on ``breth0`` (``cidrs``, one per IP family, the
    primary first; a bare address is taken on the underlay's prefix), the underlay's
    gateway of each family as next hops, the chassis name (= node name) its
    ovn-controller registers, and the primary node IP as its only geneve encap IP
    (``ovn-encap-ip``).
    """
    interfaces = [ipaddress.ip_interface(cidr) if "/" in cidr else ipaddress.ip_interface(
        f"{cidr}/{UNDERLAY_NETWORKS[ipaddress.ip_address(cidr).version].prefixlen}")
        for cidr in cidrs]
    config = node_gateway.GatewayConfig(
        mode="shared", bridge_id="breth0", mac=mac_from_ip(interfaces[0].ip),
        ips=tuple(str(interface) for interface in interfaces),
        next_hops=tuple(UNDERLAY_GATEWAYS[interface.version] for interface in interfaces))
    first = {version: next((str(i) for i in interfaces if i.version == version), None)
             for version in (4, 6)}
    return {node_gateway.GATEWAY_CONFIG_ANNOTATION: node_gateway.serialize(config, name),
            node_gateway.CHASSIS_ID_ANNOTATION: name,
            node_gateway.PRIMARY_IFADDR_ANNOTATION: node_gateway.serialize_primary_ifaddr(
                ipv4=first[4], ipv6=first[6]),
            node_encap_ips.NODE_ENCAP_IPS_ANNOTATION: node_encap_ips.serialize(
                [str(interfaces[0].ip)])}


def dataplane_unavailable() -> str | None:
    """Why this machine cannot run the real dataplane, or None when it can."""
    if os.geteuid() != 0:
        return "not root (network namespaces and veths need it)"
    if shutil.which("ip") is None:
        return "missing ip (Debian package iproute2)"
    ovn = install.selected()
    missing = ovn.missing(*DATAPLANE_PROGRAMS)
    if missing:
        where = "Debian packages openvswitch-switch, ovn-host" if ovn.root is None \
            else f"OVN root {ovn.root}"
        return f"missing {', '.join(missing)} ({where})"
    if not ovn.schema("vswitch").exists():
        return f"missing the Open vSwitch schema {ovn.schema('vswitch')}"
    return None


def build_node(name: str, index: int, families: tuple[int, ...] = (4,)) -> dict[str, object]:
    """The Node ``ovnk local`` creates: an underlay address of each IP version of
    ``families`` (the primary first, as a dual-stack kubelet lists its InternalIPs)."""
    cidrs = [node_cidr(index, version) for version in families]
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                              "kubernetes.io/os": "linux"},
                     "annotations": node_gateway_annotations(name, *cidrs)},
        "spec": {},
        "status": {
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "ovnk local kubelet stand-in is posting ready status"}],
            "addresses": [*({"type": "InternalIP", "address": cidr.split("/")[0]}
                            for cidr in cidrs),
                          {"type": "Hostname", "address": name}],
        },
    }


def refresh(record: ProcessRecord, fresh: ProcessRecord) -> None:
    """Give ``record`` (with its history) how ``fresh`` is run today."""
    record.args, record.log, record.env = fresh.args, fresh.log, fresh.env
    record.container, record.mounts = fresh.container, fresh.mounts
    record.supervised, record.ready_file = True, fresh.ready_file
    record.ready_socket, record.requires = fresh.ready_socket, fresh.requires
    record.bound_to = fresh.bound_to


def _by_daemon(names: list[str]) -> list[list[str]]:
    """``NODE/DAEMON`` names grouped by daemon, in the order each daemon first appears."""
    stages: dict[str, list[str]] = {}
    for name in names:
        stages.setdefault(name.rpartition("/")[2], []).append(name)
    return list(stages.values())


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
    restarts: int = 0  # automatic restarts by the supervisor after it died
    last_exit: str = ""  # how it last ended ("exit code 1", "killed by signal 9 (SIGKILL)")
    last_exit_at: float = 0.0
    last_exit_log: tuple[str, ...] = ()  # the tail of its log when it ended
    next_start: float = 0.0  # when the supervisor starts it again (0: not waiting)
    waiting_for: tuple[str, ...] = ()  # what it requires that is not ready (not running)
    not_ready: str = ""  # why it says it is not ready (running)


class LocalCluster:
    def __init__(self, directory: Path | str) -> None:
        self.dir = Path(directory).resolve()
        self.state_file = self.dir / "cluster.json"
        self.states = StateFile(self.state_file)
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
        return self.states.read()

    def _record(self, *records: ProcessRecord) -> None:
        """Add or replace records in ``cluster.json`` (under its lock)."""
        with self.states.update() as state:
            for record in records:
                state.processes[record.name] = record

    def server_url(self, port: int) -> str:
        return f"https://127.0.0.1:{port}"

    def credentials(self, port: int) -> Credentials:
        return Credentials(self.pki_dir, self.dir / "kubeconfigs", self.server_url(port))

    def component_kubeconfig(self, name: str) -> Path:
        """The kubeconfig of one process (its own identity), written by ``up``."""
        return self.credentials(0).path(name)

    # -- records ---------------------------------------------------------------------------
    def _infra_records(self, port: int, settings: ComponentSettings,
                       config: Config, zone_mode: str = zones.SINGLE) -> list[ProcessRecord]:
        """The API server, the OVN databases and northd (the supervisor's to start: northd
        once both databases serve).

        The API server loads ovnk's admission hooks (``ovnk.admission``), which read the
        components' configuration as a component does (``$OVNK_CONFIG``, ``OVNK_*``): it
        gets ``DIR/ovnk.toml`` and the flags given to ``up`` as variables, so it accepts a
        UDN/CUDN exactly when the components enable its topology (``--topologies``); it
        allocates ClusterIPs from the components' service CIDRs (both families'
        on a dual-stack cluster)."""
        ovn = self.ovn_dir
        records = [ProcessRecord(
            "apiserver", "infra",
            [sys.executable, "-m", "ovnk_local.apiserver", "--host", "127.0.0.1", "--port",
             str(port), "--data", str(self.dir / "apiserver-data.json"),
             "--cert-dir", str(self.pki_dir),
             # kubectl exec: the command runs in the pod's namespace (real dataplane)
             "--pod-netns-template",
             self.dataplane.pod_netns_prefix("{node}") + "{namespace}.{name}",
             "--node-netns-template", self.dataplane.node_netns("{node}"),
             *(f"--service-cidr={cidr}" for cidr in config.service_cidrs)],
            str(self.log_dir / "apiserver.log"),
            env={CONFIG_FILE_ENV: str(self.config_file), **as_environment(settings.given),
                 **cluster_marker(self.dir)})]
        if zone_mode == zones.PER_NODE:  # each node's zone has its own OVN (zone_records)
            return records
        for name in ("nb", "sb"):
            records.append(ProcessRecord(
                f"{name}-ovsdb", "infra",
                command("ovsdb-server", str(ovn / f"{name}.db"),
                        f"--remote=punix:{ovn}/{name}.sock", f"--unixctl={ovn}/{name}.ctl",
                        f"--log-file={self.log_dir}/{name}-ovsdb.log",
                        f"--pidfile={self.run_dir}/{name}-ovsdb.pid", "--no-chdir",
                        "-vconsole:off"),
                str(self.log_dir / f"{name}-ovsdb.log"), supervised=True,
                ready_socket=str(ovn / f"{name}.sock")))
        records.append(ProcessRecord(
            "northd", "infra",
            command("ovn-northd", f"--ovnnb-db=unix:{ovn}/nb.sock",
                    f"--ovnsb-db=unix:{ovn}/sb.sock", f"--unixctl={ovn}/northd.ctl",
                    f"--log-file={self.log_dir}/northd.log", "--no-chdir", "-vconsole:off",
                    f"--pidfile={self.run_dir}/northd.pid"),
            str(self.log_dir / "northd.log"), supervised=True,
            ready_socket=str(ovn / "northd.ctl"), requires=list(OVN_DATABASES)))
        return records

    @property
    def config_file(self) -> Path:
        return self.dir / "ovnk.toml"

    def owned_settings(self) -> dict[str, Any]:
        """The component options this cluster sets itself (``settings.OWNED``): its OVN
        databases and the admin's kubeconfig (each process gets its own as a flag)."""
        return {"nb_address": f"unix:{self.nb_socket}", "sb_address": f"unix:{self.sb_socket}",
                "kubeconfig": str(self.kubeconfig)}

    def write_config(self, settings: ComponentSettings | None = None) -> None:
        """The configuration file every ovnk component of this cluster runs with."""
        settings = settings or ComponentSettings()
        self.config_file.write_text(settings.file_text(self.owned_settings()))

    def ovn_names(self, state: ClusterState) -> list[str]:
        """The records of the cluster's OVN: the one zone's, or every node's zone's."""
        if state.zones == zones.PER_NODE:
            return [name for node in state.nodes for name in zones.ovn_names(node)]
        return list(OVN)

    def components(self, state: ClusterState) -> list[str]:
        """The component records: the stand-ins, the cluster manager and the zone
        controller, or one zone controller per node (``NODE/controller``)."""
        if state.zones == zones.PER_NODE:
            return [*(n for n in COMPONENTS if n != "controller"),
                    *(zones.controller_name(node) for node in state.nodes)]
        return list(COMPONENTS)

    def southbound(self, state: ClusterState, node: str) -> Path:
        """The SB socket ``node``'s ovn-controller uses: its zone's, or the one zone's."""
        return zones.sb_socket(self.ovn_dir, node) if state.zones == zones.PER_NODE \
            else self.sb_socket

    def _zone_records(self, state: ClusterState) -> list[ProcessRecord]:
        """Per node, its zone's NB, SB and ovn-northd (none in the single zone)."""
        if state.zones != zones.PER_NODE:
            return []
        return [record for node in state.nodes
                for record in zones.ovn_records(self.ovn_dir, self.log_dir, self.run_dir, node)]

    def _component_record(self, name: str) -> ProcessRecord:
        node, _, daemon = name.partition("/")
        if self.state().manifests and (name == "cluster-manager"
                                       or daemon == zones.ZONE_CONTROLLER):
            return manifest_components.record(self, name)
        if daemon == zones.ZONE_CONTROLLER:
            return zones.controller_record(
                self.ovn_dir, self.log_dir, self.ready_file(f"{node}-controller"),
                self.config_file, self.component_kubeconfig("controller"),
                self.state().component_flags, node)
        if name in OVNK_COMPONENTS:
            args = [sys.executable, "-m", "ovnk_core.cli.main", name, "--config",
                    str(self.config_file), "--k8s-kubeconfig",
                    str(self.component_kubeconfig(name)),
                    "--ready-file", str(self.ready_file(name)),
                    *self.state().component_flags]
        else:
            args = [sys.executable, "-m", "ovnk_core.cli.main", "local", "component", name,
                    "--dir", str(self.dir)]
        return ProcessRecord(name, "component", args, str(self.log_dir / f"{name}.log"),
                             supervised=True, ready_file=str(self.ready_file(name)),
                             # the zone controller renders into NB: it starts once NB serves
                             requires=["nb-ovsdb"] if name == "controller" else [])

    def _supervisor_record(self) -> ProcessRecord:
        return ProcessRecord(
            SUPERVISOR, SUPERVISOR,
            [sys.executable, "-m", "ovnk_core.cli.main", "local", "supervise",
             "--dir", str(self.dir)],
            str(self.log_dir / f"{SUPERVISOR}.log"), env=cluster_marker(self.dir))

    def _ensure_supervisor(self, state: ClusterState) -> None:
        """Start a supervisor when the state has none running (call under the lock)."""
        current = state.processes.get(SUPERVISOR)
        if current is None or not pid_running(current.pid, current.args):
            if current is not None:
                log.warning("the supervisor of %s was not running; starting a new one (the "
                            "processes it started before report an unknown exit status)",
                            self.dir)
            state.processes[SUPERVISOR] = spawn(self._supervisor_record())

    def ready_file(self, name: str) -> Path:
        return self.run_dir / f"{name}.ready"

    # -- up --------------------------------------------------------------------------------
    def use_recorded_ovn(self) -> None:
        """Run the OVN this cluster was brought up with (its ``ovn`` in ``cluster.json``),
        here and in every process started from here (``OVNK_OVN``)."""
        recorded = self.state().ovn
        if recorded:
            os.environ[install.OVN_ENV] = recorded

    def up(self, nodes: int = 2, timeout: float = 60.0, dataplane: bool | None = None,
           settings: ComponentSettings | None = None,
           physical_networks: list[str] | None = None, ovn: str | None = None,
           zone_mode: str = zones.SINGLE, manifests: Path | None = None) -> ClusterState:
        """Start everything; ``dataplane`` None means: a real one when the machine allows.

        ``ovn``: which OVN (and OVS) every process of the cluster runs
        (``ovnk_core.ovn.install``: ``system``, ``26.03``, a root's directory; None:
        ``$OVNK_OVN``, else the pinned OVN, 26.03).  Databases
        kept from a run on another OVN are converted to its schemas.

        ``settings``: the ovnk components' options (``ovnk_local.settings``), checked as
        the components will load them before anything starts.  ``physical_networks``: the
        physical networks (``ovnk_local.physical_networks``) the real dataplane's nodes are
        on, besides the underlay; ``None``: ``physnet1``.  ``zone_mode``: one OVN zone for
        every node (``single``) or one per node (``per-node``: ``ovnk_local.zones``).
        ``manifests``: a kustomize directory (``dist/``) whose objects are created and whose
        Deployment and DaemonSet run the cluster manager and the zone controllers
        (``ovnk_local.manifest_pods``; it needs per-node zones).

        :raises ConfigError: an invalid or inconsistent component option.
        """
        settings = settings or ComponentSettings()
        config = settings.check(self.owned_settings())
        try:
            chosen = install.select(ovn or os.environ.get(install.OVN_ENV) or install.PINNED_SERIES)
        except install.OvnInstallError as exc:
            raise LocalClusterError(str(exc)) from None
        # this process and everything it starts (the supervisor, hence every process of the
        # cluster) run that OVN
        os.environ[install.OVN_ENV] = chosen.spec
        if nodes < 1:
            raise LocalClusterError("--nodes must be at least 1")
        if zone_mode not in zones.ZONE_MODES:
            raise LocalClusterError(f"--zones {zone_mode!r} is not one of "
                                    f"{', '.join(zones.ZONE_MODES)}")
        try:
            physical = check_names(list(DEFAULT_PHYSICAL_NETWORKS if physical_networks is None
                                        else physical_networks), GATEWAY_PHYSICAL_NETWORK)
        except DataplaneError as exc:
            raise LocalClusterError(str(exc)) from None
        if manifests is not None and zone_mode != zones.PER_NODE:
            raise LocalClusterError("--from-manifests runs the DaemonSet's zone controller on "
                                    "every node: it needs --zones per-node")
        if manifests is not None and (settings.given or settings.source):
            raise LocalClusterError("--from-manifests: the components' options are the "
                                    "manifests' (the ConfigMap's ovnk.toml, the containers' "
                                    "args); give them there, not to 'ovnk local up'")
        unavailable = dataplane_unavailable()
        if dataplane and unavailable:
            raise LocalClusterError(f"no real dataplane on this machine: {unavailable}")
        if dataplane is None:
            dataplane = unavailable is None
            if unavailable:
                log.warning("local cluster without a real dataplane (pods get addresses but "
                            "carry no traffic): %s", unavailable)
        without_ipv6 = ipv6_unavailable()
        if dataplane and 6 in config.ip_families and without_ipv6:
            raise LocalClusterError(f"--ip-family {settings.ip_family} needs IPv6 on this "
                                    f"machine: {without_ipv6}")
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.states.update() as state:
            running = [r.name for r in state.processes.values()
                       if pid_running(r.pid, r.args)]
            if running:
                raise LocalClusterError(
                    f"a local cluster is already running in {self.dir} "
                    f"({', '.join(running)}); see 'ovnk local status' or stop it with "
                    "'ovnk local down'")
            port = state.api_port or _free_port()
            state.api_port, state.nodes, state.dataplane = port, node_names(nodes), dataplane
            state.component_flags, state.config_source = settings.flags, settings.source
            state.ovn = chosen.spec
            state.zones = zone_mode
            state.manifests = str(manifests.resolve()) if manifests is not None else ""
            state.physical_networks = physical if dataplane else []
            state.ip_families = list(dict.fromkeys(
                subnet.cidr.version for subnet in config.cluster_subnets))
            state.processes = {}
        for directory in (self.ovn_dir, self.run_dir, self.log_dir):
            directory.mkdir(parents=True, exist_ok=True)
        for stale in self.run_dir.glob("*.ready"):
            stale.unlink()
        self._remove_containers()  # a cluster that ended without 'down' leaves none running
        state = self.state()
        self._create_databases(state)
        SecurityOptions.in_directory(self.pki_dir)
        try:
            # before the API server starts: its admission hooks read it (OVNK_CONFIG)
            self.write_config(settings)
            # the read-only tools (ovnk reachability) find it next to the kubeconfig
            (self.dir / LOCAL_OVN_NAME).write_text(chosen.spec + "\n")
            apiserver, *ovn_records = self._infra_records(port, settings, config, zone_mode)
            # the supervisor starts OVN
            self._record(spawn(apiserver), *ovn_records, *self._zone_records(state))
            with self.states.update() as locked:
                self._ensure_supervisor(locked)
            state = self.state()
            self._wait_infra(state, timeout)
            admin_kubeconfig(self.pki_dir, self.server_url(port), self.kubeconfig)
            client = KubeClient(api_client_from_kubeconfig(str(self.kubeconfig)))
            # ovnk's annotation rules: the API server calls ovnk webhook for them
            webhook = LocalWebhook(self.pki_dir / WEBHOOK, _free_port())
            self._record(webhook.record(self.log_dir, self.ready_file(WEBHOOK)))
            self._wait_ready([WEBHOOK], timeout)
            webhook.configure(client)
            from_manifests = self._apply_manifests(client, state) if manifests else None
            if from_manifests is None:
                self._apply_crds(client, config)
            for namespace in SYSTEM_NAMESPACES:
                try:
                    client.create(NAMESPACES, {"metadata": {"name": namespace}})
                except AlreadyExists:
                    pass
            self.credentials(port).issue_all(client, state.nodes, config,
                                             ovnk_rbac=from_manifests is None)
            for index, name in enumerate(state.nodes):
                self._register_node(client, name, index, tuple(state.ip_families),
                                    zone=name if zone_mode == zones.PER_NODE else None)
            if dataplane:
                self._start_dataplane(state, timeout)
            # the supervisor starts them (it is their parent, and restarts them when they die)
            components = self.components(state)
            self._record(*(self._component_record(name) for name in components))
            self._wait_ready(components, timeout)
            if dataplane:
                self._wait_ready([f"{node}/{daemon}" for node in state.nodes
                                  for daemon in ("ovn-controller", NODE_AGENT)], timeout)
        except BaseException:
            self.down()
            raise
        return self.state()

    def _register_node(self, admin: KubeClient, name: str, index: int,
                       families: tuple[int, ...], zone: str | None = None) -> None:
        """Create the Node (as the admin), then publish what its node side knows about it
        (gateway, chassis, addresses; its ``k8s.ovn.org/zone-name`` with per-node zones) as
        that node's own agent identity, through ``nodes/status`` — the path and identity the
        annotation admission rules expect."""
        node = build_node(name, index, families)
        meta = node["metadata"]
        assert isinstance(meta, dict)
        annotations = meta.pop("annotations")
        if zone is not None:
            annotations[ZONE_ANNOTATION] = zone
        try:
            admin.create(NODES, node)
        except AlreadyExists:
            pass  # a restart over kept state: what the node side publishes is refreshed
        agent = KubeClient(api_client_from_kubeconfig(
            str(self.component_kubeconfig(f"node-agent-{name}"))))
        agent.patch_status(NODES, name, {"metadata": {"annotations": annotations}})

    # -- the real dataplane ----------------------------------------------------------------
    def _nodes(self, state: ClusterState) -> list[NodeDataplane]:
        return [self.dataplane.node(name, index, tuple(state.ip_families))
                for index, name in enumerate(state.nodes)]

    def _start_dataplane(self, state: ClusterState, timeout: float) -> None:
        """Underlay, then per node: namespace, OVS, its configuration, ovn-controller, agent."""
        dataplane = self.dataplane
        dataplane.create_underlay(tuple(state.ip_families))
        physical = self.physical_networks(state)
        segments = [network.segment_ovs(dataplane.dir) for network in physical]
        for network, segment in zip(physical, segments, strict=True):
            create_segment(network, segment)
            self._record(*dataplane.ovs_records(segment))  # the supervisor starts them
        nodes = self._nodes(state)
        for node in nodes:
            dataplane.create_node(node)
            # before the node agent starts: it finds the kubelet's cgroup in the node's dir
            ensure_kubelet_cgroup(dataplane.prefix, node.name, node.dir)
            # the node's CNI config, as ovnk's node side installs it
            install_cni_config(node.dir, self._cni_socket(node.name))
            self._record(*dataplane.ovs_records(node))
        state = self.state()
        for node in nodes:  # each node's SB (one for all in the single zone)
            southbound = self.southbound(state, node.name)
            northd = state.processes[f"{node.name}/northd" if state.zones == zones.PER_NODE
                                     else "northd"]
            wait_until(functools.partial(dataplane.southbound_ready, southbound), timeout,
                       "SB_Global (written by ovn-northd)", northd.log)
        for network, segment in zip(physical, segments, strict=True):
            self._wait_ready(dataplane.ovs_names(segment), timeout)
            configure_segment(network, segment)
        for node in nodes:
            self._wait_ready(dataplane.ovs_names(node), timeout)
            dataplane.configure_node(node, zones.sb_socket(self.ovn_dir, node.name)
                                     if state.zones == zones.PER_NODE else None)
            for network, segment in zip(physical, segments, strict=True):
                attach_node(network, segment, node)
            # configured: the supervisor may start its ovn-controller and agent now
            sb_record = f"{node.name}/sb-ovsdb" if state.zones == zones.PER_NODE \
                else "sb-ovsdb"
            self._record(dataplane.controller_record(node, sb_record), self._agent_record(node))

    def physical_networks(self, state: ClusterState | None = None) -> list[PhysicalNetwork]:
        """The cluster's physical networks (none without a real dataplane)."""
        names = (state or self.state()).physical_networks
        return [PhysicalNetwork(name, index, self.dataplane.prefix)
                for index, name in enumerate(names)]

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
        netns = self.dataplane.node_netns(str(node)) if (pod.get("spec") or {}).get(
            "hostNetwork") else self.dataplane.pod_netns_prefix(str(node)) + f"{namespace}.{name}"
        if not (NETNS_DIR / netns).exists():
            raise LocalClusterError(f"pod {namespace}/{name} has no network namespace yet "
                                    f"({netns}); is it Ready?")
        return netns

    def _cni_socket(self, node: str) -> Path:
        """Where ``node``'s agent serves CNI (the DaemonSet's path with --from-manifests)."""
        return manifest_components.cni_socket(self, node) if self.state().manifests \
            else self.dataplane.cni_socket(node)

    def _agent_record(self, node: NodeDataplane) -> ProcessRecord:
        dataplane = self.dataplane
        wiring = ["--pod-netns-prefix", dataplane.pod_netns_prefix(node.name),
                  "--node-netns", node.netns, "--physical-network", GATEWAY_PHYSICAL_NETWORK,
                  *kubelet_cgroup_flags(node.dir)]
        ready, log = self.ready_file(f"node-agent-{node.name}"), \
            self.log_dir / f"{node.name}-node-agent.log"
        if self.state().manifests:  # the DaemonSet's container, with ovnk local's wiring
            made = manifest_components.agent_record(self, node.name, wiring, ready, log)
            made.requires, made.bound_to = dataplane.ovs_names(node), \
                [f"{node.name}/ovs-vswitchd"]
            return made
        return ProcessRecord(
            f"{node.name}/node-agent", "node",
            [sys.executable, "-m", "ovnk_core.cli.main", "node", "--config",
             str(self.config_file), "--k8s-kubeconfig",
             str(self.component_kubeconfig(f"node-agent-{node.name}")),
             "--node-name", node.name, "--ovs-db", str(node.ovs_db),
             "--cni-socket", str(self._cni_socket(node.name)), *wiring,
             "--ready-file", str(ready), *self.state().component_flags],
            # in the host's namespace, where the API server's loopback address is; it works
            # on the node's namespace by name (netlink) and on its OVS by socket
            str(log), supervised=True, ready_file=str(ready),
            # the flows it owns on breth0 are gone with a dead ovs-vswitchd: it starts again
            # after one, and fills them in again
            requires=dataplane.ovs_names(node), bound_to=[f"{node.name}/ovs-vswitchd"])

    def _remove_containers(self) -> None:
        """Kill every pod container of this cluster that still runs (the kubelet leaves
        them running when it stops, as a container runtime would) and remove the
        cluster's cgroups (``ovnk_local.runtime``, ``ovnk_local.cgroups``)."""
        killed = kill_leftovers(self.run_dir / "containers")
        if killed:
            log.info("killed pod containers: %s", ", ".join(map(str, killed)))
        remove_cluster_cgroups(self.dataplane.prefix)

    def _create_databases(self, state: ClusterState) -> None:
        """NB and SB of the cluster's OVN (of each node's zone with per-node zones): created,
        or converted when kept from a run on another OVN (an upgrade or a downgrade,
        converted as ``ovn-ctl`` does)."""
        directories = [zones.zone_dir(self.ovn_dir, node) for node in state.nodes] \
            if state.zones == zones.PER_NODE else [self.ovn_dir]
        for directory in directories:
            directory.mkdir(parents=True, exist_ok=True)
            for name in ("nb", "sb"):
                ensure_database(directory / f"{name}.db", install.schema(f"ovn-{name}"))

    def _wait_infra(self, state: ClusterState, timeout: float) -> None:
        api = state.processes["apiserver"]
        wait_until(lambda: self._healthz(state.api_port) or not pid_running(api.pid, api.args),
                   timeout, "API server", api.log)
        if not pid_running(api.pid, api.args):
            raise LocalClusterError(f"API server exited; see {api.log}")
        self._wait_ready(self.ovn_names(state), timeout)

    def _wait_ready(self, names: list[str], timeout: float, since: float = 0.0) -> None:
        """Wait until the supervisor has started each process and it is ready.

        :raises LocalClusterError: one of them ended (after ``since``; while ``up`` waits,
            at all), naming how and its log; or the supervisor is gone; or the timeout.
        """
        def what(name: str) -> str:
            node, _, daemon = name.partition("/")
            if daemon:
                return f"node agent of {node}" if daemon == NODE_AGENT else f"{daemon} of {node}"
            return f"component {name}" if name in COMPONENTS else name

        def ready(name: str) -> bool:
            """``name`` is ready; raises when any of ``names`` ended, or the supervisor."""
            state = self.state()
            supervisor = state.processes.get(SUPERVISOR)
            if supervisor is None or not pid_running(supervisor.pid, supervisor.args):
                raise LocalClusterError(f"the supervisor of {self.dir} is not running; see "
                                        f"{self.log_dir / (SUPERVISOR + '.log')}")
            for other in names:
                record = state.processes[other]
                if record.last_exit and record.last_exit_at > since:
                    tail = " | ".join(record.last_exit_log)
                    raise LocalClusterError(f"{what(other)} {record.last_exit}; see "
                                            f"{record.log}" + (f": {tail}" if tail else ""))
            record = state.processes[name]
            return not record.restart_requested and record_ready(record)

        for name in names:
            record = self.state().processes[name]
            try:
                wait_until(functools.partial(ready, name), timeout, what(name), record.log)
            except LocalClusterError as exc:
                state = self.state()
                waiting = waiting_for(state.processes[name], state)
                if not waiting:
                    raise
                raise LocalClusterError(f"{exc} (it waits for {', '.join(waiting)}, not "
                                        "ready)") from None

    def _healthz(self, port: int) -> bool:
        """Whether the API server answers /healthz (HTTPS, verified against the cluster CA)."""
        try:
            context = ssl.create_default_context(cafile=str(self.pki_dir / "ca.crt"))
            with urllib.request.urlopen(f"{self.server_url(port)}/healthz", timeout=1,
                                        context=context) as rsp:
                return bool(rsp.status == 200)
        except (OSError, ssl.SSLError):
            return False

    def _apply_manifests(self, admin: KubeClient, state: ClusterState) -> list[dict[str, Any]]:
        """``--from-manifests``: create the manifests' objects (``manifest_components``)."""
        return manifest_components.apply(self, admin, state)

    def _apply_crds(self, client: KubeClient, config: Config) -> None:
        """The project's CRDs, their UDN/CUDN topology sections those of the topology
        plugins ``config`` enables (a topology nobody renders is refused at apply time)."""
        apply_documents(client, build_crds(sections_for(config)))

    # -- status / restart / down -----------------------------------------------------------
    def status(self) -> list[ProcessStatus]:
        state = self.state()
        result = []
        for record in state.processes.values():
            running = pid_running(record.pid, record.args)
            if record.name == "apiserver":
                ready = running and self._healthz(state.api_port)
            else:
                ready = running and record_ready(record)
            result.append(ProcessStatus(
                record.name, record.role, record.pid, running, ready, record.log,
                restarts=record.restarts, last_exit=record.last_exit,
                last_exit_at=record.last_exit_at, last_exit_log=tuple(record.last_exit_log),
                next_start=record.next_start if record.wanted and not running else 0.0,
                waiting_for=tuple(waiting_for(record, state)) if record.wanted
                and not running else (),
                not_ready=not_ready_reason(Path(record.ready_file))
                if running and not ready and record.ready_file else ""))
        return result

    def restart(self, component: str | None = None, timeout: float = 60.0) -> list[str]:
        """Restart the components (all, or one); ``node-agent`` restarts every node's agent;
        an OVN process (``nb-ovsdb``, ``sb-ovsdb``, ``northd``), a node daemon
        (``ovn-controller``, ``ovs-vswitchd``, ``ovsdb-server``: every node's) or one
        node's (``NODE/DAEMON``) restarts that; a node agent restarts after its
        ovs-vswitchd.  What they hold is kept (the API server's and OVN's state).

        The supervisor carries the restarts out (it stops and starts its own children);
        this asks for them in ``cluster.json`` and waits until each one is ready again.
        """
        state = self.state()
        if not state.processes:
            raise LocalClusterError(f"no local cluster in {self.dir}; run 'ovnk local up'")
        self.use_recorded_ovn()  # a new supervisor, and a node agent's new command line
        names = self._restart_targets(state, component)
        # a node agent's command line is today's (its flags may be new); the rest keep theirs
        components = self.components(state)
        fresh = {record.name: record for record in
                 [self._component_record(name) for name in names if name in components]
                 + [self._agent_record(node) for node in self._nodes(state)
                    if f"{node.name}/{NODE_AGENT}" in names]}
        # what is bound to a restarted process restarts after it (a node agent after its
        # ovs-vswitchd): asked for too, so that this waits for it
        names += [r.name for r in state.processes.values()
                  if r.name not in names and set(r.bound_to) & set(names)]
        with self.states.update() as locked:
            # taken under the lock: whatever the supervisor recorded before is older
            requested_at = time.time()
            for name in names:
                record = locked.processes.get(name) or fresh[name]
                if name in fresh:  # keep its history, take today's command line
                    refresh(record, fresh[name])
                record.wanted = True
                record.restart_requested = True
                locked.processes[name] = record
            self._ensure_supervisor(locked)
        self._wait_ready(names, timeout, since=requested_at)
        return names

    def _restart_targets(self, state: ClusterState, component: str | None) -> list[str]:
        """The records ``restart COMPONENT`` means (see ``restart``)."""
        node_records = [name for name, record in state.processes.items()
                        if record.role == "node"]
        components = self.components(state)
        if component is None:
            return [*components, *(n for n in node_records if n.endswith(f"/{NODE_AGENT}"))]
        if component in components or component in node_records or (
                component in OVN and state.zones != zones.PER_NODE):
            return [component]
        every = [n for n in node_records if n.endswith(f"/{component}")]
        if (component in NODE_DAEMONS or state.zones == zones.PER_NODE) and every:
            return every  # every node's (with per-node zones: its zone's OVN, controller)
        if component in NODE_DAEMONS:
            raise LocalClusterError(f"this local cluster runs without a real dataplane: it has "
                                    f"no {component}")
        raise LocalClusterError(
            f"{component!r} cannot be restarted (restartable: "
            f"{', '.join(self.restartable(state))}; the API server keeps running)")

    @staticmethod
    def restartable(state: ClusterState) -> list[str]:
        return [*COMPONENTS, *OVN,
                *([*NODE_DAEMONS, "NODE/DAEMON"] if state.dataplane else [])]

    def down(self) -> list[str]:
        kept = self.dir.exists()  # never create the directory of a cluster that is not there
        if kept:
            with self.states.update() as state:
                for record in state.processes.values():
                    record.wanted = False  # stopped on purpose: the supervisor leaves them be
        state = self.state()
        stopped = []
        supervisor = state.processes.get(SUPERVISOR)
        if supervisor is not None and terminate(supervisor):
            stopped.append(SUPERVISOR)
        state = self.state()  # everything it started before it saw the records unwanted
        # components first (the kubelet still reaches the node agents), then the nodes'
        # daemons in the reverse of their start order, the infrastructure last; the
        # processes of one stage stop together (every component; each kind of node daemon
        # on every node at once), so that 'down' takes as long as the slowest of each
        components = [n for n, r in state.processes.items() if r.role == "component"]
        node_daemons = [n for n, r in reversed(state.processes.items()) if r.role == "node"]
        stages = [components, *_by_daemon(node_daemons),
                  *([n] for n in reversed(INFRA) if n in state.processes)]
        for stage in stages:
            stopped += [r.name for r in terminate_all([state.processes[n] for n in stage])]
        # what the state lost track of (a cluster.json replaced or removed under a running
        # cluster) is still marked as this cluster's
        strays = marked_processes(self.dir)
        if strays:
            log.warning("stopping processes of %s that its state did not list: %s", self.dir,
                        ", ".join(map(str, strays)))
            stopped += [f"pid {pid}" for pid in kill_pids(strays)]
        for ready in self.run_dir.glob("*.ready") if self.run_dir.exists() else ():
            ready.unlink()
        self._remove_containers()
        shutil.rmtree(manifest_components.cni_run_root(self), ignore_errors=True)
        removed = self.dataplane.destroy()
        if removed:
            log.info("removed network namespaces: %s", ", ".join(removed))
        if kept:
            with self.states.update() as final:
                final.processes = {}
        return stopped
