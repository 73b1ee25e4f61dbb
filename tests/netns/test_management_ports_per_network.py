"""Management ports on a real OVS (userspace datapath) in a network namespace: one network
whose port the kernel refuses never keeps another network from its port.

A primary Layer3 network on ``127.0.0.0/8`` (the first node subnet's gateway, ``127.0.0.1``,
is a local address: the kernel refuses the route via it) used to stall every network after
it, whichever way it was accepted; here the NADs and the Node are written as the cluster
manager writes them, so the test does not depend on what the API or the cluster manager
accept.
"""

from __future__ import annotations

import ipaddress
import json
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import with_crds

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, NODES
from ovnk_core.node import netlink
from ovnk_core.node.management_port import FAILED_REASON, RULE_PRIORITY, ManagementPorts
from ovnk_core.node.pod_network import Vsctl
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.netns
NODE = "ovn-worker"
SUBNETS = "k8s.ovn.org/node-subnets"


def nad(namespace: str, subnets: str, network_id: int) -> dict[str, Any]:
    """A primary Layer3 NAD as the cluster manager accepted it (its network ID written)."""
    network = f"{namespace}_net"
    return {"metadata": {"name": "net", "namespace": namespace, "annotations": {
                "k8s.ovn.org/network-id": str(network_id),
                "k8s.ovn.org/network-name": network}},
            "spec": {"config": json.dumps({
                "cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": network,
                "netAttachDefName": f"{namespace}/net", "topology": "layer3",
                "role": "primary", "subnets": subnets})}}


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    api = with_crds(kube_apiserver)
    for namespace in ("aloop", "bgood"):
        api.create(NAMESPACES, {"metadata": {"name": namespace}})
    return api


def routes(netns: str, table: int) -> list[tuple[str, str | None]]:
    return sorted((route["dst"], route.get("gateway"))
                  for route in netlink.list_routes(table=table, netns=netns))


def port_ready(netns: str, ifname: str, table: int, address: str, cluster: str) -> bool:
    """The port exists with its address, the route to its cluster subnet via the
    router's address in its own table, and its three rules (from the port, to the port,
    from its address)."""
    if netlink.link_index(ifname, netns=netns) is None:
        return False
    rules = [rule for rule in netlink.list_rules(netns=netns)
             if rule.get("table") == table and rule.get("priority") == RULE_PRIORITY]
    interface = ipaddress.ip_interface(address)
    return address in netlink.list_addresses(ifname, netns) and \
        {rule.get("src") for rule in rules} == {None, f"{interface.ip}/32"} and len(rules) == 3 \
        and (cluster, str(interface.network.network_address + 1)) in routes(netns, table)


def test_a_network_whose_port_fails_never_keeps_another_from_its_port(
        client: KubeClient, netns: str, ovs: Vsctl) -> None:
    client.create(NADS, nad("aloop", "127.0.0.0/8/24", 2), "aloop")
    client.create(NADS, nad("bgood", "10.80.0.0/16/24", 3), "bgood")
    client.create(NODES, {"metadata": {"name": NODE, "annotations": {SUBNETS: json.dumps({
        "default": ["10.244.0.0/24"], "aloop_net": ["127.0.0.0/24"],
        "bgood_net": ["10.80.1.0/24"]})}}})
    # a port left behind by a network deleted while the agent was down
    ovs("add-port", "br-int", "ovn-k8s-mp9", "--", "set", "interface", "ovn-k8s-mp9",
        "type=internal", "external_ids:iface-id=k8s-gone_net_ovn-worker")
    informers = InformerFactory(client)
    ports = ManagementPorts(informers, NODE, ovs, netns, ["10.244.0.0/16"],
                            EventRecorder(client, "ovnkube-node", NODE),
                            PluginHost.load(udn_config()).topologies)
    informers.start()
    ports.start()
    try:
        # the network created after the failing one still gets its port, routes and rules
        wait_until(lambda: port_ready(netns, "ovn-k8s-mp3", 1003, "10.80.1.2/24", "10.80.0.0/16"),
                   timeout=30, what="bgood_net's management port")
        assert routes(netns, 1003) == [("10.80.0.0/16", "10.80.1.1"), ("10.80.1.0/24", None)]
        wait_until(lambda: netlink.link_index("ovn-k8s-mp0", netns=netns) is not None,
                   what="the default network's management port")
        wait_until(lambda: "ovn-k8s-mp9" not in ovs("list-ports", "br-int").split(),
                   what="the left-behind port removed")

        # the failing one is said on the Node, once however often it is retried
        def failures() -> list[dict[str, Any]]:
            return [e for e in client.list(EVENTS, "default")["items"]
                    if e["reason"] == FAILED_REASON]
        [event] = wait_until(failures, what="the Warning event of aloop_net's failure")
        assert (event["type"], event["involvedObject"]["kind"],
                event["involvedObject"]["name"]) == ("Warning", "Node", NODE)
        assert event["message"].startswith("network aloop_net: management port failed: ")
        assert "127.0.0.1" in event["message"], event["message"]
        wait_until(lambda: ports.controller.failures("aloop_net") >= 3,
                   what="aloop_net retried")
        assert [e["count"] for e in failures()] == [1]
        assert not port_ready(netns, "ovn-k8s-mp2", 1002, "127.0.0.2/24", "127.0.0.0/8")

        # its cause goes away: the failing network converges too
        client.patch(NADS, "net", {"spec": {"config": json.dumps({
            **json.loads(client.get(NADS, "net", "aloop")["spec"]["config"]),
            "subnets": "10.90.0.0/16/24"})}}, "aloop")
        node = client.get(NODES, NODE)
        subnets = json.loads(node["metadata"]["annotations"][SUBNETS])
        client.patch(NODES, NODE, {"metadata": {"annotations": {SUBNETS: json.dumps(
            {**subnets, "aloop_net": ["10.90.1.0/24"]})}}})
        wait_until(lambda: port_ready(netns, "ovn-k8s-mp2", 1002, "10.90.1.2/24", "10.90.0.0/16"),
                   timeout=60, what="aloop_net's management port once it can be made")
        assert ports.controller.failures("aloop_net") == 0
        assert port_ready(netns, "ovn-k8s-mp3", 1003, "10.80.1.2/24", "10.80.0.0/16")

        # a network that goes loses its port and rules; the others keep theirs
        client.delete(NADS, "net", "bgood")
        wait_until(lambda: "ovn-k8s-mp3" not in ovs("list-ports", "br-int").split(),
                   what="bgood_net's port removed")
        # (the rules go after the port)
        wait_until(lambda: not [rule for rule in netlink.list_rules(netns=netns)
                                if rule.get("table") == 1003], what="bgood_net's rules removed")
        assert port_ready(netns, "ovn-k8s-mp2", 1002, "10.90.1.2/24", "10.90.0.0/16")
    finally:
        ports.stop()
        informers.stop()
