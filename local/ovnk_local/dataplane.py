"""Real packets in the local cluster: every node a network namespace with its own OVS.

ovn-trace proves the logical pipeline; this makes the local cluster carry
traffic.  Each simulated node gets a network namespace with its own
ovsdb-server, ovs-vswitchd (userspace ``netdev`` datapath, no kernel module
needed) and ovn-controller (chassis name = node name), and an uplink into an
underlay: a Linux bridge in a namespace of its own, so no address is ever
added to the host's network.  In the node, the uplink ``eth0`` is a port of
the OVS bridge ``breth0`` that carries the node IP (the userspace datapath
routes tunnel traffic only through addresses on its own bridges), so geneve
between chassis flows node IP to node IP, and ``breth0`` doubles as the
shared-gateway bridge named in the node's gateway annotation, whose flows, MAC and
bridge mapping the node agent owns (``ovnk_core.node.gateway``).  An "external
host" namespace sits on the underlay too.

Namespaces are named ``<prefix>-<role>`` with a prefix derived from the
cluster directory, so several local clusters can coexist and ``down`` finds
everything it created, pods' namespaces included.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ovnk_core.errors import OvnkError
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.node import netlink
from ovnk_core.node.netns import NETNS_DIR, run_in_netns
from ovnk_core.ovn.install import command, schema
from ovnk_core.ovn.processes import ensure_database
from ovnk_local.runtime import disable_tx_checksum_offload
from ovnk_local.state import ProcessRecord
from ovnk_local.supervisor import wait_until

UNDERLAY_BRIDGE = "underlay"
NODE_UPLINK = "eth0"
EXTERNAL_BRIDGE = "breth0"
INTEGRATION_BRIDGE = "br-int"
UNDERLAY_NETWORK = ipaddress.ip_network("172.18.0.0/16")
UNDERLAY_GATEWAY = "172.18.0.1"
EXTERNAL_HOST_IP = "172.18.255.254"
# IPv6 (ovnk local up --ip-family ipv6|dual): node IPs ::2, ::3...  Not kind's
# fc00:f853:ccd:e793::/64: a gateway router force-SNATs load-balanced traffic to the lowest
# address of each family on its port (OVN's order), which must be the masquerade address
# (fd69::..., as 169.254.x sorts before 172.18.x): were it the node IP, every NodePort packet
# would take one more conntrack pass, and one to a UDN pod on the same node would exceed the
# userspace datapath's six recirculations and be dropped
UNDERLAY_NETWORK_V6 = ipaddress.ip_network("fd80:172:18::/64")
UNDERLAY_GATEWAY_V6 = "fd80:172:18::1"
EXTERNAL_HOST_IP_V6 = "fd80:172:18::fffe"
UNDERLAY_NETWORKS = {4: UNDERLAY_NETWORK, 6: UNDERLAY_NETWORK_V6}
UNDERLAY_GATEWAYS = {4: UNDERLAY_GATEWAY, 6: UNDERLAY_GATEWAY_V6}
EXTERNAL_HOST_IPS = {4: EXTERNAL_HOST_IP, 6: EXTERNAL_HOST_IP_V6}


class DataplaneError(OvnkError):
    """A node's namespace, OVS or ovn-controller could not be set up."""


def namespace_prefix(directory: Path) -> str:
    """A short prefix unique to one cluster directory (namespace names show in ``ip netns``)."""
    return "ovnk" + hashlib.sha1(str(directory.resolve()).encode()).hexdigest()[:6]


def ipv6_unavailable() -> str | None:
    """Why this machine's kernel cannot carry IPv6 (booted with ``ipv6.disable=1``, or
    built without it), or None when it can."""
    if Path("/proc/sys/net/ipv6").exists():
        return None
    return "the kernel has no IPv6 (/proc/sys/net/ipv6 is missing)"


def node_ip(index: int, version: int = 4) -> str:
    return str(UNDERLAY_NETWORKS[version].network_address + index + 2)


def node_cidr(index: int, version: int = 4) -> str:
    """A node's address of one IP family on the underlay, with the underlay's prefix."""
    return f"{node_ip(index, version)}/{UNDERLAY_NETWORKS[version].prefixlen}"


@dataclass(frozen=True)
class NodeDataplane:
    """Where one node's dataplane lives and how its daemons are reached."""

    name: str
    index: int
    netns: str
    dir: Path
    families: tuple[int, ...] = (4,)  # IP versions of its underlay addresses, primary first

    @property
    def ip(self) -> str:
        """The node's primary address (its MAC's, and geneve's)."""
        return node_ip(self.index, self.families[0])

    @property
    def cidrs(self) -> list[str]:
        return [node_cidr(self.index, version) for version in self.families]

    @property
    def ovs_db(self) -> Path:
        return self.dir / "db.sock"

    @property
    def underlay_port(self) -> str:
        return f"n{self.index}"

    def env(self) -> dict[str, str]:
        """Run, log and database directories of this node's OVS and OVN daemons."""
        directory = str(self.dir)
        return {key: directory for key in ("OVS_RUNDIR", "OVS_LOGDIR", "OVS_DBDIR",
                                           "OVN_RUNDIR", "OVN_LOGDIR", "OVN_DBDIR")}

    def vsctl(self, *args: str, wait: bool = True) -> str:
        """``ovs-vsctl`` against this node's database."""
        options = [f"--db=unix:{self.ovs_db}", "--timeout=30", *([] if wait else ["--no-wait"])]
        result = subprocess.run(command("ovs-vsctl", *options, *args), capture_output=True,
                                text=True, env={**os.environ, **self.env()})
        if result.returncode != 0:
            raise DataplaneError(f"node {self.name}: ovs-vsctl {' '.join(args)}: "
                                 f"{result.stderr.strip()}")
        return result.stdout.strip()


def _write_sysctl(name: str, value: str) -> None:
    with open(f"/proc/sys/{name}", "w") as handle:
        handle.write(value)


def run_ip(*args: str) -> None:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise DataplaneError(f"ip {' '.join(args)}: {result.stderr.strip()}")


def ensure_netns(name: str) -> None:
    if not (NETNS_DIR / name).exists():
        run_ip("netns", "add", name)
    netlink.set_link("lo", netns=name, up=True)


def create_ovs_database(node: NodeDataplane) -> None:
    """The OVS database file of ``node`` (or of any namespace with an OVS of its own)."""
    node.dir.mkdir(parents=True, exist_ok=True)
    ensure_database(node.dir / "conf.db", schema("vswitch"))


def delete_netns(name: str) -> bool:
    if not (NETNS_DIR / name).exists():
        return False
    run_ip("netns", "del", name)
    return True


class Dataplane:
    """The namespaces and OVS daemons of one local cluster's nodes."""

    def __init__(self, cluster_dir: Path, sb_socket: Path, log_dir: Path) -> None:
        self.dir = cluster_dir / "nodes"
        self.prefix = namespace_prefix(cluster_dir)
        self.sb_socket = sb_socket
        self.log_dir = log_dir

    @property
    def underlay_netns(self) -> str:
        return f"{self.prefix}-underlay"

    @property
    def external_netns(self) -> str:
        return f"{self.prefix}-external"

    def node(self, name: str, index: int, families: tuple[int, ...] = (4,)) -> NodeDataplane:
        return NodeDataplane(name, index, self.node_netns(name), self.dir / name, families)

    def node_netns(self, node: str) -> str:
        """A node's namespace (hostNetwork pods run there): ``<prefix>-<node>``."""
        return f"{self.prefix}-{node}"

    def pod_netns_prefix(self, node: str) -> str:
        """Pods of ``node`` live in namespaces ``<prefix>-<node>-pod-<namespace>.<name>``."""
        return f"{self.prefix}-{node}-pod-"

    def cni_socket(self, node: str) -> Path:
        return self.dir.parent / "run" / "cni" / f"{node}.sock"

    # -- creation ------------------------------------------------------------------------
    def create_underlay(self, families: tuple[int, ...] = (4,)) -> None:
        """The underlay bridge (gateway addresses on it) and the external host behind it,
        with addresses of the IP versions ``families``."""
        ensure_netns(self.underlay_netns)
        netlink.ensure_bridge(UNDERLAY_BRIDGE, netns=self.underlay_netns)
        for version in families:
            netlink.ensure_address(UNDERLAY_BRIDGE, f"{UNDERLAY_GATEWAYS[version]}/"
                                   f"{UNDERLAY_NETWORKS[version].prefixlen}",
                                   netns=self.underlay_netns)
        netlink.set_link(UNDERLAY_BRIDGE, netns=self.underlay_netns, up=True)
        ensure_netns(self.external_netns)
        self._uplink(self.external_netns, "ext", None)
        for version in families:
            netlink.ensure_address(NODE_UPLINK, f"{EXTERNAL_HOST_IPS[version]}/"
                                   f"{UNDERLAY_NETWORKS[version].prefixlen}",
                                   netns=self.external_netns)
            netlink.ensure_route("0.0.0.0/0" if version == 4 else "::/0",
                                 gateway=UNDERLAY_GATEWAYS[version], netns=self.external_netns)
        # its TCP reaches gateway routers (NodePorts) through OVS's userspace conntrack,
        # which marks a packet whose checksum was left to the "hardware" invalid
        disable_tx_checksum_offload(self.external_netns)

    def _uplink(self, netns: str, underlay_port: str, cidr: str | None) -> None:
        """A veth from the underlay bridge (``underlay_port``) to ``eth0`` in ``netns``."""
        if netlink.link_index(NODE_UPLINK, netns=netns) is None:
            temporary = f"{underlay_port}-peer"
            netlink.ensure_veth(underlay_port, temporary, netns=self.underlay_netns,
                                peer_netns=netns)
            netlink.rename_link(temporary, NODE_UPLINK, netns=netns)
        netlink.set_link(underlay_port, netns=self.underlay_netns, master=UNDERLAY_BRIDGE,
                         up=True)
        if cidr is not None:
            netlink.ensure_address(NODE_UPLINK, cidr, netns=netns)
        netlink.set_link(NODE_UPLINK, netns=netns, up=True)

    def create_node(self, node: NodeDataplane) -> None:
        """The node's namespace, its uplink and its OVS database file."""
        ensure_netns(node.netns)
        self._uplink(node.netns, node.underlay_port, None)
        create_ovs_database(node)

    @staticmethod
    def ovs_names(node: NodeDataplane) -> list[str]:
        """The records of ``node``'s OVS daemons: ovsdb-server, ovs-vswitchd."""
        return [f"{node.name}/ovsdb-server", f"{node.name}/ovs-vswitchd"]

    def ovs_records(self, node: NodeDataplane) -> list[ProcessRecord]:
        """ovsdb-server and ovs-vswitchd of ``node`` (ovn-controller comes after setup),
        supervised: what they hold survives them (bridges and ports in ``conf.db``; the
        userspace datapath's tap devices, with their addresses, outlive ovs-vswitchd)."""
        d = node.dir
        common = ["--no-chdir", "-vconsole:off"]
        server, switch = self.ovs_names(node)
        return [
            ProcessRecord(server, "node",
                          command("ovsdb-server", str(d / "conf.db"),
                                  f"--remote=punix:{node.ovs_db}",
                                  f"--unixctl={d}/ovsdb-server.ctl",
                                  f"--pidfile={d}/ovsdb-server.pid",
                                  f"--log-file={self.log_dir}/{node.name}-ovsdb-server.log",
                                  *common),
                          str(self.log_dir / f"{node.name}-ovsdb-server.log"),
                          netns=node.netns, env=node.env(), supervised=True,
                          ready_socket=str(node.ovs_db)),
            ProcessRecord(switch, "node",
                          command("ovs-vswitchd", f"unix:{node.ovs_db}",
                                  f"--unixctl={d}/ovs-vswitchd.ctl",
                                  f"--pidfile={d}/ovs-vswitchd.pid",
                                  f"--log-file={self.log_dir}/{node.name}-ovs-vswitchd.log",
                                  *common),
                          str(self.log_dir / f"{node.name}-ovs-vswitchd.log"),
                          netns=node.netns, env=node.env(), supervised=True,
                          ready_socket=str(d / "ovs-vswitchd.ctl"), requires=[server]),
        ]

    def southbound_ready(self, sb_socket: Path | None = None) -> bool:
        """Whether ovn-northd has initialised the SB database (its SB_Global row exists;
        ``sb_socket``: that SB, default the cluster's).

        ovn-controller (23.03) crashes with SIGSEGV when it connects to a SB without that
        row, so controllers must start only after this holds.
        """
        result = subprocess.run(command("ovn-sbctl", f"--db=unix:{sb_socket or self.sb_socket}",
                                        "--timeout=5", "--columns=_uuid", "--bare", "list",
                                        "SB_Global"), capture_output=True, text=True)
        return result.returncode == 0 and bool(result.stdout.strip())

    def controller_record(self, node: NodeDataplane, southbound: str = "sb-ovsdb"
                          ) -> ProcessRecord:
        """ovn-controller of ``node``, supervised: started once SB (record ``southbound``)
        and the node's OVS serve; a new one takes over the chassis of the dead one and
        fills br-int's flows again."""
        return ProcessRecord(
            f"{node.name}/ovn-controller", "node",
            command("ovn-controller", f"unix:{node.ovs_db}",
                    f"--pidfile={node.dir}/ovn-controller.pid",
                    f"--log-file={self.log_dir}/{node.name}-ovn-controller.log", "--no-chdir",
                    "-vconsole:off"),
            str(self.log_dir / f"{node.name}-ovn-controller.log"),
            netns=node.netns, env=node.env(), supervised=True,
            # its control socket (it takes no --unixctl: OVN_RUNDIR/ovn-controller.PID.ctl)
            ready_socket=str(node.dir / "ovn-controller.{pid}.ctl"),
            requires=[southbound, *self.ovs_names(node)])

    def configure_node(self, node: NodeDataplane, sb_socket: Path | None = None,
                       timeout: float = 30.0) -> None:
        """Bridges, the node IP on ``breth0``, and what ovn-controller reads (OVS running):
        its SB is ``sb_socket`` (its own zone's, with per-node zones; then, as upstream's
        node side sets it, ``ovn-is-interconn=true``: ovn-controller makes tunnels to the
        other zones' chassis only on an interconnect chassis), by default the cluster's."""
        node.vsctl("init")
        node.vsctl("--may-exist", "add-br", INTEGRATION_BRIDGE, "--", "set", "bridge",
                   INTEGRATION_BRIDGE, "datapath_type=netdev", "fail-mode=secure",
                   "other-config:disable-in-band=true")
        node.vsctl("--may-exist", "add-br", EXTERNAL_BRIDGE, "--", "set", "bridge",
                   EXTERNAL_BRIDGE, "datapath_type=netdev")
        node.vsctl("--may-exist", "add-port", EXTERNAL_BRIDGE, NODE_UPLINK)
        # the MAC the node's gateway annotation announces (the gateway routers use it too);
        # set before the address and routes, since changing it resets the device
        node.vsctl("set", "bridge", EXTERNAL_BRIDGE,
                   f'other-config:hwaddr="{mac_from_ip(ipaddress.ip_address(node.ip))}"')
        # On a restart over kept state the bridges are already in conf.db, so ovs-vsctl had
        # nothing to wait for: ovs-vswitchd creates the breth0 device when it gets to it.
        wait_until(lambda: netlink.link_index(EXTERNAL_BRIDGE, netns=node.netns) is not None,
                   timeout, f"{EXTERNAL_BRIDGE} of node {node.name}",
                   str(self.log_dir / f"{node.name}-ovs-vswitchd.log"))
        # The userspace datapath reads ports through AF_PACKET, so the node's kernel also sees
        # what pods send on their veths: it must answer ARP only for addresses of the
        # interface asked on, or it claims the management ports' addresses on pod veths
        # (a kernel datapath diverts port traffic before the stack ever sees it).
        run_in_netns(node.netns, lambda: _write_sysctl("net/ipv4/conf/all/arp_ignore", "1"))
        for cidr in node.cidrs:
            netlink.ensure_address(EXTERNAL_BRIDGE, cidr, netns=node.netns)
        netlink.set_link(EXTERNAL_BRIDGE, netns=node.netns, up=True)
        for version in node.families:
            netlink.ensure_route("0.0.0.0/0" if version == 4 else "::/0",
                                 gateway=UNDERLAY_GATEWAYS[version], netns=node.netns)
        # ovn-bridge-mappings is left to the node agent: it sets it only once its flows own
        # breth0 (patched in under NORMAL switching, each gateway router, which shares the
        # node IP, would answer ARP for it on the underlay and break geneve).
        node.vsctl("set", "open_vswitch", ".",
                   f"external_ids:system-id={node.name}",
                   f"external_ids:hostname={node.name}",
                   f"external_ids:ovn-remote=unix:{sb_socket or self.sb_socket}",
                   "external_ids:ovn-encap-type=geneve",
                   f"external_ids:ovn-encap-ip={node.ip}",
                   *(["external_ids:ovn-is-interconn=true"] if sb_socket else []))

    # -- teardown ------------------------------------------------------------------------
    def namespaces(self) -> list[str]:
        """Every namespace of this cluster that exists now (pods, nodes, underlay, external)."""
        if not NETNS_DIR.exists():
            return []
        return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(self.prefix + "-"))

    def destroy(self) -> list[str]:
        """Delete every namespace of this cluster, pods first; the daemons must be stopped."""
        names = self.namespaces()
        ordered = sorted(names, key=lambda n: ("-pod-" not in n,
                                               n in (self.underlay_netns, self.external_netns)))
        for name in ordered:
            delete_netns(name)
        return ordered
