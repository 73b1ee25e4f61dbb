"""UDN isolation on the host, with real nftables in a throwaway namespace and a local API
server: the node agent's feature controllers (as ``ovnk node`` builds them) write upstream's
``inet ovn-kubernetes`` table, keep its sets in step with the node's pods, write nothing
when restarted with nothing changed, report a node without cgroup v2 and leave the table
behind only while the feature is enabled."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_isolation.host_isolation import HostIsolation
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import component_client
from ovnk_local.testing.control_plane import cluster_with_nodes

from ovnk_core.config import Config
from ovnk_core.contexts import NodeContext
from ovnk_core.identities import NODES_GROUP, node_agent_user
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import EVENTS, NAMESPACES, PODS
from ovnk_core.node import nft
from ovnk_core.node.feature_controllers import NodeFeatureControllers
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.capabilities import missing_capability
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.netns_fixtures import NetnsPair
from ovnk_core.testing.waiting import wait_until

TABLE = ("inet", "ovn-kubernetes")
NODE = "ovn-worker"
NS = "udn"
DUAL_STACK = {"cluster_subnets": "10.244.0.0/16/24,fd00:10:244::/48/64",
              "service_cidrs": "10.96.0.0/16,fd00:10:96::/112",
              "v6_masquerade_subnet": "fd69::/112"}
SETS = ("udn-open-ports-v4", "udn-open-ports-v6", "udn-open-ports-icmp-v4",
        "udn-open-ports-icmp-v6", "udn-pod-default-ips-v4", "udn-pod-default-ips-v6")


def expected_listing(kubelet: str | None) -> str:
    """Upstream's expected dump (udn_isolation_test.go getExpectedDump) as nft lists it."""
    comments = {
        "udn-open-ports-v4": ("ipv4_addr . inet_proto . inet_service",
                              "default network open ports of pods in user defined networks "
                              "(IPv4)"),
        "udn-open-ports-v6": ("ipv6_addr . inet_proto . inet_service",
                              "default network open ports of pods in user defined networks "
                              "(IPv6)"),
        "udn-open-ports-icmp-v4": ("ipv4_addr", "default network IPs of pods in user defined "
                                                "networks that allow ICMP (IPv4)"),
        "udn-open-ports-icmp-v6": ("ipv6_addr", "default network IPs of pods in user defined "
                                                "networks that allow ICMP (IPv6)"),
        "udn-pod-default-ips-v4": ("ipv4_addr", "default network IPs of pods in user defined "
                                                "networks (IPv4)"),
        "udn-pod-default-ips-v6": ("ipv6_addr", "default network IPs of pods in user defined "
                                                "networks (IPv6)"),
    }
    sets = "\n".join(f'\tset {name} {{\n\t\ttype {kind}\n\t\tcomment "{comment}"\n\t}}\n'
                     for name, (kind, comment) in comments.items())
    kubelet_v4 = [f"socket cgroupv2 level {kubelet} ip daddr @udn-pod-default-ips-v4 accept"]
    kubelet_v6 = [f"socket cgroupv2 level {kubelet} ip6 daddr @udn-pod-default-ips-v6 accept"]
    lines = ["ip daddr . meta l4proto . th dport @udn-open-ports-v4 accept",
             "ip daddr @udn-open-ports-icmp-v4 meta l4proto icmp accept",
             *(kubelet_v4 if kubelet else []),
             "ip daddr @udn-pod-default-ips-v4 drop",
             "ip6 daddr . meta l4proto . th dport @udn-open-ports-v6 accept",
             "ip6 daddr @udn-open-ports-icmp-v6 meta l4proto ipv6-icmp accept",
             *(kubelet_v6 if kubelet else []),
             "ip6 daddr @udn-pod-default-ips-v6 drop"]
    body = "".join(f"\t\t{line}\n" for line in lines)
    return (f"table inet ovn-kubernetes {{\n{sets}\n\tchain udn-isolation {{\n"
            '\t\tcomment "Host isolation for user defined networks"\n'
            "\t\ttype filter hook output priority filter; policy accept;\n"
            f"{body}\t}}\n}}\n")


@pytest.fixture
def admin(kube_apiserver: ServerHandle) -> KubeClient:
    client = cluster_with_nodes(kube_apiserver)
    client.create(NAMESPACES, {"metadata": {"name": NS}})
    return client


@pytest.fixture
def node_client(admin: KubeClient, kube_apiserver: ServerHandle) -> KubeClient:
    return component_client(kube_apiserver, node_agent_user(NODE), (NODES_GROUP,))


@pytest.fixture
def kubelet_cgroup() -> Iterator[tuple[Path, str]]:
    """A kubelet cgroup in the machine's cgroup v2 hierarchy: (mount, path below it)."""
    from ovnk_core.node.nft import cgroup2_root as cgroup2_mount
    mount = cgroup2_mount()
    if mount is None:
        missing_capability("no cgroup v2 hierarchy mounted on this machine")
    relative = f"ovnk-test-{secrets.token_hex(4)}/kubelet.slice/kubelet.service"
    (mount / relative).mkdir(parents=True)
    yield mount, relative
    for path in (mount / relative, (mount / relative).parent, (mount / relative).parent.parent):
        if path.exists():
            path.rmdir()


def make_pod(admin: KubeClient, name: str, ips: tuple[str, ...], node: str = NODE,
             role: str = "infrastructure-locked", open_ports: str | None = None,
             host_network: bool = False) -> None:
    entry = {"ip_addresses": [f"{ip}/24" if ":" not in ip else f"{ip}/64" for ip in ips],
             "mac_address": "0a:58:0a:f4:01:05", "role": role}
    annotations = {"k8s.ovn.org/pod-networks": json.dumps({"default": entry})}
    if open_ports is not None:
        annotations["k8s.ovn.org/open-default-ports"] = open_ports
    admin.create(PODS, {
        "metadata": {"name": name, "namespace": NS, "annotations": annotations},
        "spec": {"nodeName": node, "hostNetwork": host_network,
                 "containers": [{"name": "c", "image": "pause"}]}}, NS)
    admin.patch_status(PODS, name, {"status": {"podIPs": [{"ip": ip} for ip in ips]}}, NS)


def set_annotation(admin: KubeClient, name: str, value: str | None) -> None:
    admin.patch(PODS, name, {"metadata": {"annotations": {
        "k8s.ovn.org/open-default-ports": value}}}, NS)


def elements(netns: str) -> dict[str, set[str]]:
    return {name: set(nft.set_elements(*TABLE, name, netns)) for name in SETS}


def only(**members: set[str]) -> dict[str, set[str]]:
    return {name: members.get(name.replace("-", "_"), set()) for name in SETS}


class Agent:
    """The node agent's feature controllers of ``NODE``, started as ``ovnk node`` does."""

    def __init__(self, config: Config, client: KubeClient, netns: str) -> None:
        self.host = PluginHost.load(config)
        self.informers = InformerFactory(client)
        recorder = EventRecorder(client, "ovnkube-node", NODE)
        self.features = NodeFeatureControllers(self.host, NodeContext(
            config, client, self.informers, recorder, NODE, netns))
        self.informers.start()
        self.informers.wait_for_sync(30)
        self.features.start()

    def stop(self) -> None:
        self.features.stop()
        self.informers.stop()


def node_events(admin: KubeClient, reason: str) -> list[dict[str, Any]]:
    return [e for e in admin.list(EVENTS, "default")["items"] if e["reason"] == reason]


def pod_events(admin: KubeClient, pod: str, reason: str) -> list[dict[str, Any]]:
    return [e for e in admin.list(EVENTS, NS)["items"]
            if e["reason"] == reason and e["involvedObject"]["name"] == pod]


def nft_monitor(netns: str) -> subprocess.Popen[str]:
    """``nft monitor`` in the namespace (nsenter: only the network namespace changes)."""
    monitor = subprocess.Popen(["nsenter", f"--net=/var/run/netns/{netns}", "nft", "monitor"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(0.5)  # subscribed
    return monitor


def test_host_isolation_table_pods_restart_and_disable(
        admin: KubeClient, node_client: KubeClient, netns: str,
        kubelet_cgroup: tuple[Path, str]) -> None:
    mount, relative = kubelet_cgroup
    rule_path = str((mount / relative).relative_to("/sys/fs/cgroup"))
    config = udn_config(kubelet_cgroup_path=relative, **DUAL_STACK)
    make_pod(admin, "a", ("10.244.1.5", "fd00:10:244:1::5"),
             open_ports="- protocol: tcp\n  port: 80\n- protocol: icmp\n")
    make_pod(admin, "default-net", ("10.244.1.6",), role="primary")
    make_pod(admin, "host", ("172.18.0.2",), host_network=True)
    make_pod(admin, "elsewhere", ("10.244.2.7",), node="ovn-worker2")

    agent = Agent(config, node_client, netns)
    try:
        # upstream's table, chain, sets and rule order; the kubelet by its cgroup here
        listing = nft.list_table_text(*TABLE, netns)
        assert listing == expected_listing(f'3 "{rule_path}"'), listing
        # only this node's isolated pods
        assert elements(netns) == only(
            udn_pod_default_ips_v4={"10.244.1.5"}, udn_pod_default_ips_v6={"fd00:10:244:1::5"},
            udn_open_ports_v4={"10.244.1.5 . tcp . 80"},
            udn_open_ports_v6={"fd00:10:244:1::5 . tcp . 80"},
            udn_open_ports_icmp_v4={"10.244.1.5"},
            udn_open_ports_icmp_v6={"fd00:10:244:1::5"})

        # a new pod reusing a's IPv4 before a is gone; a's deletion leaves it to the new pod
        make_pod(admin, "reuse", ("10.244.1.5",))
        make_pod(admin, "b", ("10.244.1.9",))
        wait_until(lambda: "10.244.1.9" in elements(netns)["udn-pod-default-ips-v4"])
        admin.delete(PODS, "a", NS)
        wait_until(lambda: elements(netns) == only(
            udn_pod_default_ips_v4={"10.244.1.5", "10.244.1.9"}))
        admin.delete(PODS, "reuse", NS)
        wait_until(lambda: elements(netns) == only(udn_pod_default_ips_v4={"10.244.1.9"}))

        # open ports follow the annotation; a bad one removes them and says why on the pod
        set_annotation(admin, "b", "- protocol: udp\n  port: 53\n")
        wait_until(lambda: elements(netns)["udn-open-ports-v4"] == {"10.244.1.9 . udp . 53"})
        set_annotation(admin, "b", "- protocol: udp\n")
        wait_until(lambda: elements(netns)["udn-open-ports-v4"] == set())
        wait_until(lambda: pod_events(admin, "b", "ErrorUpdatingResource"))
        [event] = pod_events(admin, "b", "ErrorUpdatingResource")
        assert (event["type"], event["message"]) == (
            "Warning", "port is required for udp protocol")
        assert elements(netns)["udn-pod-default-ips-v4"] == {"10.244.1.9"}
        set_annotation(admin, "b", "- protocol: icmp\n")
        wait_until(lambda: elements(netns)["udn-open-ports-icmp-v4"] == {"10.244.1.9"})
    finally:
        agent.stop()
    assert not node_events(admin, "UDNKubeletProbesNotSupported")

    # a restart with nothing changed writes nothing
    before = (nft.list_table_text(*TABLE, netns, terse=False), elements(netns))
    monitor = nft_monitor(netns)
    try:
        agent = Agent(config, node_client, netns)
        agent.stop()
    finally:
        monitor.terminate()
        written = monitor.communicate(timeout=10)[0]
    assert written == ""
    assert (nft.list_table_text(*TABLE, netns, terse=False), elements(netns)) == before

    # changed while the agent was down: one full sync puts it right
    subprocess.run(["nsenter", f"--net=/var/run/netns/{netns}", "nft",
                    "add element inet ovn-kubernetes udn-pod-default-ips-v4 { 10.9.9.9 }"],
                   check=True)
    admin.delete(PODS, "b", NS)
    monitor = nft_monitor(netns)  # the same monitor sees this one's writes
    try:
        agent = Agent(config, node_client, netns)
        try:
            assert elements(netns) == only()
        finally:
            agent.stop()
    finally:
        monitor.terminate()
        written = monitor.communicate(timeout=10)[0]
    assert "add table inet ovn-kubernetes" in written

    # disabled: the table goes when the agent starts
    agent = Agent(udn_config(disabled_features="isolation"), node_client, netns)
    try:
        assert TABLE not in nft.list_tables(netns)
        assert agent.features.controllers == [] or all(
            c.name != "udn-host-isolation-manager" for c in agent.features.controllers)
    finally:
        agent.stop()


def test_without_cgroup_v2_isolation_stays_without_the_kubelet_rule(
        admin: KubeClient, node_client: KubeClient, netns: str, tmp_path: Path) -> None:
    make_pod(admin, "a", ("10.244.1.5",))
    config = udn_config()
    informers = InformerFactory(node_client)
    context = NodeContext(config, node_client, informers,
                          EventRecorder(node_client, "ovnkube-node", NODE), NODE, netns,
                          nft_table=lambda _feature: "ovn-kubernetes")
    # a directory that is no cgroup v2 root: what a cgroup v1 host offers
    isolation = HostIsolation(context, find_cgroup2=lambda: tmp_path)
    informers.start()
    try:
        informers.wait_for_sync(30)
        isolation.controller.start()
        listing = nft.list_table_text(*TABLE, netns)
        assert listing is not None and "socket cgroupv2" not in listing
        assert "ip daddr @udn-pod-default-ips-v4 drop" in listing
        assert elements(netns)["udn-pod-default-ips-v4"] == {"10.244.1.5"}
        [event] = node_events(admin, "UDNKubeletProbesNotSupported")
        assert (event["type"], event["involvedObject"]["kind"],
                event["involvedObject"]["name"], event["message"]) == (
            "Warning", "Node", NODE, f"Kubelet probes for UDN are not supported on the node "
                                     f"{NODE} as it uses cgroup v1.")
    finally:
        isolation.controller.stop()
        informers.stop()


SERVER = """
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind((sys.argv[1], int(sys.argv[2])))
server.listen(16)
print("listening", flush=True)
while True:
    server.accept()[0].close()
"""

CLIENT = """
import socket, sys
client = socket.socket()
client.settimeout(1.5)
try:
    client.connect((sys.argv[1], int(sys.argv[2])))
except OSError as exc:
    print(f"blocked: {exc}")
    sys.exit(1)
print("connected")
"""


def connects(netns: str, address: str, port: int, cgroup: Path | None) -> bool:
    """Whether a process in ``netns`` (and in ``cgroup``, joined before its socket exists)
    connects; only the network namespace is entered (``ip netns exec`` would remount
    /sys and lose the cgroup mounts)."""
    join = f'echo $$ > "{cgroup}/cgroup.procs" && ' if cgroup is not None else ""
    result = subprocess.run(
        ["sh", "-c", f'{join}exec nsenter --net=/var/run/netns/{netns} "$0" -c "$1" "$2" "$3"',
         sys.executable, CLIENT, address, str(port)],
        capture_output=True, text=True, timeout=30, check=False)
    return result.returncode == 0


def test_real_packets_only_the_kubelet_and_open_ports_get_through(
        admin: KubeClient, node_client: KubeClient, netns_pair: NetnsPair,
        kubelet_cgroup: tuple[Path, str]) -> None:
    mount, relative = kubelet_cgroup
    node, pod = netns_pair.left, netns_pair.right
    pod_ip = netns_pair.right_addr.split("/")[0]
    server = subprocess.Popen(
        ["nsenter", f"--net=/var/run/netns/{pod}", sys.executable, "-c", SERVER, pod_ip, "8080"],
        stdout=subprocess.PIPE, text=True)
    agent = None
    try:
        assert server.stdout is not None and server.stdout.readline() == "listening\n"
        assert connects(node, pod_ip, 8080, None)  # no isolation yet
        make_pod(admin, "a", (pod_ip,))
        agent = Agent(udn_config(kubelet_cgroup_path=relative), node_client, node)
        assert elements(node)["udn-pod-default-ips-v4"] == {pod_ip}
        assert connects(node, pod_ip, 8080, mount / relative)  # the kubelet: through
        assert not connects(node, pod_ip, 8080, None)  # anyone else: dropped
        set_annotation(admin, "a", "- protocol: tcp\n  port: 8080\n")
        wait_until(lambda: elements(node)["udn-open-ports-v4"] == {f"{pod_ip} . tcp . 8080"})
        assert connects(node, pod_ip, 8080, None)  # an open port: through for anyone
    finally:
        if agent is not None:
            agent.stop()
        server.kill()
        server.wait()


def test_a_kubelet_cgroup_created_again_gets_its_rules_again(
        admin: KubeClient, node_client: KubeClient, netns: str,
        kubelet_cgroup: tuple[Path, str]) -> None:
    mount, relative = kubelet_cgroup
    directory = mount / relative
    rule_path = str(directory.relative_to("/sys/fs/cgroup"))
    make_pod(admin, "a", ("10.244.1.5",))
    directory.rmdir()  # configured but missing at start: no kubelet rule, a Warning
    agent = Agent(udn_config(kubelet_cgroup_path=relative, **DUAL_STACK), node_client, netns)
    try:
        assert nft.list_table_text(*TABLE, netns) == expected_listing(None)
        [event] = node_events(admin, "UDNKubeletProbesNotSupported")
        assert event["message"].startswith(
            f"Kubelet probes for UDN are not supported on the node {NODE}: the kubelet cgroup ")
        directory.mkdir()  # there now: the rules follow
        wait_until(lambda: nft.list_table_text(*TABLE, netns)
                   == expected_listing(f'3 "{rule_path}"'))
        # the kubelet restarts in a new cgroup of the same path: nft still holds the old
        # one's id (listed as a number) until the rules are written again
        directory.rmdir()
        directory.mkdir()
        wait_until(lambda: nft.list_table_text(*TABLE, netns)
                   == expected_listing(f'3 "{rule_path}"'))
        assert elements(netns)["udn-pod-default-ips-v4"] == {"10.244.1.5"}
    finally:
        agent.stop()
