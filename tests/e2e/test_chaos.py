"""SIGKILL the cluster manager, the zone controller and OVN's own processes (the NB and SB
servers, ovn-northd) at random moments while networks and pods churn in ``ovnk local``;
afterwards nothing is wrong.  The controllers are restarted as an operator would
(``ovnk local restart``), OVN's processes by the supervisor alone.  Then, on a real
dataplane, networks no node can serve among the others while node agents are SIGKILLed.

Invariants, checked while churning and at the end: a surviving network's ID and its node
subnets never move, every pod's IP lies in its node's subnet for that network, no two pods
of a network share an IP, NB equals what a fresh zone controller renders into an empty NB
from the same cluster, and deleting every user-defined network leaves none of its rows.
On the real dataplane: every network a node can serve gets its management port on every
node and its pods run, whatever other networks fail there (each failure said on the Node),
and no node agent logs a traceback.  Hostile objects churn too (issue 30): UDNs no pod
could use (loopback, a Layer2 /30), NADs whose config holds a lone surrogate or is missing,
a pod annotated ``{"default": {}}``; each is reported on itself across the kills, and none
bends the invariants.  Seeded and CI-sized (``OVNK_CHAOS_STEPS``, ``OVNK_CHAOS_NODE_STEPS``
run longer).
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.supervisor import pid_running, record_ready
from ovnk_local.testing.dataplane import require_dataplane

from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.errors import ApiError
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.node import netlink
from ovnk_core.ovn.install import schema
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.snapshot import Snapshot, difference, snapshot
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL
from ovnk_core.zone.app import ZoneApp

pytestmark = pytest.mark.e2e

STEPS = int(os.environ.get("OVNK_CHAOS_STEPS", "45"))
NODES_COUNT = 3
POD_NETWORKS = "k8s.ovn.org/pod-networks"
NODE_SUBNETS = "k8s.ovn.org/node-subnets"
NETWORK_ID = "k8s.ovn.org/network-id"


@pytest.fixture
def local(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / ".ovnk")
    cluster.up(nodes=NODES_COUNT, timeout=90, dataplane=False)
    try:
        yield cluster
    finally:
        cluster.down()


class Observed:
    """Every allocation seen so far; a live network's allocations must never change."""

    def __init__(self, admin: KubeClient) -> None:
        self.admin = admin
        self.network_ids: dict[str, str] = {}              # network name -> id
        self.subnets: dict[tuple[str, str], Any] = {}      # (node, network) -> subnets

    def check(self, live: set[str]) -> None:
        for nad in self.admin.list(NADS)["items"]:
            if nad["metadata"]["namespace"].startswith("hostile"):
                continue  # no network of theirs is live
            config = json.loads(nad["spec"]["config"])
            network, network_id = config["name"], (nad["metadata"].get("annotations")
                                                    or {}).get(NETWORK_ID)
            if network_id is None or network not in live:
                continue
            seen = self.network_ids.setdefault(network, network_id)
            assert seen == network_id, f"network {network} moved from id {seen} to {network_id}"
        for node in self.admin.list(NODES)["items"]:
            raw = (node["metadata"].get("annotations") or {}).get(NODE_SUBNETS)
            for network, subnets in (json.loads(raw) if raw else {}).items():
                if network not in live and network != "default":
                    continue
                key = (node["metadata"]["name"], network)
                seen = self.subnets.setdefault(key, subnets)
                assert seen == subnets, f"{key} moved from {seen} to {subnets}"

    def forget(self, network: str) -> None:
        self.network_ids.pop(network, None)
        for key in [k for k in self.subnets if k[1] == network]:
            del self.subnets[key]


def network_name(namespace: str) -> str:
    return f"{namespace}_net"


def pods_are_consistent(admin: KubeClient) -> None:
    """Every pod IP in its node's subnet of that network, and unique within the network."""
    subnets_of = {n["metadata"]["name"]: json.loads(
        (n["metadata"].get("annotations") or {}).get(NODE_SUBNETS) or "{}")
        for n in admin.list(NODES)["items"]}
    used: dict[tuple[str, str], str] = {}
    for pod in admin.list(PODS)["items"]:
        raw = (pod["metadata"].get("annotations") or {}).get(POD_NETWORKS)
        if not raw or pod["metadata"]["namespace"].startswith("hostile"):
            continue
        node = pod["spec"]["nodeName"]
        key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        for nad_key, entry in json.loads(raw).items():
            network = "default" if nad_key == "default" else \
                nad_key.replace("/", "_", 1)
            for address in entry["ip_addresses"]:
                ip = ipaddress.ip_interface(address).ip
                cidrs = [ipaddress.ip_network(c) for c in subnets_of[node].get(network, [])]
                assert any(ip in cidr for cidr in cidrs), \
                    f"pod {key}: {ip} is not in {node}'s subnets {cidrs} of {network}"
                holder = used.setdefault((network, str(ip)), key)
                assert holder == key, f"{ip} on {network} is used by {holder} and {key}"


def kill(local: LocalCluster, component: str) -> None:
    record = local.state().processes[component]
    if pid_running(record.pid, record.args):
        os.kill(record.pid, signal.SIGKILL)
        wait_until(lambda: not pid_running(record.pid, record.args), timeout=10)
    local.restart(component)


OVN_PROCESSES = ("nb-ovsdb", "sb-ovsdb", "northd")


def kill_ovn(local: LocalCluster, name: str) -> None:
    """SIGKILL one of OVN's processes; the supervisor starts it again from its database."""
    record = local.state().processes[name]
    os.kill(record.pid, signal.SIGKILL)

    def back() -> bool:
        now = local.state().processes[name]
        return now.restarts == record.restarts + 1 and record_ready(now)

    wait_until(back, timeout=60, what=f"{name} started again by the supervisor")


def clean_render(local: LocalCluster, admin: KubeClient, workdir: Path) -> Snapshot:
    """What a fresh zone controller renders into an empty NB from the same cluster."""
    config = udn_config()
    server = OvsdbServer("clean", workdir, schema("ovn-nb")).start()
    writer = NbWriter([server.remote]).start()
    # the zone process as it runs: its own controllers and the enabled plugins'
    app = ZoneApp(config, admin, PluginHost.load(config), writer, identity="clean")
    stop = threading.Event()
    runner = threading.Thread(target=app.run, args=(stop,), daemon=True)
    runner.start()
    reader = NbClient([server.remote]).start()
    try:
        return settle(reader)
    finally:
        reader.stop()
        stop.set()
        runner.join(timeout=30)
        writer.stop()
        server.stop()


def settle(nb: NbClient) -> Snapshot:
    last: list[Snapshot] = [{}]
    seen_same = [0]

    def stable() -> Snapshot | None:
        current = snapshot(nb)
        seen_same[0] = seen_same[0] + 1 if current == last[0] and current else 0
        last[0] = current
        return current if seen_same[0] >= 3 else None

    result: Snapshot = wait_until(stable, timeout=60, interval=0.5)
    return result


LONE_SURROGATE_NAD = ('{"cniVersion":"1.0.0","type":"ovn-k8s-cni-overlay","name":"\\ud800",'
                      '"topology":"layer2","role":"secondary","subnets":"10.9.0.0/24"}')
HOSTILE = {  # kind -> (what is created, how it must be reported)
    "loopback-udn": ("udn", {"topology": "Layer3", "layer3": {
        "role": "Primary", "subnets": [{"cidr": "127.0.0.0/8"}]}}),
    "tiny-layer2-udn": ("udn", {"topology": "Layer2", "layer2": {
        "role": "Primary", "subnets": ["10.7.0.0/30"]}}),
    "lone-surrogate-nad": ("nad", {"config": LONE_SURROGATE_NAD}),
    "empty-nad": ("nad", {"config": ""}),
    "no-spec-nad": ("nad", None),
    "mac-less-pod": ("pod", {POD_NETWORKS: '{"default": {}}'}),
}


def create_hostile(admin: KubeClient, namespace: str, kind: str, nodes: list[str]) -> str:
    """One hostile object of ``kind`` in a new namespace; its resource kind."""
    what, body = HOSTILE[kind]
    admin.create(NAMESPACES, {"metadata": {"name": namespace, "labels": {
        PRIMARY_NAMESPACE_LABEL: ""} if what == "udn" else {}}})
    if what == "udn":
        admin.create(UDNS, {"metadata": {"name": "net", "namespace": namespace}, "spec": body})
        return "UserDefinedNetwork"
    if what == "nad":
        nad: dict[str, Any] = {"metadata": {"name": "net", "namespace": namespace}}
        if body is not None:
            nad["spec"] = body
        admin.create(NADS, nad, namespace)
        return "NetworkAttachmentDefinition"
    admin.create(PODS, {"metadata": {"name": "net", "namespace": namespace,
                                     "annotations": body},
                        "spec": {"nodeName": nodes[0],
                                 "containers": [{"name": "c", "image": "agnhost"}]}},
                 namespace)
    return "Pod"


def hostile_unreported(admin: KubeClient, hostile: dict[str, str]) -> list[str]:
    """The hostile objects (namespace -> kind) without their Warning (UDNs: and without
    NetworkCreated=False), every message valid text the API server accepted."""
    missing = []
    for namespace, kind in sorted(hostile.items()):
        warned = [e for e in admin.list(EVENTS, namespace)["items"]
                  if e.get("type") == "Warning" and e["message"]
                  and e["involvedObject"].get("kind") == kind]
        if kind == "UserDefinedNetwork":
            conditions = (admin.get(UDNS, "net", namespace).get("status") or {}).get(
                "conditions") or []
            warned = warned if any(c["type"] == "NetworkCreated" and c["status"] == "False"
                                   for c in conditions) else []
        if not warned:
            missing.append(f"{namespace} ({kind})")
    return missing


def test_sigkill_during_churn_leaves_nothing_wrong(local: LocalCluster, tmp_path: Path) -> None:
    admin = KubeClient(api_client_from_kubeconfig(str(local.kubeconfig)))
    rng = random.Random(5552)
    observed = Observed(admin)
    live: dict[str, list[str]] = {}   # namespace -> pods
    hostile: dict[str, str] = {}      # namespace -> the kind of its hostile object
    ovn_kills: list[str] = []
    nodes = [n["metadata"]["name"] for n in admin.list(NODES)["items"]]
    for counter, step in enumerate(range(STEPS), 1):
        action = rng.choices(["network", "pod", "delete-pod", "delete-network", "kill-cm",
                              "kill-controller", "hostile", "kill-ovn"],
                             weights=[3, 5, 2, 1, 2, 2, 2, 2])[0]
        if action == "hostile" and live:
            for index, kind in enumerate(sorted(HOSTILE)):
                namespace = f"hostile{counter}-{index}"
                hostile[namespace] = create_hostile(admin, namespace, kind, nodes)
        elif action == "network" or not live:
            namespace = f"chaos{counter}"
            admin.create(NAMESPACES, {"metadata": {"name": namespace, "labels": {
                PRIMARY_NAMESPACE_LABEL: ""}}})
            admin.create(UDNS, {"metadata": {"name": "net", "namespace": namespace},
                                "spec": {"topology": "Layer3", "layer3": {
                                    "role": "Primary", "subnets": [{
                                        "cidr": f"10.{100 + counter % 100}.0.0/16",
                                        "hostSubnet": 24}]}}})
            live[namespace] = []
        elif action == "pod":
            namespace = rng.choice(sorted(live))
            name = f"p{counter}"
            admin.create(PODS, {"metadata": {"name": name, "namespace": namespace},
                                "spec": {"nodeName": rng.choice(nodes), "containers": [
                                    {"name": "c", "image": "agnhost"}]}}, namespace)
            live[namespace].append(name)
        elif action == "delete-pod" and any(live.values()):
            namespace = rng.choice(sorted(ns for ns, pods in live.items() if pods))
            admin.delete(PODS, live[namespace].pop(rng.randrange(len(live[namespace]))),
                         namespace)
        elif action == "delete-network":
            namespace = rng.choice(sorted(live))
            for name in live.pop(namespace):
                admin.delete(PODS, name, namespace)
            admin.delete(NAMESPACES, namespace)
            observed.forget(network_name(namespace))
        elif action == "kill-cm":
            kill(local, "cluster-manager")
        elif action == "kill-controller":
            kill(local, "controller")
        elif action == "kill-ovn":
            killed = OVN_PROCESSES[len(ovn_kills) % len(OVN_PROCESSES)]  # each in turn
            kill_ovn(local, killed)
            ovn_kills.append(killed)
        if step % 5 == 4:
            observed.check({network_name(ns) for ns in live})

    if STEPS >= 45:  # the seed's churn kills each of OVN's processes
        assert set(ovn_kills) == set(OVN_PROCESSES), ovn_kills
    # settle: every pod allocated, every network rendered, nothing moved
    def all_allocated() -> bool:
        pods = [p for p in admin.list(PODS)["items"]
                if p["metadata"]["namespace"] in live]
        return all(POD_NETWORKS in (p["metadata"].get("annotations") or {}) for p in pods)

    wait_until(all_allocated, timeout=90, interval=0.5)
    observed.check({network_name(ns) for ns in live})
    pods_are_consistent(admin)
    assert hostile, "the seed made no hostile object: the churn covers nothing of issue 30"
    unreported: list[list[str]] = [[]]

    def every_hostile_reported() -> bool:
        unreported[0] = hostile_unreported(admin, hostile)
        return not unreported[0]

    try:
        wait_until(every_hostile_reported, timeout=60, interval=1.0)
    except AssertionError:
        pytest.fail(f"hostile objects never reported: {unreported[0]}")
    nb = NbClient([f"unix:{local.nb_socket}"]).start()
    try:
        rendered = settle(nb)
        assert difference(rendered, clean_render(local, admin, tmp_path / "clean")) == []
        # deleting every user-defined network leaves none of its rows
        for namespace in list(live):
            for name in live.pop(namespace):
                admin.delete(PODS, name, namespace)
            admin.delete(NAMESPACES, namespace)

        def udn_rows() -> list[Any]:
            return [key for key, row in snapshot(nb).items() if "chaos" in json.dumps(row)]

        wait_until(lambda: not udn_rows(), timeout=90, interval=0.5)
    finally:
        nb.stop()
    try:
        admin.list(UDNS)
    except ApiError as exc:  # the API server itself never went away
        pytest.fail(f"API server unusable after the chaos: {exc}")


# -- networks a node cannot serve, during churn on a real dataplane -------------------------------
NODE_STEPS = int(os.environ.get("OVNK_CHAOS_NODE_STEPS", "12"))


@pytest.fixture
def real_nodes(tmp_path: Path) -> Iterator[LocalCluster]:
    require_dataplane()
    cluster = LocalCluster(tmp_path / ".ovnk")
    cluster.up(nodes=2, timeout=90, dataplane=True)
    try:
        yield cluster
    finally:
        cluster.down()


def node_netns(local: LocalCluster, node: str) -> str:
    state = local.state()
    return local.dataplane.node(node, state.nodes.index(node)).netns


def poison(local: LocalCluster, cidr: str, add: bool = True) -> None:
    """Give (or take back) every node the router address (``.1``) of every /24 of ``cidr``
    on its loopback: a route via a local address is refused by the kernel, so the node
    agent cannot set up the network's management port (as with a ``127.0.0.0/8`` network,
    whatever the API accepts)."""
    network = ipaddress.ip_network(cidr)
    lines = "".join(f"addr {'add' if add else 'del'} {subnet.network_address + 1}/32 dev lo\n"
                    for subnet in network.subnets(new_prefix=24))
    for node in local.state().nodes:
        subprocess.run(["ip", "-n", node_netns(local, node), "-batch", "-"], input=lines,
                       text=True, check=True, capture_output=True)


def management_port_ready(local: LocalCluster, admin: KubeClient, namespace: str,
                          cidr: str) -> bool:
    """Whether every node has the management port of ``namespace``'s network: its node
    subnet's ``.2`` address, and the route to ``cidr`` via the ``.1`` in its own table."""
    nads = admin.list(NADS, namespace)["items"]
    network_id = (nads[0]["metadata"].get("annotations") or {}).get(NETWORK_ID) if nads \
        else None
    if network_id is None:
        return False
    ifname = f"ovn-k8s-mp{network_id}"
    for node in admin.list(NODES)["items"]:
        subnets = json.loads((node["metadata"].get("annotations") or {}).get(
            NODE_SUBNETS) or "{}").get(network_name(namespace))
        netns = node_netns(local, node["metadata"]["name"])
        if not subnets or netlink.link_index(ifname, netns=netns) is None:
            return False
        subnet = ipaddress.ip_network(subnets[0])
        routes = netlink.list_routes(table=1000 + int(network_id), netns=netns)
        if f"{subnet.network_address + 2}/{subnet.prefixlen}" not in \
                netlink.list_addresses(ifname, netns) or not any(
                    (r["dst"], r["gateway"]) == (cidr, str(subnet.network_address + 1))
                    for r in routes):
            return False
    return True


def test_networks_a_node_cannot_serve_never_stall_the_others(real_nodes: LocalCluster) -> None:
    # Primary networks come and go, some of them ones no node can make a management port
    # for, while pods come and node agents are SIGKILLed: every other network gets its
    # port on every node and its pods run; each unservable one is said on each Node; no
    # node agent logs a traceback; once the cause is gone they are served too.
    local = real_nodes
    admin = KubeClient(api_client_from_kubeconfig(str(local.kubeconfig)))
    rng = random.Random(3011)
    nodes = [n["metadata"]["name"] for n in admin.list(NODES)["items"]]
    good: dict[str, list[str]] = {}  # namespace -> pods
    cidrs: dict[str, str] = {}       # namespace -> its network's CIDR
    bad: dict[str, str] = {}         # namespace -> cidr
    for counter in range(1, NODE_STEPS + 1):
        action = rng.choices(["good", "bad", "pod", "kill-agent"], weights=[3, 2, 3, 1])[0]
        if action in ("good", "bad") or not good:
            namespace = f"{'bad' if action == 'bad' else 'good'}{counter}"
            cidr = cidrs[namespace] = f"10.{150 + counter}.0.0/16"
            if namespace.startswith("bad"):
                poison(local, cidr)
                bad[namespace] = cidr
            else:
                good[namespace] = []
            admin.create(NAMESPACES, {"metadata": {"name": namespace, "labels": {
                PRIMARY_NAMESPACE_LABEL: ""}}})
            admin.create(UDNS, {"metadata": {"name": "net", "namespace": namespace},
                                "spec": {"topology": "Layer3", "layer3": {
                                    "role": "Primary",
                                    "subnets": [{"cidr": cidr, "hostSubnet": 24}]}}})
        elif action == "pod":
            namespace = rng.choice(sorted(good))
            name = f"p{counter}"
            admin.create(PODS, {"metadata": {"name": name, "namespace": namespace},
                                "spec": {"nodeName": rng.choice(nodes), "containers": [
                                    {"name": "c", "image": "agnhost"}]}}, namespace)
            good[namespace].append(name)
        else:
            node = rng.choice(nodes)
            record = local.state().processes[f"{node}/node-agent"]
            os.kill(record.pid, signal.SIGKILL)
            local.restart("node-agent")
    assert bad and good, "the seed must make both kinds of network"
    for namespace in sorted(good):
        wait_until(lambda ns=namespace: management_port_ready(local, admin, ns, cidrs[ns]),
                   timeout=90, interval=0.5, what=f"{namespace}'s management port on every node")
        for name in good[namespace]:
            wait_until(lambda ns=namespace, n=name: any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (admin.get(PODS, n, ns).get("status") or {}).get("conditions") or []),
                timeout=90, what=f"pod {namespace}/{name} ready")

    def said_on_every_node(namespace: str) -> bool:
        named = f"network {network_name(namespace)}: management port failed"
        told = {e["involvedObject"]["name"] for e in admin.list(EVENTS, "default")["items"]
                if e["reason"] == "ManagementPortFailed" and e["type"] == "Warning"
                and e["message"].startswith(named)}
        return told == set(nodes)
    for namespace in sorted(bad):
        wait_until(lambda ns=namespace: said_on_every_node(ns), timeout=60,
                   what=f"{namespace}'s failure on every Node")
        assert not management_port_ready(local, admin, namespace, bad[namespace])
    for node in nodes:
        logged = (local.log_dir / f"{node}-node-agent.log").read_text(errors="replace")
        assert "Traceback" not in logged, logged[logged.index("Traceback"):][:3000]
    # the cause goes away: the unservable networks are served too
    for cidr in bad.values():
        poison(local, cidr, add=False)
    local.restart("node-agent")
    for namespace in sorted(bad):
        wait_until(lambda ns=namespace: management_port_ready(local, admin, ns, cidrs[ns]),
                   timeout=90, interval=0.5,
                   what=f"{namespace}'s management port once it can be made")
