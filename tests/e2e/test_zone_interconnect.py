"""Interconnect: two zones, one per node, each with its own NB, SB and ovn-northd.

Each zone controller (``--zone``) renders its own node and pods fully and the other
node as a remote one: the transit switch with upstream's ``other_config``, the local
``rtots-``/``tstor-`` pair, a ``remote`` port bound to the other node's chassis, the
routes to the other node's subnets through its transit address, and the other node's
chassis in its Southbound.  A chained ``ovn-trace`` (zone 1 up to the remote port, then
zone 2 from that port) delivers a packet from a pod on one node to a pod on the other,
on the default network and on a primary Layer3 UDN.  A node in no zone is rendered
nowhere, with a Warning event.  (Expectations from upstream's zone_ic_handler.go and its
test.)
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.testing.control_plane import ControlPlane, Zone, settled

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NAMESPACES, NODES, PODS, UDNS
from ovnk_core.networks.port_names import DEFAULT_NAD_KEY, pod_port_name
from ovnk_core.ovn.install import schema
from ovnk_core.ovn.jsonrpc import OvsdbConnection
from ovnk_core.ovn.processes import Northd, OvsdbServer
from ovnk_core.ovn.trace import packet_flow, trace, wait_for_sb
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

pytestmark = pytest.mark.e2e

ZONE = "k8s.ovn.org/zone-name"
NODES_ = ("ovn-worker", "ovn-worker2")


@dataclass
class ZoneStack:
    name: str
    nb: OvsdbServer
    sb: OvsdbServer
    northd: Northd
    zone: Zone | None = None


@pytest.fixture
def zones(tmp_path: Path) -> Iterator[dict[str, ZoneStack]]:
    """An NB, SB and ovn-northd per node."""
    stacks = {}
    try:
        for name in NODES_:
            work = tmp_path / name
            nb = OvsdbServer("nb", work, schema("ovn-nb")).start()
            sb = OvsdbServer("sb", work, schema("ovn-sb")).start()
            stacks[name] = ZoneStack(name, nb, sb, Northd(work, nb.remote, sb.remote).start())
        yield stacks
    finally:
        for stack in stacks.values():
            stack.northd.stop()
            stack.sb.stop()
            stack.nb.stop()


def _plain(value: Any) -> Any:
    if isinstance(value, list) and len(value) == 2 and value[0] == "map":
        return {k: _plain(v) for k, v in value[1]}
    if isinstance(value, list) and len(value) == 2 and value[0] == "set":
        return [_plain(v) for v in value[1]]
    if isinstance(value, list) and len(value) == 2 and value[0] in ("uuid", "named-uuid"):
        return value[1]
    return value


def rows(remote: str, database: str, table: str) -> list[dict[str, Any]]:
    conn = OvsdbConnection(remote)
    try:
        [found] = conn.transact(database, [{"op": "select", "table": table, "where": []}])
    finally:
        conn.close()
    return [{k: _plain(v) for k, v in row.items()} for row in found["rows"]]


def by_name(remote: str, table: str) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in rows(remote, "OVN_Northbound", table)}


def annotation(client: KubeClient, kind: Any, name: str, key: str, ns: str | None = None
               ) -> str | None:
    obj = client.get(kind, name, ns) if ns else client.get(kind, name)
    value = (obj["metadata"].get("annotations") or {}).get(key)
    return str(value) if value is not None else None


def set_zone(client: KubeClient, node: str, zone: str | None) -> None:
    client.patch(NODES, node, {"metadata": {"annotations": {ZONE: zone}}})


def start_zones(plane: ControlPlane, stacks: dict[str, ZoneStack]) -> None:
    for name, stack in stacks.items():
        stack.zone = plane.start_zone(stack.nb.remote, config=udn_config(
            zone=name, sb_address=stack.sb.remote), identity=name)


def primary_udn(client: KubeClient, ns: str, cidr: str) -> None:
    client.create(NAMESPACES, {"metadata": {"name": ns, "labels": {PRIMARY_NAMESPACE_LABEL: ""}}})
    client.create(UDNS, {"metadata": {"name": "net", "namespace": ns},
                         "spec": {"topology": "Layer3", "layer3": {
                             "role": "Primary", "subnets": [{"cidr": cidr, "hostSubnet": 24}]}}})


def pod(client: KubeClient, ns: str, name: str, node: str) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": ns},
                         "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}})


def entries(client: KubeClient, ns: str, name: str, count: int) -> dict[str, Any]:
    def ready() -> dict[str, Any] | None:
        raw = annotation(client, PODS, name, "k8s.ovn.org/pod-networks", ns)
        value: dict[str, Any] = json.loads(raw) if raw else {}
        return value if len(value) == count else None
    found: dict[str, Any] = wait_until(ready, timeout=30)
    return found


def transit_ip(client: KubeClient, node: str) -> str:
    raw = wait_until(lambda: annotation(client, NODES, node,
                                        "k8s.ovn.org/node-transit-switch-port-ifaddr"))
    return str(json.loads(str(raw))["ipv4"])


def subnet_of(client: KubeClient, node: str, network: str) -> str:
    raw = wait_until(lambda: (json.loads(annotation(client, NODES, node,
                                                    "k8s.ovn.org/node-subnets") or "{}")
                              .get(network)))
    return str(raw[0])


def mac_of(address: str) -> str:
    ip = ipaddress.ip_interface(address).ip
    return "0a:58:" + ":".join(f"{b:02x}" for b in ip.packed)


def check_transit_rows(client: KubeClient, stack: ZoneStack, prefix: str, network: str,
                       tunnel_key: int, primary: bool) -> None:
    """The zone's rows of one network as upstream's zone_ic_handler renders them."""
    local = stack.name
    remote = next(n for n in NODES_ if n != local)
    nb = stack.nb.remote
    switches = by_name(nb, "Logical_Switch")
    ts_name = f"{prefix}transit_switch"
    ts = switches[ts_name]
    assert ts["other_config"] == {
        "interconn-ts": ts_name, "requested-tnl-key": str(tunnel_key), "mcast_snoop": "true",
        "mcast_querier": "false", "mcast_flood_unregistered": "true"}
    assert f"{prefix}{local}" in switches and f"{prefix}{remote}" not in switches
    ports = by_name(nb, "Logical_Switch_Port")
    local_ip, remote_ip = transit_ip(client, local), transit_ip(client, remote)
    local_id = annotation(client, NODES, local, "k8s.ovn.org/node-id")
    remote_id = annotation(client, NODES, remote, "k8s.ovn.org/node-id")
    assert remote_ip == f"100.88.0.{remote_id}/16"
    tstor_local = ports[f"{prefix}tstor-{local}"]
    assert (tstor_local["type"], tstor_local["addresses"], tstor_local["options"]) == (
        "router", "router", {"router-port": f"{prefix}rtots-{local}",
                             "requested-tnl-key": local_id})
    assert tstor_local["external_ids"]["node"] == local
    tstor_remote = ports[f"{prefix}tstor-{remote}"]
    assert (tstor_remote["type"], tstor_remote["addresses"], tstor_remote["options"]) == (
        "remote", f"{mac_of(remote_ip)} {remote_ip}",
        {"requested-tnl-key": remote_id, "requested-chassis": remote})
    assert {tstor_local["_uuid"], tstor_remote["_uuid"]} == set(
        ts["ports"] if isinstance(ts["ports"], list) else [ts["ports"]])
    rtots = by_name(nb, "Logical_Router_Port")[f"{prefix}rtots-{local}"]
    assert (rtots["mac"], rtots["networks"], rtots["options"]) == (
        mac_of(local_ip), local_ip, {"mcast_flood": "true"})
    assert f"{prefix}rtots-{remote}" not in by_name(nb, "Logical_Router_Port")
    # the local node's rtos- port is a distributed gateway port on its chassis (upstream)
    rtos = by_name(nb, "Logical_Router_Port")[f"rtos-{prefix}{local}"]
    [gateway] = [g for g in rows(nb, "OVN_Northbound", "Gateway_Chassis")
                 if g["_uuid"] == rtos["gateway_chassis"]]
    assert (gateway["name"], gateway["chassis_name"], gateway["priority"]) == (
        f"rtos-{prefix}{local}-{local}", local, 1)
    routes = {(r["ip_prefix"], r["nexthop"]) for r in rows(nb, "OVN_Northbound",
                                                             "Logical_Router_Static_Route")
              if r["external_ids"].get("ic-node") == remote
              and r["external_ids"].get("k8s.ovn.org/network") == network}
    hop = remote_ip.split("/")[0]
    wanted = {(subnet_of(client, remote, network), hop)}
    if primary:  # the remote gateway router's join address (default join 100.64.0.0/16)
        join = "100.64.0.0" if network == "default" else "100.65.0.0"
        wanted.add((str(ipaddress.ip_address(join) + int(str(remote_id))) + "/32", hop))
    assert routes == wanted


def chained_trace(client: KubeClient, stacks: dict[str, ZoneStack], prefix: str, nad: str,
                  src: tuple[str, str, str], dst: tuple[str, str, str]) -> None:
    """ovn-trace from ``src`` (ns, pod, node) in its zone up to the transit switch's remote
    port of ``dst``'s node, then in ``dst``'s zone from the transit port it arrives on to
    ``dst``'s port."""
    (src_ns, src_pod, src_node), (dst_ns, dst_pod, dst_node) = src, dst

    def port_name(ns: str, name: str) -> str:
        return pod_port_name(DEFAULT_NAD_KEY if nad == "default" else nad, ns, name)

    src_entry = entries(client, src_ns, src_pod, 2 if prefix else 1)[nad]
    dst_entry = entries(client, dst_ns, dst_pod, 2 if prefix else 1)[nad]
    src_ip = ipaddress.ip_interface(src_entry["ip_addresses"][0])
    dst_ip = str(ipaddress.ip_interface(dst_entry["ip_addresses"][0]).ip)
    gateway_mac = mac_of(str(src_ip.network.network_address + 1) + "/32")
    first = trace(stacks[src_node].sb.remote, f"{prefix}{src_node}",
                  packet_flow(port_name(src_ns, src_pod), src_entry["mac_address"], gateway_mac,
                              str(src_ip.ip), dst_ip, ttl=64))
    assert first.outputs == (f"{prefix}tstor-{dst_node}",), first.text
    # the packet arrives in the other zone on its transit switch, from the sender's node's
    # transit port, addressed to the receiver's node's rtots- port
    flow = packet_flow(f"{prefix}tstor-{src_node}", mac_of(transit_ip(client, src_node)),
                       mac_of(transit_ip(client, dst_node)), str(src_ip.ip), dst_ip, ttl=63)
    second = trace(stacks[dst_node].sb.remote, f"{prefix}transit_switch", flow)
    assert second.outputs == (port_name(dst_ns, dst_pod),), second.text


def test_two_zones_render_their_own_node_and_the_other_as_remote(
        client: KubeClient, plane: ControlPlane, zones: dict[str, ZoneStack]) -> None:
    for node in NODES_:
        set_zone(client, node, node)
    client.create(NODES, {"metadata": {"name": "ovn-worker3", "annotations": {ZONE: "Bad_Zone"}}})
    client.create(NODES, {"metadata": {"name": "ovn-worker4"}})  # no zone annotation
    plane.start_manager()
    start_zones(plane, zones)
    client.create(NAMESPACES, {"metadata": {"name": "plain"}})
    pod(client, "plain", "a", "ovn-worker")
    pod(client, "plain", "b", "ovn-worker2")
    primary_udn(client, "blue", "103.103.0.0/16")
    pod(client, "blue", "a", "ovn-worker")
    pod(client, "blue", "b", "ovn-worker2")
    entries(client, "blue", "b", 2)

    for stack in zones.values():
        assert stack.zone is not None
        wait_until(lambda s=stack: {"blue_net_tstor-ovn-worker", "blue_net_tstor-ovn-worker2",
                                    "tstor-ovn-worker", "tstor-ovn-worker2"}
                   <= set(by_name(s.nb.remote, "Logical_Switch_Port")), timeout=60)
        settled(stack.zone)
        ports = set(by_name(stack.nb.remote, "Logical_Switch_Port"))
        other = next(n for n in NODES_ if n != stack.name)
        mine = "a" if stack.name == "ovn-worker" else "b"
        theirs = "b" if mine == "a" else "a"
        # only the zone's own pods
        assert f"plain_{mine}" in ports and f"plain_{theirs}" not in ports
        assert f"blue.net_blue_{mine}" in ports and f"blue.net_blue_{theirs}" not in ports
        # nodes in no zone: nothing, anywhere
        assert not any("ovn-worker3" in p or "ovn-worker4" in p for p in ports)
        check_transit_rows(client, stack, "", "default", 16711683, primary=True)
        check_transit_rows(client, stack, "blue_net_", "blue_net", 16711683 + 1, primary=True)
        # the other node's chassis, remote, in this zone's SB
        [chassis] = [c for c in rows(stack.sb.remote, "OVN_Southbound", "Chassis")
                     if c["other_config"].get("is-remote") == "true"]
        assert (chassis["name"], chassis["hostname"]) == (other, other)
        encaps = [e for e in rows(stack.sb.remote, "OVN_Southbound", "Encap")
                  if e["chassis_name"] == other]
        assert [(e["type"], e["options"]) for e in encaps] == [("geneve", {"csum": "true"})]
        wait_for_sb(stack.nb.remote)

    for nad, prefix, ns in (("default", "", "plain"), ("blue/net", "blue_net_", "blue")):
        chained_trace(client, zones, prefix, nad, (ns, "a", "ovn-worker"),
                      (ns, "b", "ovn-worker2"))
        chained_trace(client, zones, prefix, nad, (ns, "b", "ovn-worker2"),
                      (ns, "a", "ovn-worker"))

    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in client.list(EVENTS)["items"]}
    assert {("ovn-worker3", "InvalidNodeAnnotation"),
            ("ovn-worker4", "InvalidNodeAnnotation")} <= reasons
    messages = [e["message"] for e in client.list(EVENTS)["items"]
                if e["involvedObject"]["name"] == "ovn-worker3"]
    assert any("node ovn-worker3 is not rendered in any zone: k8s.ovn.org/zone-name "
               "'Bad_Zone' is not a zone name" in m for m in messages), messages


def remote_chassis(stack: ZoneStack) -> set[str]:
    return {c["name"] for c in rows(stack.sb.remote, "OVN_Southbound", "Chassis")
            if c["other_config"].get("is-remote") == "true"}


def test_restart_writes_nothing_and_nodes_leaving_or_moving_converge(
        client: KubeClient, plane: ControlPlane, zones: dict[str, ZoneStack]) -> None:
    for node in NODES_:
        set_zone(client, node, node)
    plane.start_manager()
    start_zones(plane, zones)
    client.create(NAMESPACES, {"metadata": {"name": "plain"}})
    pod(client, "plain", "b", "ovn-worker2")
    first = zones["ovn-worker"]
    assert first.zone is not None
    wait_until(lambda: "tstor-ovn-worker2" in by_name(first.nb.remote, "Logical_Switch_Port")
               and remote_chassis(first) == {"ovn-worker2"}, timeout=60)
    before = settled(first.zone)

    # A restart with nothing changed writes nothing.
    first.zone.stop()
    plane.zones.remove(first.zone)
    first.zone = plane.start_zone(first.nb.remote, config=udn_config(
        zone="ovn-worker", sb_address=first.sb.remote), identity="ovn-worker")
    assert settled(first.zone) == before
    assert first.zone.writer.transactions == 0

    # ovn-worker2 joins ovn-worker's zone: rendered there as a local node with its pod, its
    # remote port, routes and remote chassis gone.
    set_zone(client, "ovn-worker2", "ovn-worker")
    wait_until(lambda: {"ovn-worker2", "transit_switch"} <= set(
        by_name(first.nb.remote, "Logical_Switch")) and "plain_b" in by_name(
        first.nb.remote, "Logical_Switch_Port"), timeout=60)
    settled(first.zone)
    ports = by_name(first.nb.remote, "Logical_Switch_Port")
    assert ports["tstor-ovn-worker2"]["type"] == "router"
    assert "rtots-ovn-worker2" in by_name(first.nb.remote, "Logical_Router_Port")
    assert not [r for r in rows(first.nb.remote, "OVN_Northbound", "Logical_Router_Static_Route")
                if r["external_ids"].get("ic-node") == "ovn-worker2"]
    wait_until(lambda: remote_chassis(first) == set(), timeout=30)

    # In the zone named ovn-worker2, now without a node of its own, both are remote.
    second = zones["ovn-worker2"]
    wait_until(lambda: remote_chassis(second) == {"ovn-worker", "ovn-worker2"}, timeout=30)

    # ovn-worker2 is gone: nothing of it stays in either zone.
    client.delete(NODES, "ovn-worker2")
    wait_until(lambda: not any("ovn-worker2" in name for name in
                               by_name(first.nb.remote, "Logical_Switch_Port")), timeout=60)
    wait_until(lambda: not any("ovn-worker2" in name for name in
                               by_name(second.nb.remote, "Logical_Switch_Port")), timeout=60)
    wait_until(lambda: remote_chassis(second) == {"ovn-worker"}, timeout=30)


def test_layer2_pods_of_other_zones_are_remote_ports_and_converge_when_nodes_move(
        client: KubeClient, plane: ControlPlane, zones: dict[str, ZoneStack]) -> None:
    """A Layer2 switch is the zones' transit switch: each zone holds its own pods and the
    other zone's as ``remote`` ports with their tunnel IDs (upstream's
    ``AddTransitPortConfig``); a zone restarted with nothing changed writes nothing; a node
    that joins the zone turns its pods' ports local, a deleted pod's port goes."""
    for node in NODES_:
        set_zone(client, node, node)
    plane.start_manager()
    start_zones(plane, zones)
    client.create(NAMESPACES, {"metadata": {"name": "side"}})
    client.create(UDNS, {"metadata": {"name": "net", "namespace": "side"},
                         "spec": {"topology": "Layer2", "layer2": {
                             "role": "Secondary", "subnets": ["10.129.0.0/24"]}}})
    for name, node in (("a", "ovn-worker"), ("b", "ovn-worker2")):
        client.create(PODS, {"metadata": {"name": name, "namespace": "side", "annotations": {
            "k8s.v1.cni.cncf.io/networks": "net"}}, "spec": {
                "nodeName": node, "containers": [{"name": "c", "image": "x"}]}})
    tunnel_ids = {name: entries(client, "side", name, 2)["side/net"]["tunnel_id"]
                  for name in ("a", "b")}
    switch = "side_net_ovn_layer2_switch"
    for stack in zones.values():
        assert stack.zone is not None
        wait_until(lambda s=stack: {"side.net_side_a", "side.net_side_b"} <= set(
            by_name(s.nb.remote, "Logical_Switch_Port")), timeout=60)
        settled(stack.zone)
        assert by_name(stack.nb.remote, "Logical_Switch")[switch]["other_config"][
            "interconn-ts"] == switch
        ports = by_name(stack.nb.remote, "Logical_Switch_Port")
        for name, node in (("a", "ovn-worker"), ("b", "ovn-worker2")):
            port = ports[f"side.net_side_{name}"]
            assert port["type"] == ("" if node == stack.name else "remote")
            assert (port["options"]["requested-tnl-key"], port["options"]["requested-chassis"]
                    ) == (str(tunnel_ids[name]), node)

    first = zones["ovn-worker"]
    assert first.zone is not None
    before = settled(first.zone)
    first.zone.stop()
    plane.zones.remove(first.zone)
    first.zone = plane.start_zone(first.nb.remote, config=udn_config(
        zone="ovn-worker", sb_address=first.sb.remote), identity="ovn-worker")
    assert settled(first.zone) == before
    assert first.zone.writer.transactions == 0

    set_zone(client, "ovn-worker2", "ovn-worker")  # b's node joins the first zone
    wait_until(lambda: by_name(first.nb.remote, "Logical_Switch_Port")[
        "side.net_side_b"]["type"] == "", timeout=60)
    client.delete(PODS, "a", "side")
    wait_until(lambda: "side.net_side_a" not in by_name(
        zones["ovn-worker2"].nb.remote, "Logical_Switch_Port"), timeout=60)
