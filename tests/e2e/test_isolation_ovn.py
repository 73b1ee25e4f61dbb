"""UDN isolation in OVN: a primary-UDN pod's default-network port answers only its host.

Real API server, cluster manager, zone controller (with the isolation plugin enabled, as
the UDN configuration enables it), NB, northd and SB: the rows are compared with upstream's
and every verdict comes from ovn-trace.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable
from typing import Any

import pytest
from ovnk_local.testing.control_plane import ControlPlane, Zone, settled

from ovnk_core.annotations.node_subnets import parse_node_subnets
from ovnk_core.cli.reachability_cmd import collect
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.snapshot import committed_names
from ovnk_core.ovn.trace import TraceResult, packet_flow, trace, wait_for_sb
from ovnk_core.reachability.matrix import build_matrix
from ovnk_core.reachability.render import render_text
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import OvnStack
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

pytestmark = pytest.mark.e2e

POD_NETWORKS = "k8s.ovn.org/pod-networks"
OPEN_PORTS = "k8s.ovn.org/open-default-ports"
PG = "a8747502060113802905"
CONTROLLER = "default-network-controller"


@pytest.fixture
def start_zone(plane: ControlPlane) -> Callable[..., Zone]:
    plane.start_manager()
    return plane.start_zone


def setup_namespaces(client: KubeClient) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "blue", "labels": {
        PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "blue"}, "spec": {
        "topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
            {"cidr": "105.105.0.0/16", "hostSubnet": 24}]}}})
    client.create(NAMESPACES, {"metadata": {"name": "plain"}})


def create_pod(client: KubeClient, ns: str, name: str, node: str = "ovn-worker",
               annotations: dict[str, str] | None = None) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": ns,
                                      "annotations": annotations or {}},
                         "spec": {"nodeName": node,
                                  "containers": [{"name": "c", "image": "agnhost"}]}})


def default_entry(client: KubeClient, ns: str, name: str) -> dict[str, Any]:
    def entry() -> dict[str, Any] | None:
        raw = (client.get(PODS, name, ns)["metadata"].get("annotations") or {}).get(
            POD_NETWORKS)
        value: dict[str, Any] | None = json.loads(raw).get("default") if raw else None
        return value
    found: dict[str, Any] = wait_until(entry, timeout=30)
    return found


def nb_rows(nb: NbClient, table: str) -> list[Any]:
    return nb.row_list(table)


def isolation_acls(nb: NbClient) -> dict[str, dict[str, Any]]:
    """ACLs of the isolation feature by k8s.ovn.org/id: the columns upstream sets."""
    found = {}
    for row in nb_rows(nb, "ACL"):
        ids = dict(row.external_ids)
        if ids.get("k8s.ovn.org/owner-type") == "UDNIsolation":
            found[ids["k8s.ovn.org/id"]] = {
                "direction": row.direction, "priority": row.priority, "action": row.action,
                "match": row.match, "meter": list(row.meter), "name": list(row.name),
                "log": row.log, "external_ids": {k: v for k, v in ids.items()
                                                 if k != "k8s.ovn.org/owner"}}
    return found


def port_group(nb: NbClient) -> Any:
    groups = [row for row in nb_rows(nb, "Port_Group") if row.name == PG]
    return groups[0] if groups else None


def group_ports(nb: NbClient) -> set[str]:
    group = port_group(nb)
    return {port.name for port in group.ports} if group is not None else set()


def acl_ids(name: str, direction: str) -> dict[str, str]:
    return {"k8s.ovn.org/owner-controller": CONTROLLER,
            "k8s.ovn.org/owner-type": "UDNIsolation", "k8s.ovn.org/name": name,
            "direction": direction,
            "k8s.ovn.org/id": f"{CONTROLLER}:UDNIsolation:{name}:{direction}"}


def mgmt_ip(client: KubeClient, node: str) -> str:
    subnet = ipaddress.ip_network(parse_node_subnets(client.get(NODES, node))["default"][0])
    return str(subnet.network_address + 2)


def send(stack: OvnStack, inport: str, src: dict[str, Any] | tuple[str, str], dst_ip: str,
         dst_mac: str, protocol: str = "tcp", port: int = 8080) -> TraceResult:
    src_mac, src_ip = (src["mac_address"], src["ip_addresses"][0].split("/")[0]) \
        if isinstance(src, dict) else src
    return trace(stack.sb.remote, "ovn-worker",
                 packet_flow(inport, src_mac, dst_mac, src_ip, dst_ip, protocol, port))


def test_isolated_pods_answer_only_their_host_and_their_open_ports(
        client: KubeClient, start_zone: Callable[..., Zone], ovn_stack: OvnStack) -> None:
    setup_namespaces(client)
    create_pod(client, "blue", "a")
    create_pod(client, "plain", "p")
    zone = start_zone(ovn_stack.nb.remote)
    a, p = default_entry(client, "blue", "a"), default_entry(client, "plain", "p")
    assert a["role"] == "infrastructure-locked" and p["role"] == "primary"
    wait_until(lambda: group_ports(zone.nb) == {"blue_a"} or None, timeout=30)
    settled(zone)

    # The rows, as upstream writes them (the zone renders both nodes: both hosts' ports).
    ips = [mgmt_ip(client, "ovn-worker"), mgmt_ip(client, "ovn-worker2")]
    subnets = [parse_node_subnets(client.get(NODES, node))["default"][0]
               for node in ("ovn-worker", "ovn-worker2")]
    group = port_group(zone.nb)
    assert dict(group.external_ids) == {
        "k8s.ovn.org/owner-controller": CONTROLLER, "k8s.ovn.org/owner-type": "UDNIsolation",
        "k8s.ovn.org/name": "SecondaryPods",
        "k8s.ovn.org/id": f"{CONTROLLER}:UDNIsolation:SecondaryPods",
        "k8s.ovn.org/owner": "feature:isolation:cluster"}
    on = f"@{PG}"
    common = {"meter": ["acl-logging"], "name": [], "log": False}
    assert isolation_acls(zone.nb) == {
        f"{CONTROLLER}:UDNIsolation:DenyPrimaryUDN:Egress": {
            "direction": "from-lport", "priority": 1000, "action": "drop",
            "match": f"inport == {on}", **common,
            "external_ids": acl_ids("DenyPrimaryUDN", "Egress")},
        f"{CONTROLLER}:UDNIsolation:DenyPrimaryUDN:Ingress": {
            "direction": "to-lport", "priority": 1000, "action": "drop",
            "match": f"outport == {on}", **common,
            "external_ids": acl_ids("DenyPrimaryUDN", "Ingress")},
        f"{CONTROLLER}:UDNIsolation:AllowHostARPPrimaryUDN:Egress": {
            "direction": "from-lport", "priority": 1001, "action": "allow",
            "match": f"inport == {on} && (( arp && arp.tpa == {ips[0]} ) || "
                     f"( arp && arp.tpa == {ips[1]} ))", **common,
            "external_ids": acl_ids("AllowHostARPPrimaryUDN", "Egress")},
        f"{CONTROLLER}:UDNIsolation:AllowHostARPPrimaryUDN:Ingress": {
            "direction": "to-lport", "priority": 1001, "action": "allow",
            "match": f"outport == {on} && (( arp && arp.spa == {ips[0]} ) || "
                     f"( arp && arp.spa == {ips[1]} ))", **common,
            "external_ids": acl_ids("AllowHostARPPrimaryUDN", "Ingress")},
        f"{CONTROLLER}:UDNIsolation:AllowHostPrimaryUDN:Ingress": {
            "direction": "to-lport", "priority": 1001, "action": "allow-related",
            # one zone renders both nodes: each host's exception is scoped to its own pods
            "match": f"outport == {on} && ((ip4.src=={ips[0]} && ip4.dst=={subnets[0]}) || "
                     f"(ip4.src=={ips[1]} && ip4.dst=={subnets[1]}))",
            **common, "external_ids": acl_ids("AllowHostPrimaryUDN", "Ingress")}}
    assert {acl.external_ids["k8s.ovn.org/id"] for acl in group.acls} == set(
        isolation_acls(zone.nb))

    # Packets: the host (through its management port) reaches a; p does not; a reaches
    # nobody on the default network.
    wait_for_sb(ovn_stack.nb.remote)
    a_ip, p_ip = a["ip_addresses"][0].split("/")[0], p["ip_addresses"][0].split("/")[0]
    host = ("0a:58:" + ":".join(f"{b:02x}" for b in ipaddress.ip_address(ips[0]).packed),
            ips[0])
    assert send(ovn_stack, "k8s-ovn-worker", host, a_ip, a["mac_address"]).outputs == (
        "blue_a",)
    assert send(ovn_stack, "plain_p", p, a_ip, a["mac_address"]).outputs == ()
    assert send(ovn_stack, "plain_p", p, a_ip, a["mac_address"], "icmp").outputs == ()
    assert send(ovn_stack, "blue_a", a, p_ip, p["mac_address"]).outputs == ()
    # the other node's host does not (upstream: one node per zone, its ACL names only the
    # zone's own management port)
    other = ("0a:58:" + ":".join(f"{b:02x}" for b in ipaddress.ip_address(ips[1]).packed),
             ips[1])
    router_mac = "0a:58:" + ":".join(
        f"{b:02x}" for b in (ipaddress.ip_network(subnets[1]).network_address + 1).packed)
    assert trace(ovn_stack.sb.remote, "ovn-worker2", packet_flow(
        "k8s-ovn-worker2", other[0], router_mac, other[1], a_ip, "tcp", 8080)).outputs == ()
    assert trace(ovn_stack.sb.remote, "ovn-worker2", packet_flow(
        "k8s-ovn-worker2", other[0], router_mac, other[1], p_ip, "tcp", 8080)).outputs == (
        "plain_p",)  # ...while it reaches default-network pods there
    # a plain pod is not isolated: the host and other pods reach it
    assert send(ovn_stack, "k8s-ovn-worker", host, p_ip, p["mac_address"]).outputs == (
        "plain_p",)

    # Open ports: tcp/8080 and icmp open to everyone; nothing else.
    client.patch(PODS, "a", {"metadata": {"annotations": {
        OPEN_PORTS: "- protocol: tcp\n  port: 8080\n- protocol: icmp\n"}}}, "blue")
    name = "OpenPort-blue/a"
    wait_until(lambda: f"{CONTROLLER}:UDNIsolation:{name}:Ingress" in isolation_acls(
        zone.nb) or None, timeout=30)
    acls = isolation_acls(zone.nb)
    assert acls[f"{CONTROLLER}:UDNIsolation:{name}:Ingress"] == {
        "direction": "to-lport", "priority": 1001, "action": "allow-related",
        "match": 'outport == "blue_a" && (arp || nd || (tcp.dst == 8080 || icmp))', **common,
        "external_ids": acl_ids(name, "Ingress")}
    assert acls[f"{CONTROLLER}:UDNIsolation:{name}:Egress"]["match"] == \
        'inport == "blue_a" && (arp || nd)'
    wait_for_sb(ovn_stack.nb.remote)
    assert send(ovn_stack, "plain_p", p, a_ip, a["mac_address"]).outputs == ("blue_a",)
    assert send(ovn_stack, "plain_p", p, a_ip, a["mac_address"], port=9090).outputs == ()
    assert send(ovn_stack, "plain_p", p, a_ip, a["mac_address"], "icmp").outputs == (
        "blue_a",)
    assert send(ovn_stack, "plain_p", p, a_ip, a["mac_address"], "udp", 8080).outputs == ()

    # ovnk reachability --default-network: the isolated pod's default interface is a cell of
    # its own, with its open ports named; the verdicts are the ACLs'.
    endpoints, skipped = collect(zone.nb, [client.get(PODS, "a", "blue"),
                                           client.get(PODS, "p", "plain")],
                                 default_network=True)
    assert skipped == []
    assert [(e.pod, e.network, e.note) for e in endpoints] == [
        ("blue/a", "blue_net", ""),
        ("blue/a@default", "default", "open: - protocol: tcp port: 8080 - protocol: icmp"),
        ("plain/p", "default", "")]
    tcp = build_matrix(ovn_stack.sb.remote, endpoints, protocol="tcp", port=8080)
    assert not tcp.errors
    assert tcp.verdicts[("plain/p", "blue/a@default")] is True
    assert tcp.verdicts[("blue/a@default", "plain/p")] is False
    assert tcp.verdicts[("plain/p", "blue/a")] is False  # another network altogether
    closed = build_matrix(ovn_stack.sb.remote, endpoints, protocol="tcp", port=9090)
    assert closed.verdicts[("plain/p", "blue/a@default")] is False
    assert "blue/a@default [default] (open: - protocol: tcp port: 8080" in render_text(tcp)

    # Removing the annotation removes the open ports.
    client.patch(PODS, "a", {"metadata": {"annotations": {OPEN_PORTS: None}}}, "blue")
    wait_until(lambda: not any(name in key for key in isolation_acls(zone.nb)) or None,
               timeout=30)
    wait_for_sb(ovn_stack.nb.remote)
    assert send(ovn_stack, "plain_p", p, a_ip, a["mac_address"]).outputs == ()

    # A restart with nothing changed writes nothing.
    before = settled(zone)
    zone.stop()
    again = start_zone(ovn_stack.nb.remote)
    assert settled(again) == before
    assert again.writer.transactions == 0


def test_a_bad_open_ports_annotation_is_upstreams_error_path(
        client: KubeClient, start_zone: Callable[..., Zone], ovn_stack: OvnStack) -> None:
    """At creation the default port is not written (Warning ErrorAddingResource, retried);
    on an existing port the open ports go (Warning ErrorUpdatingResource); fixed, it
    converges."""
    setup_namespaces(client)
    create_pod(client, "blue", "bad", annotations={OPEN_PORTS: "- protocol: smtp\n  port: 25"})
    create_pod(client, "blue", "good", annotations={OPEN_PORTS: "- protocol: tcp\n  port: 80"})
    zone = start_zone(ovn_stack.nb.remote)

    def warnings(name: str) -> set[tuple[str, str]]:
        return {(e["reason"], e["message"]) for e in client.list(EVENTS, "blue")["items"]
                if e["involvedObject"]["name"] == name and e["type"] == "Warning"}

    wait_until(lambda: ("ErrorAddingResource", "invalid protocol smtp") in {
        (reason, message.rsplit(": ", 1)[-1]) for reason, message in warnings("bad")} or None,
        timeout=30)
    wait_until(lambda: "blue_good" in group_ports(zone.nb) or None, timeout=30)
    names = committed_names(zone.nb, "Logical_Switch_Port")
    assert "blue_bad" not in names and "blue.net_blue_bad" in names  # its UDN port is there

    # The existing port of "good" gets a bad value: it keeps its port and membership, loses
    # its open ports.
    client.patch(PODS, "good", {"metadata": {"annotations": {OPEN_PORTS: "[{port: 70000}]"}}},
                 "blue")
    wait_until(lambda: not any("OpenPort-blue/good" in key for key in isolation_acls(zone.nb))
               or None, timeout=30)
    assert "blue_good" in group_ports(zone.nb)
    wait_until(lambda: any(reason == "ErrorUpdatingResource" for reason, _m in
                           warnings("good")) or None, timeout=30)

    # Fixed: the port of "bad" is written, in the group, with its ACLs.
    client.patch(PODS, "bad", {"metadata": {"annotations": {
        OPEN_PORTS: "- protocol: udp\n  port: 53"}}}, "blue")
    wait_until(lambda: "blue_bad" in group_ports(zone.nb) or None, timeout=30)
    assert isolation_acls(zone.nb)[
        f"{CONTROLLER}:UDNIsolation:OpenPort-blue/bad:Ingress"]["match"] == \
        'outport == "blue_bad" && (arp || nd || (udp.dst == 53))'


def test_upstreams_rows_are_taken_over_and_legacy_names_migrated(
        client: KubeClient, start_zone: Callable[..., Zone], ovn_stack: OvnStack) -> None:
    """NB as upstream left it before renaming its ACLs: the group (taken over as it is, same
    row) and ACLs of the legacy names (replaced by the current ones, gone from the group)."""
    def ids(name: str, direction: str | None = None) -> list[list[str]]:
        primary = f"{CONTROLLER}:UDNIsolation:{name}" + (f":{direction}" if direction else "")
        found = [["k8s.ovn.org/owner-controller", CONTROLLER],
                 ["k8s.ovn.org/owner-type", "UDNIsolation"], ["k8s.ovn.org/name", name],
                 ["k8s.ovn.org/id", primary]]
        return found + ([["direction", direction]] if direction else [])

    legacy = [("DenySecondary", "Egress", "from-lport", 1000, "drop", f"inport == @{PG}"),
              ("DenySecondary", "Ingress", "to-lport", 1000, "drop", f"outport == @{PG}"),
              ("AllowHostSecondary", "Ingress", "to-lport", 1001, "allow-related",
               f"outport == @{PG} && (ip4.src==10.244.0.2)")]
    # one raw transaction (ovn-nbctl 26.03.1 sometimes aborts after committing such a one)
    operations: list[object] = [
        {"op": "insert", "table": "ACL", "uuid-name": f"acl{index}", "row": {
            "direction": acl_direction, "priority": priority, "action": action,
            "match": match, "external_ids": ["map", ids(name, direction)]}}
        for index, (name, direction, acl_direction, priority, action, match)
        in enumerate(legacy)]
    operations.append({"op": "insert", "table": "Port_Group", "uuid-name": "group", "row": {
        "name": PG, "external_ids": ["map", ids("SecondaryPods")],
        "acls": ["set", [["named-uuid", f"acl{i}"] for i in range(len(legacy))]]}})
    replies = ovn_stack.nb.transact(operations)
    assert isinstance(replies, list) and not any("error" in reply for reply in replies)
    group_uuid = replies[-1]["uuid"][1]
    zone = start_zone(ovn_stack.nb.remote)
    wait_until(lambda: len(isolation_acls(zone.nb)) == 5 or None, timeout=30)
    settled(zone)
    assert not any("Secondary" in key.replace("SecondaryPods", "")
                   for key in isolation_acls(zone.nb))
    group = port_group(zone.nb)
    assert str(group.uuid) == group_uuid
    assert dict(group.external_ids)["k8s.ovn.org/owner"] == "feature:isolation:cluster"
    assert {acl.external_ids["k8s.ovn.org/name"] for acl in group.acls} == {
        "DenyPrimaryUDN", "AllowHostARPPrimaryUDN", "AllowHostPrimaryUDN"}
    # the legacy ones are gone, not orphaned (NetworkPolicy's always-present ACLs aside)
    assert len([acl for acl in nb_rows(zone.nb, "ACL") if not acl.external_ids.get(
        "k8s.ovn.org/owner-type", "").startswith("Netpol")]) == 5


def test_disabling_the_feature_removes_every_row_of_it(
        client: KubeClient, start_zone: Callable[..., Zone], ovn_stack: OvnStack) -> None:
    """Group, ACLs, memberships and open ports go at the next start without the feature; the
    pods keep their ports."""
    setup_namespaces(client)
    create_pod(client, "blue", "a", annotations={OPEN_PORTS: "- protocol: tcp\n  port: 80"})
    zone = start_zone(ovn_stack.nb.remote)
    wait_until(lambda: len(isolation_acls(zone.nb)) == 7 or None, timeout=30)
    settled(zone)
    zone.stop()
    without = start_zone(ovn_stack.nb.remote, udn_config(disabled_features="isolation"))
    settled(without)
    assert isolation_acls(without.nb) == {} and port_group(without.nb) is None
    assert {"blue_a", "blue.net_blue_a"} <= committed_names(without.nb, "Logical_Switch_Port")
