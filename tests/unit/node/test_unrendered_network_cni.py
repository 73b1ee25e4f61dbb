"""A pod of a network no enabled plugin renders: the node agent refuses its CNI ADD with the
reason, and the kubelet stand-in reports that as FailedCreatePodSandBox on the pod."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.kubelet import Kubelet
from ovnk_local.testing.apiserver_fixtures import with_crds
from ovnk_localnet.topology import LocalnetTopology

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, NODES, PODS
from ovnk_core.node.agent import NodeAgent
from ovnk_core.node.cni_server import CniRequest, cni_call
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until

NODE = "ovn-worker"
LOCALNET_PROBLEM = ('no enabled plugin renders topology "localnet" into OVN: the localnet plugin '
                    "only parses and allocates its networks (plugins that render into OVN: "
                    "layer2, layer3)")


def nad(name: str, topology: str, subnets: str, role: str = "primary") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "blue"}, "spec": {"config": json.dumps({
        "cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": f"blue_{name}",
        "netAttachDefName": f"blue/{name}", "topology": topology, "role": role,
        "subnets": subnets, **({"physicalNetworkName": "physnet"} if topology == "localnet"
                               else {})})}}


def pod(name: str, network: str, address: str, role: str = "primary") -> dict[str, Any]:
    entry: dict[str, Any] = {"ip_addresses": [address], "mac_address": "0a:58:0a:3c:00:05",
                             "role": role}
    if role == "primary":
        entry["gateway_ips"] = [address.split("/")[0][:-1] + "1"]
    networks = {
        "default": {"ip_addresses": ["10.244.0.3/24"], "mac_address": "0a:58:0a:f4:00:03",
                    "role": "infrastructure-locked" if role == "primary" else "primary"},
        f"blue/{network}": entry}
    return {"metadata": {"name": name, "namespace": "blue",
                         "annotations": {"k8s.ovn.org/pod-networks": json.dumps(networks)}},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "i"}]}}


class FakeVsctl:
    """No OVS here: the refusal comes before any port exists; anything else would fail."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, *args: str) -> str:
        self.calls.append(args)
        if args[:2] == ("--format=json", "--columns=name,external_ids"):
            return '{"data": []}'  # the startup sync: no pod ports on this node
        raise AssertionError(f"unexpected ovs-vsctl {args}")


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    api = with_crds(kube_apiserver)
    api.create(NAMESPACES, {"metadata": {"name": "blue"}})
    wait_until(lambda: api.list(NADS, "blue") is not None)
    api.create(NADS, nad("flat", "localnet", "10.60.0.0/24", role="secondary"))
    api.create(NADS, nad("routed", "layer3", "10.70.0.0/16/24"))
    return api


def start_agent(client: KubeClient, tmp_path: Path, topologies: dict[str, Any],
                vsctl: FakeVsctl) -> NodeAgent:
    informers = InformerFactory(client, resync_period=0)
    agent = NodeAgent(client, NODE, vsctl, "ovnktest-", tmp_path / "cni" / f"{NODE}.sock",
                      informers=informers, topologies=topologies)
    agent.start()
    wait_until(lambda: agent.attachments is not None and
               agent.attachments.nads.get("blue/flat"))
    return agent


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> PluginHost:
    """The bundled plugins, the localnet one standing in for a topology plugin that only
    parses and allocates (rendering switched off)."""
    monkeypatch.setattr(LocalnetTopology, "renders", False)
    return PluginHost.load(udn_config())


@pytest.fixture
def agent(client: KubeClient, tmp_path: Path, host: PluginHost) -> Iterator[NodeAgent]:
    running = start_agent(client, tmp_path, dict(host.topologies), FakeVsctl())
    yield running
    running.stop()


def test_cni_add_of_an_unrendered_network_is_refused_with_the_reason(
        client: KubeClient, agent: NodeAgent) -> None:
    created = client.create(PODS, pod("web", "flat", "10.60.0.5/24", role="secondary"))
    status, body = cni_call(agent.cni.socket_path, "add",
                            CniRequest("blue", "web", created["metadata"]["uid"]))
    assert (status, body) == (400, {"error": (
        f"pod blue/web: network blue_flat (NAD blue/flat) is not rendered: {LOCALNET_PROBLEM}; "
        "its interface net1 would never be bound")})


def test_a_topology_the_node_has_not_enabled_is_named(client: KubeClient, tmp_path: Path,
                                                      host: PluginHost) -> None:
    vsctl = FakeVsctl()
    agent = start_agent(client, tmp_path, {"layer2": host.topologies["layer2"]}, vsctl)
    try:
        created = client.create(PODS, pod("api", "routed", "10.70.1.5/24"))
        status, body = cni_call(agent.cni.socket_path, "add",
                                CniRequest("blue", "api", created["metadata"]["uid"]))
        assert (status, body) == (400, {"error": (
            "pod blue/api: network blue_routed (NAD blue/routed) is not rendered: no enabled "
            'topology plugin provides topology "layer3" (plugins that render into OVN: layer2); '
            "its interface ovn-udn1 would never be bound")})
    finally:
        agent.stop()
    assert [call[0] for call in vsctl.calls] == ["--format=json"]  # no port was plugged


def test_the_kubelet_reports_it_as_failed_create_pod_sandbox(client: KubeClient,
                                                              agent: NodeAgent) -> None:
    kubelet = Kubelet(client, (NODE,), resync_period=0, cni_dir=agent.cni.socket_path.parent)
    kubelet.start()
    try:
        client.create(PODS, pod("web", "flat", "10.60.0.5/24", role="secondary"))

        def sandbox_failures() -> list[str]:
            return [e["message"] for e in client.list(EVENTS, "blue")["items"]
                    if e["involvedObject"]["name"] == "web"
                    and e["reason"] == "FailedCreatePodSandBox" and e["type"] == "Warning"]
        messages = wait_until(sandbox_failures)
    finally:
        kubelet.stop()
    assert messages == [
        "Failed to create pod sandbox: failed to set up the pod network: pod blue/web: network "
        f"blue_flat (NAD blue/flat) is not rendered: {LOCALNET_PROBLEM}; its interface net1 "
        "would never be bound"]
    assert client.get(PODS, "web", "blue").get("status", {}).get("phase") != "Running"


class MappingVsctl(FakeVsctl):
    """An OVS whose only bridge mapping is the gateway's."""

    def __call__(self, *args: str) -> str:
        if args == ("--if-exists", "get", "open_vswitch", ".",
                    "external_ids:ovn-bridge-mappings"):
            self.calls.append(args)
            return '"physnet:breth0"'
        return super().__call__(*args)


def test_a_localnet_network_the_node_does_not_map_is_refused_and_said_on_the_node(
        client: KubeClient, tmp_path: Path) -> None:
    tenant = nad("tenant", "localnet", "10.61.0.0/24", role="secondary")
    config = json.loads(tenant["spec"]["config"])
    config["physicalNetworkName"] = "tenantnet"
    tenant["spec"]["config"] = json.dumps(config)
    client.create(NADS, tenant)
    client.create(NODES, {"metadata": {"name": NODE}})
    vsctl = MappingVsctl()
    informers = InformerFactory(client, resync_period=0)
    host = PluginHost.load(udn_config())  # the localnet plugin renders
    agent = NodeAgent(client, NODE, vsctl, "ovnktest-", tmp_path / "cni" / f"{NODE}.sock",
                      informers=informers, topologies=dict(host.topologies),
                      recorder=EventRecorder(client, "ovnkube-node", NODE))
    agent.start()
    try:
        wait_until(lambda: agent.attachments is not None and
                   agent.attachments.nads.peek("blue/tenant"))
        problem = ("no bridge mapping for physical network 'tenantnet' in this node's "
                   "ovn-bridge-mappings (it has: physnet:breth0); map it to an OVS bridge on "
                   "the physical network, e.g. ovs-vsctl set open_vswitch . "
                   'external_ids:ovn-bridge-mappings="<existing>,tenantnet:<bridge>"')
        for name in ("web", "web2"):
            created = client.create(PODS, pod(name, "tenant", "10.61.0.5/24",
                                              role="secondary"))
            status, body = cni_call(agent.cni.socket_path, "add",
                                    CniRequest("blue", name, created["metadata"]["uid"]))
            assert (status, body) == (400, {"error": (
                f"pod blue/{name}: network blue_tenant (NAD blue/tenant) cannot be attached "
                f"on node {NODE}: {problem}")})
    finally:
        agent.stop()
    # no interface was made; the Node says it once
    assert all(call[0] in ("--format=json", "--if-exists") for call in vsctl.calls)
    events = [e for e in client.list(EVENTS, "default")["items"]
              if e["reason"] == "NetworkNotAttachable"]
    assert [(e["involvedObject"]["kind"], e["involvedObject"]["name"], e["message"],
             e["count"]) for e in events] == [
        ("Node", NODE, f"network blue_tenant cannot be attached on this node: {problem}", 1)]
