"""The zone controller against a real API server, cluster manager, NB, SB and ovn-northd.

Users create namespaces, UDNs and pods; the cluster manager allocates; the
zone controller renders; ovn-trace says which packets are delivered.  Churn
(node add/remove, network delete while the controller is down, restarts)
must leave NB equal to a clean render of the same cluster.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.cluster import build_node
from ovnk_local.testing.control_plane import ControlPlane, Zone, settled

from ovnk_core.annotations.node_subnets import parse_node_subnets
from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.informer import wait_for_informers
from ovnk_core.kube.resources import CUDNS, EVENTS, NADS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.ovn.install import command, schema
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.snapshot import committed_names, difference, snapshot
from ovnk_core.ovn.trace import TraceResult, packet_flow, trace, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.pods.annotation import build_pod_network
from ovnk_core.reachability.endpoints import find_endpoint
from ovnk_core.reachability.matrix import build_matrix
from ovnk_core.reachability.render import render_svg, render_text, write_picture
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.neighbors import learn_neighbor
from ovnk_core.testing.ovsdb_fixtures import OvnStack
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL
from ovnk_core.zone.controller import ZoneController

pytestmark = pytest.mark.e2e

CONFIG = udn_config()
POD_NETWORKS = "k8s.ovn.org/pod-networks"


@pytest.fixture
def manager(plane: ControlPlane) -> ClusterManager:
    return plane.start_manager()


@pytest.fixture
def start_zone(plane: ControlPlane) -> Callable[..., Zone]:
    return plane.start_zone


def namespace(client: KubeClient, name: str, primary: bool = True) -> None:
    labels = {PRIMARY_NAMESPACE_LABEL: ""} if primary else {}
    client.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})


def layer3_udn(client: KubeClient, ns: str, cidr: str) -> None:
    client.create(UDNS, {"metadata": {"name": f"{ns}-network", "namespace": ns},
                         "spec": {"topology": "Layer3", "layer3": {
                             "role": "Primary", "subnets": [{"cidr": cidr, "hostSubnet": 24}]}}})


def pod(client: KubeClient, ns: str, name: str, node: str) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": ns},
                         "spec": {"nodeName": node,
                                  "containers": [{"name": "c", "image": "agnhost"}]}})


def networks_of(client: KubeClient, ns: str, name: str, count: int) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        raw = (client.get(PODS, name, ns)["metadata"].get("annotations") or {}).get(
            POD_NETWORKS)
        value: dict[str, Any] = json.loads(raw) if raw else {}
        return value if len(value) == count else None
    result: dict[str, Any] = wait_until(ready, timeout=30)
    return result


def port_names(nb: NbClient) -> set[str]:
    return committed_names(nb, "Logical_Switch_Port")


def switch_and_router_names(nb: NbClient) -> set[str]:
    return committed_names(nb, "Logical_Switch") | committed_names(nb, "Logical_Router")


def trace_between(stack: OvnStack, switch: str, port: str, entry: dict[str, Any], dst: str
                  ) -> TraceResult:
    ip = ipaddress.ip_interface(entry["ip_addresses"][0])
    router_mac = "0a:58:" + ":".join(f"{b:02x}" for b in (ip.network.network_address + 1).packed)
    flow = packet_flow(port, entry["mac_address"], router_mac, str(ip.ip), dst)
    return trace(stack.sb.remote, switch, flow)


def test_isolated_overlapping_networks_end_to_end(client: KubeClient, manager: ClusterManager,
                                                  start_zone: Callable[[str], Zone],
                                                  ovn_stack: OvnStack, tmp_path: Path) -> None:
    for ns in ("blue", "teal"):
        namespace(client, ns)
        layer3_udn(client, ns, "103.103.0.0/16")  # the same CIDR on purpose
    namespace(client, "plain", primary=False)
    for ns in ("blue", "teal"):
        pod(client, ns, "a", "ovn-worker")
        pod(client, ns, "b", "ovn-worker2")
    pod(client, "plain", "p", "ovn-worker")
    pod(client, "plain", "q", "ovn-worker2")
    zone = start_zone(ovn_stack.nb.remote)
    blue_a, blue_b = networks_of(client, "blue", "a", 2), networks_of(client, "blue", "b", 2)
    teal_ips = {networks_of(client, "teal", name, 2)["teal/teal-network"]["ip_addresses"][0]
                .split("/")[0] for name in ("a", "b")}
    plain_q = networks_of(client, "plain", "q", 1)
    wanted = {"blue.blue.network_blue_a", "blue.blue.network_blue_b", "blue_a", "blue_b",
              "teal.teal.network_teal_a", "teal.teal.network_teal_b", "plain_p", "plain_q"}
    wait_until(lambda: wanted <= port_names(zone.nb), timeout=30)
    settled(zone)
    wait_for_sb(ovn_stack.nb.remote)

    blue_b_ip = blue_b["blue/blue-network"]["ip_addresses"][0].split("/")[0]
    assert blue_b_ip in teal_ips  # overlapping pod IPs: same address, different pods
    out = trace_between(ovn_stack, "blue_blue.network_ovn-worker", "blue.blue.network_blue_a",
                        blue_a["blue/blue-network"], blue_b_ip)
    assert out.outputs == ("blue.blue.network_blue_b",)
    # Default network: pods reach each other across nodes; UDN pods' default ports exist.
    plain_p = networks_of(client, "plain", "p", 1)
    out = trace_between(ovn_stack, "ovn-worker", "plain_p", plain_p["default"],
                        plain_q["default"]["ip_addresses"][0].split("/")[0])
    assert out.outputs == ("plain_q",)
    assert blue_a["default"]["role"] == "infrastructure-locked"
    # Egress: each network leaves SNATed to its own masquerade IP.
    masq = {}
    for ns in ("blue", "teal"):
        nad = client.get(NADS, f"{ns}-network", ns)
        network_id = int(nad["metadata"]["annotations"]["k8s.ovn.org/network-id"])
        masq[ns] = str(ipaddress.ip_address("169.254.0.0") + 10 + 2 * network_id - 1)
        gr = f"GR_{ns}_{ns}.network_ovn-worker"
        learn_neighbor(ovn_stack.sb.remote, gr, f"rtoe-{gr}", "172.18.0.1", "aa:bb:cc:00:00:01")
        entry = networks_of(client, ns, "a", 2)[f"{ns}/{ns}-network"]
        out = trace_between(ovn_stack, f"{ns}_{ns}.network_ovn-worker",
                            f"{ns}.{ns}.network_{ns}_a", entry, "8.8.8.8")
        assert out.snat_ips == (masq[ns],) and out.outputs == (f"breth0_{ns}_{ns}.network_"
                                                                "ovn-worker",)
    assert masq["blue"] != masq["teal"]

    # The reachability matrix says the same for every pair: only same-network pairs talk.
    pods = [client.get(PODS, name, ns) for ns in ("blue", "teal", "plain")
            for name in (("a", "b") if ns != "plain" else ("p", "q"))]
    endpoints = [find_endpoint(zone.nb, p) for p in pods]
    assert {e.network for e in endpoints} == {"blue_blue-network", "teal_teal-network",
                                              "default"}
    matrix = build_matrix(ovn_stack.sb.remote, endpoints)
    assert not matrix.errors and len(matrix.verdicts) == 30
    for (src, dst), delivered in matrix.verdicts.items():
        assert delivered == (src.split("/")[0] == dst.split("/")[0]), (src, dst)
    tcp = build_matrix(ovn_stack.sb.remote, endpoints, protocol="tcp", port=8080)
    assert not tcp.errors and tcp.verdicts == matrix.verdicts  # no ACLs yet: same verdicts
    text = render_text(matrix)
    assert "blue/a [blue_blue-network]" in text and text.count("✓") == 6 + 1
    svg = render_svg(matrix)
    assert svg.count("✗") == 24 and "network teal_teal-network" in svg
    write_picture(matrix, tmp_path / "m.png")
    assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_churn_and_restarts_converge_to_a_clean_render(client: KubeClient,
                                                        manager: ClusterManager,
                                                        start_zone: Callable[[str], Zone],
                                                        ovn_stack: OvnStack,
                                                        tmp_path: Path) -> None:
    for ns in ("blue", "green"):
        namespace(client, ns)
    layer3_udn(client, "blue", "103.103.0.0/16")
    layer3_udn(client, "green", "203.203.0.0/16")
    pod(client, "blue", "a", "ovn-worker")
    pod(client, "green", "a", "ovn-worker2")
    # Rows someone else made (no ovnk ownership ids) must survive everything below.
    subprocess.run(command("ovn-nbctl", f"--db={ovn_stack.nb.remote}", "ls-add", "foreign", "--",
                    "lsp-add", "foreign", "foreign-port", "--", "lr-add", "foreign-router"),
                   check=True)
    zone = start_zone(ovn_stack.nb.remote)
    networks_of(client, "green", "a", 2)
    wait_until(lambda: {"blue.blue.network_blue_a", "green.green.network_green_a"}
               <= port_names(zone.nb), timeout=30)
    settled(zone)

    # A restart with nothing changed writes nothing.
    zone.stop()
    zone = start_zone(ovn_stack.nb.remote)
    before = settled(zone)
    assert zone.writer.transactions == 0

    # A third node comes: every network gets its switch and gateway there.
    client.create(NODES, build_node("ovn-worker3", 2))
    wait_until(lambda: {"blue_blue.network_ovn-worker3", "GR_green_green.network_ovn-worker3",
                        "ovn-worker3"} <= switch_and_router_names(zone.nb), timeout=30)
    # ... and goes: exactly its rows leave.
    client.delete(NODES, "ovn-worker3")
    wait_until(lambda: not any("ovn-worker3" in name
                               for name in switch_and_router_names(zone.nb)), timeout=30)
    assert difference(settled(zone), before) == []

    # The green network and a blue pod go while the controller is down.
    zone.stop()
    client.delete(PODS, "a", "green")  # a network in use is not deleted (upstream)
    client.delete(UDNS, "green-network", "green")
    wait_until(lambda: not [n for n in client.list(NADS, "green")["items"]], timeout=30)
    client.delete(PODS, "a", "blue")
    zone = start_zone(ovn_stack.nb.remote)
    wait_until(lambda: not any(name.startswith(("green", "GR_green", "ext_green"))
                               for name in switch_and_router_names(zone.nb)), timeout=30)
    wait_until(lambda: "blue.blue.network_blue_a" not in port_names(zone.nb), timeout=30)
    churned = settled(zone)
    assert {"foreign", "foreign-router"} <= switch_and_router_names(zone.nb)
    assert "foreign-port" in port_names(zone.nb)

    # A fresh NB rendered by a fresh controller from the same cluster is identical.
    clean_nb = OvsdbServer("clean-nb", tmp_path / "clean", schema("ovn-nb")).start()
    try:
        clean = start_zone(clean_nb.remote)
        wait_until(lambda: len(snapshot(clean.nb)) == len(churned), timeout=30)
        assert difference(settled(clean), churned) == []
    finally:
        clean_nb.stop()


def test_bad_node_annotation_is_reported_and_the_rest_is_rendered(
        client: KubeClient, manager: ClusterManager, start_zone: Callable[[str], Zone],
        ovn_stack: OvnStack) -> None:
    client.patch(NODES, "ovn-worker2", {"metadata": {"annotations": {
        "k8s.ovn.org/l3-gateway-config": "{not json"}}})
    zone = start_zone(ovn_stack.nb.remote)
    routers = lambda: committed_names(zone.nb, "Logical_Router")  # noqa: E731
    wait_until(lambda: {"ovn_cluster_router", "GR_ovn-worker"} <= routers(), timeout=30)
    wait_until(lambda: "ovn-worker2" in committed_names(zone.nb, "Logical_Switch"),
               timeout=30)
    assert "GR_ovn-worker2" not in routers()  # no gateway without a valid gateway config
    events = wait_until(lambda: [e for e in client.list(EVENTS, "default")["items"]
                                 if e["reason"] == "InvalidNodeAnnotation"], timeout=30)
    assert "k8s.ovn.org/l3-gateway-config is not valid JSON" in events[0]["message"]
    # fixing it brings the gateway
    client.patch(NODES, "ovn-worker2", {"metadata": {"annotations": {
        "k8s.ovn.org/l3-gateway-config": build_node("ovn-worker2", 1)["metadata"][  # type: ignore[index]
            "annotations"]["k8s.ovn.org/l3-gateway-config"]}}})
    wait_until(lambda: "GR_ovn-worker2" in routers(), timeout=30)


def test_malformed_pod_annotation_is_an_event_not_a_crash(
        client: KubeClient, start_zone: Callable[[str], Zone], ovn_stack: OvnStack) -> None:
    namespace(client, "plain", primary=False)
    client.create(PODS, {"metadata": {"name": "bad", "namespace": "plain",
                                      "annotations": {POD_NETWORKS: "{broken"}},
                         "spec": {"nodeName": "ovn-worker",
                                  "containers": [{"name": "c", "image": "x"}]}})
    start_zone(ovn_stack.nb.remote)
    events = wait_until(lambda: [e for e in client.list(EVENTS, "plain")["items"]
                                 if e["involvedObject"]["name"] == "bad"], timeout=30)
    assert "is not valid JSON" in events[0]["message"]


def test_secondary_layer3_network_pods_get_ports_and_reach_each_other(
        client: KubeClient, manager: ClusterManager, start_zone: Callable[[str], Zone],
        ovn_stack: OvnStack) -> None:
    namespace(client, "side", primary=False)
    client.create(NADS, {"metadata": {"name": "red", "namespace": "side"}, "spec": {
        "config": json.dumps({"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay",
                              "name": "side_red", "netAttachDefName": "side/red",
                              "topology": "layer3", "role": "secondary",
                              "subnets": "192.168.0.0/16/24"})}})
    for name, node in (("x", "ovn-worker"), ("y", "ovn-worker2")):
        client.create(PODS, {"metadata": {"name": name, "namespace": "side", "annotations": {
            "k8s.v1.cni.cncf.io/networks": "red"}},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}})
    zone = start_zone(ovn_stack.nb.remote)
    x = networks_of(client, "side", "x", 2)
    y = networks_of(client, "side", "y", 2)
    assert x["side/red"]["role"] == "secondary" and x["default"]["role"] == "primary"
    wait_until(lambda: {"side.red_side_x", "side.red_side_y", "side_x", "side_y"}
               <= port_names(zone.nb), timeout=30)
    settled(zone)
    wait_for_sb(ovn_stack.nb.remote)
    names = switch_and_router_names(zone.nb)
    assert {"side_red_ovn-worker", "side_red_ovn_cluster_router"} <= names
    assert not any(n.startswith(("GR_side", "ext_side", "side_red_join")) for n in names)
    ip_y = y["side/red"]["ip_addresses"][0].split("/")[0]
    out = trace_between(ovn_stack, "side_red_ovn-worker", "side.red_side_x", x["side/red"], ip_y)
    assert out.outputs == ("side.red_side_y",)
    # A deleted pod loses its ports on every network; the others keep theirs.
    client.delete(PODS, "x", "side")
    wait_until(lambda: not {"side.red_side_x", "side_x"} & port_names(zone.nb), timeout=30)
    assert {"side.red_side_y", "side_y"} <= port_names(zone.nb)


def test_rows_changed_by_another_writer_are_repaired_by_the_resync(
        client: KubeClient, manager: ClusterManager, start_zone: Callable[[str], Zone],
        ovn_stack: OvnStack) -> None:
    namespace(client, "blue")
    layer3_udn(client, "blue", "103.103.0.0/16")
    pod(client, "blue", "a", "ovn-worker")
    zone = start_zone(ovn_stack.nb.remote)
    wait_until(lambda: "blue.blue.network_blue_a" in port_names(zone.nb), timeout=30)
    before = settled(zone)
    nbctl = command("ovn-nbctl", f"--db={ovn_stack.nb.remote}")
    # By hand: a pod port's addresses, a node switch's subnet, a gateway router deleted.
    subprocess.run([*nbctl, "set", "Logical_Switch_Port", "blue.blue.network_blue_a",
                    "addresses=\"0a:58:00:00:00:01 1.2.3.4\""], check=True)
    subprocess.run([*nbctl, "set", "Logical_Switch", "blue_blue.network_ovn-worker2",
                    "other_config:subnet=9.9.9.0/24"], check=True)
    subprocess.run([*nbctl, "lr-del", "GR_blue_blue.network_ovn-worker"], check=True)
    wait_until(lambda: snapshot(zone.nb) != before, timeout=10)
    changed = zone.controller.resync_nb()
    assert {o.key for o in changed} >= {"pod:blue/a", "node:ovn-worker", "node:ovn-worker2"}
    assert settled(zone) == before
    assert zone.controller.resync_nb() == set()


def test_the_periodic_resync_repairs_by_itself(client: KubeClient, manager: ClusterManager,
                                               start_zone: Callable[..., Zone],
                                               ovn_stack: OvnStack) -> None:
    namespace(client, "blue")
    layer3_udn(client, "blue", "103.103.0.0/16")
    pod(client, "blue", "a", "ovn-worker")
    zone = start_zone(ovn_stack.nb.remote, dataclasses.replace(CONFIG, nb_resync_interval=0.5))
    wait_until(lambda: "blue.blue.network_blue_a" in port_names(zone.nb), timeout=30)
    before = settled(zone)

    def port_uuid() -> str:
        return subprocess.run(command("ovn-nbctl", f"--db={ovn_stack.nb.remote}", "--if-exists",
                               "get", "Logical_Switch_Port", "blue.blue.network_blue_a",
                               "_uuid"), check=True, capture_output=True, text=True).stdout.strip()

    old = port_uuid()
    subprocess.run(command("ovn-nbctl", f"--db={ovn_stack.nb.remote}", "lsp-del",
                    "blue.blue.network_blue_a"), check=True)
    wait_until(lambda: port_uuid() not in ("", old), timeout=30)  # made again, by itself
    assert settled(zone) == before


def test_forged_pod_networks_are_refused_and_change_no_row(
        client: KubeClient, manager: ClusterManager, start_zone: Callable[[str], Zone],
        ovn_stack: OvnStack) -> None:
    """An admin writes pod-networks entries the cluster manager never would: each is a
    Warning event, none is a row; legitimate pods keep and get their ports."""
    for ns, cidr in (("blue", "103.103.0.0/16"), ("green", "203.203.0.0/16")):
        namespace(client, ns)
        layer3_udn(client, ns, cidr)
    namespace(client, "plain", primary=False)
    pod(client, "blue", "a", "ovn-worker")
    pod(client, "green", "g", "ovn-worker")
    pod(client, "plain", "p", "ovn-worker")
    zone = start_zone(ovn_stack.nb.remote)
    a = networks_of(client, "blue", "a", 2)
    g = networks_of(client, "green", "g", 2)
    networks_of(client, "plain", "p", 1)
    legit = {"blue.blue.network_blue_a", "blue_a", "green.green.network_green_g", "green_g",
             "plain_p"}
    wait_until(lambda: legit <= port_names(zone.nb), timeout=30)
    before = settled(zone)
    writes = zone.writer.transactions

    subnets = {network: ipaddress.ip_network(cidrs[0]) for network, cidrs in
               parse_node_subnets(client.get(NODES, "ovn-worker")).items()}
    default_subnet, blue_subnet = subnets["default"], subnets["blue_blue-network"]
    elsewhere = ipaddress.ip_network(parse_node_subnets(client.get(NODES, "ovn-worker2"))[
        "default"][0])

    def default_entry(subnet: Any, offset: int, **changes: Any) -> dict[str, Any]:
        ip = ipaddress.ip_interface(f"{subnet.network_address + offset}/{subnet.prefixlen}")
        return {**build_pod_network(CONFIG, None, "primary", [ip]).to_json(), **changes}

    def forged_pod(name: str, ns: str, networks: dict[str, Any]) -> None:
        client.create(PODS, {"metadata": {"name": name, "namespace": ns, "annotations": {
            POD_NETWORKS: json.dumps(networks)}},
            "spec": {"nodeName": "ovn-worker", "containers": [{"name": "c", "image": "x"}]}})

    # A network its namespace may not use: green's pod with an entry on blue's network.
    blue_ip = f"{blue_subnet.network_address + 200}/{blue_subnet.prefixlen}"
    client.patch(PODS, "g", {"metadata": {"annotations": {POD_NETWORKS: json.dumps({
        **g, "blue/blue-network": {**a["blue/blue-network"], "ip_addresses": [blue_ip],
                                   "ip_address": blue_ip}})}}}, "green")
    # Another pod's IPs, on both of its networks.
    forged_pod("x", "blue", {"default": a["default"],
                             "blue/blue-network": a["blue/blue-network"]})
    # The node subnet's gateway; an IP of another node's subnet; a MAC that is not one.
    forged_pod("gw", "plain", {"default": default_entry(default_subnet, 1)})
    forged_pod("out", "plain", {"default": default_entry(elsewhere, 200)})
    forged_pod("mac", "plain", {"default": default_entry(default_subnet, 201,
                                                         mac_address="0a:58:0a:f4:00:0\0")})

    a_default = a["default"]["ip_addresses"][0].split("/")[0]
    a_blue = a["blue/blue-network"]["ip_addresses"][0].split("/")[0]
    prefix = "not rendering the k8s.ovn.org/pod-networks entry for"
    expected = {
        ("green", "g"): {
            f"pod green/g: {prefix} blue/blue-network (network blue_blue-network): network "
            "blue_blue-network is the primary network of namespace blue, not of the pod's "
            "namespace green"},
        ("blue", "x"): {
            f"pod blue/x: {prefix} default (network default): IP {a_default} is already used "
            "on network default by pod blue/a",
            f"pod blue/x: {prefix} blue/blue-network (network blue_blue-network): IP {a_blue} "
            "is already used on network blue_blue-network by pod blue/a"},
        ("plain", "gw"): {
            f"pod plain/gw: {prefix} default (network default): IP "
            f"{default_subnet.network_address + 1} is the gateway address of {default_subnet}"},
        ("plain", "out"): {
            f"pod plain/out: {prefix} default (network default): IP "
            f"{elsewhere.network_address + 200}/{elsewhere.prefixlen} is outside node "
            f"ovn-worker's subnet(s) {default_subnet} of network default"},
    }

    def warnings() -> dict[tuple[str, str], set[str]]:
        found: dict[tuple[str, str], set[str]] = {}
        for ns in ("blue", "green", "plain"):
            for event in client.list(EVENTS, ns)["items"]:
                if event["reason"] == "ErrorAddingLogicalPort" and event["type"] == "Warning":
                    found.setdefault((ns, event["involvedObject"]["name"]), set()).add(
                        event["message"])
        return found

    wait_until(lambda: warnings() == expected or None, timeout=30)
    # a MAC that is not one makes the whole annotation unreadable: refused before any check
    wait_until(lambda: [e for e in client.list(EVENTS, "plain")["items"]
                        if e["involvedObject"]["name"] == "mac" and e["type"] == "Warning"
                        and "failed to parse pod MAC '0a:58:0a:f4:00:0\\x00'" in e["message"]],
               timeout=30)
    assert settled(zone) == before  # no row for any forged entry, no legitimate row touched
    assert zone.writer.transactions == writes
    assert warnings() == expected  # and nothing else was refused

    # After a restart nothing is remembered: blue/x, reconciled first, finds blue/a's IPs in
    # blue/a's ports in NB and is refused again; nothing is written.
    zone.stop()
    writer = NbWriter([ovn_stack.nb.remote]).start()
    informers = InformerFactory(client)
    fresh = ZoneController(informers, CONFIG, PluginHost.load(CONFIG), writer,
                           EventRecorder(client, "ovnkube-controller", "t"))
    informers.start()
    try:
        wait_for_informers(informers.informers, timeout=30)
        for network in fresh.network_names():
            fresh.reconcile_network(network)
        fresh.reconcile_pod("blue/x")
        fresh.reconcile_pod("blue/a")
        assert writer.transactions == 0
    finally:
        informers.stop()
        writer.stop()
    zone = start_zone(ovn_stack.nb.remote)
    assert settled(zone) == before
    assert zone.writer.transactions == 0

    # A legitimate pod still gets its ports; nothing else changes.
    pod(client, "blue", "c", "ovn-worker")
    wait_until(lambda: {"blue.blue.network_blue_c", "blue_c"} <= port_names(zone.nb),
               timeout=30)
    after = settled(zone)
    # the new ports join their switches and, the pod being isolated on the default network,
    # the isolation port group
    switches = {key for key in before if key[0] in ("Logical_Switch", "Port_Group")}
    assert {key: row for key, row in after.items() if key in before and key not in switches} \
        == {key: row for key, row in before.items() if key not in switches}
    assert {key[0] for key in set(after) - set(before)} == {"Logical_Switch_Port"}

    # An entry made valid renders then; removing the forged copy leaves blue/a's rows alone.
    client.patch(PODS, "gw", {"metadata": {"annotations": {POD_NETWORKS: json.dumps({
        "default": default_entry(default_subnet, 250)})}}}, "plain")
    wait_until(lambda: "plain_gw" in port_names(zone.nb), timeout=30)
    client.delete(PODS, "x", "blue")
    settled(zone)
    assert {"blue.blue.network_blue_a", "blue_a"} <= port_names(zone.nb)
    now = snapshot(zone.nb)
    assert {key: now[key] for key in before if key[0] == "Logical_Switch_Port"} == \
        {key: row for key, row in before.items() if key[0] == "Logical_Switch_Port"}


def test_an_ip_held_through_another_nad_of_the_same_network_is_refused(
        client: KubeClient, manager: ClusterManager, start_zone: Callable[[str], Zone],
        ovn_stack: OvnStack) -> None:
    """One network, two NADs (a CUDN over two namespaces): a pod of the second namespace
    annotated with the IP a pod of the first holds is refused (the same IP on another network
    is no conflict: test_isolated_overlapping_networks_end_to_end)."""
    for ns in ("c1", "c2"):
        namespace(client, ns)
    client.create(CUDNS, {"metadata": {"name": "shared"}, "spec": {
        "namespaceSelector": {"matchExpressions": [
            {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["c1", "c2"]}]},
        "network": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
            {"cidr": "104.104.0.0/16", "hostSubnet": 24}]}}}})
    pod(client, "c1", "a", "ovn-worker")
    zone = start_zone(ovn_stack.nb.remote)
    a = networks_of(client, "c1", "a", 2)
    held = a["c1/shared"]
    wait_until(lambda: "c1.shared_c1_a" in port_names(zone.nb) or None, timeout=30)

    def annotated(ns: str, name: str, nad_key: str) -> None:
        client.create(PODS, {"metadata": {"name": name, "namespace": ns, "annotations": {
            POD_NETWORKS: json.dumps({nad_key: held})}},
            "spec": {"nodeName": "ovn-worker", "containers": [{"name": "c", "image": "x"}]}})

    annotated("c2", "b", "c2/shared")
    ip = held["ip_addresses"][0].split("/")[0]
    message = ("pod c2/b: not rendering the k8s.ovn.org/pod-networks entry for c2/shared "
               f"(network cluster_udn_shared): IP {ip} is already used on network "
               "cluster_udn_shared by pod c1/a")

    def refusals(ns: str) -> set[str]:
        return {e["message"] for e in client.list(EVENTS, ns)["items"]
                if e["reason"] == "ErrorAddingLogicalPort"}

    wait_until(lambda: message in refusals("c2") or None, timeout=30)
    assert "c2.shared_c2_b" not in port_names(zone.nb)
