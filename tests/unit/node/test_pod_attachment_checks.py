"""The node agent plumbs only the pod-networks entries the zone renders: the zone's own checks,
run at CNI ADD on what the node's caches hold, refuse the rest with the zone's words."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import with_crds

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import NADS, NAMESPACES, NODES, PODS
from ovnk_core.node.agent import NodeAgent
from ovnk_core.node.bridge_mappings import OvsHost
from ovnk_core.node.cni_server import CniRequest, cni_call
from ovnk_core.node.pod_attachments import PodAttachmentChecks, Verdict
from ovnk_core.node.pod_network import build_pod_interfaces, shared_interface_problem
from ovnk_core.plugins import PluginHost
from ovnk_core.pods.annotation import build_pod_network
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until

NODE = "ovn-worker"
CONFIG = udn_config()
HOST = PluginHost.load(CONFIG)
ENTRY = "not rendering the k8s.ovn.org/pod-networks entry for"


def nad(namespace: str, name: str, subnets: str, network_id: str | None = "7",
        role: str = "primary") -> dict[str, Any]:
    network = f"{namespace}_{name}"
    annotations = {} if network_id is None else {
        "k8s.ovn.org/network-id": network_id, "k8s.ovn.org/network-name": network}
    return {"metadata": {"name": name, "namespace": namespace, "annotations": annotations},
            "spec": {"config": json.dumps({
                "cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": network,
                "netAttachDefName": f"{namespace}/{name}", "topology": "layer3",
                "role": role, "subnets": subnets})}}


def entry(nad_obj: dict[str, Any] | None, address: str, role: str) -> dict[str, Any]:
    """The entry the cluster manager's pod IPAM writes for ``address`` (``nad_obj`` None:
    the default network)."""
    netinfo = None if nad_obj is None else HOST.parse_netconf(nad_obj["spec"]["config"])
    topology = None if netinfo is None else HOST.topologies[netinfo.topology]
    return build_pod_network(CONFIG, netinfo, role, [ipaddress.ip_interface(address)],
                             topology=topology).to_json()


BLUE = nad("blue", "net", "103.103.0.0/16/24")


def blue_pod(name: str, **extra: dict[str, Any]) -> dict[str, Any]:
    """A pod of namespace blue (whose primary network is blue_net) on ovn-worker, annotated
    as the cluster manager annotates it, plus ``extra`` entries."""
    networks = {"default": entry(None, "10.244.0.5/24", "infrastructure-locked"),
                "blue/net": entry(BLUE, "103.103.1.5/24", "primary"), **extra}
    return {"metadata": {"name": name, "namespace": "blue", "uid": f"uid-{name}",
                         "annotations": {"k8s.ovn.org/pod-networks": json.dumps(networks)}},
            "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "agnhost"}]}}


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    api = with_crds(kube_apiserver)
    for namespace in ("blue", "red"):
        api.create(NAMESPACES, {"metadata": {"name": namespace}})
    api.create(NADS, BLUE, "blue")
    api.create(NADS, nad("red", "net", "104.104.0.0/16/24", "8"), "red")
    api.create(NODES, {"metadata": {"name": NODE, "annotations": {
        "k8s.ovn.org/node-subnets": json.dumps({"default": ["10.244.0.0/24"],
                                                "blue_net": ["103.103.1.0/24"],
                                                "red_net": ["104.104.1.0/24"]})}}})
    return api


class NoOvs:
    """An OVS with no bridge mappings (no plugin here asks for one)."""

    def __call__(self, *args: str) -> str:
        return ""


@pytest.fixture
def checks(client: KubeClient) -> Iterator[PodAttachmentChecks]:
    informers = InformerFactory(client)
    found = PodAttachmentChecks(client, NODE, informers, HOST.topologies, OvsHost(NoOvs()),
                                CONFIG)
    informers.start()
    informers.wait_for_sync(10)
    wait_until(lambda: found.nads.peek("blue/net") and found.nodes.peek(NODE))
    yield found
    informers.stop()


def verdict(checks: PodAttachmentChecks, pod: dict[str, Any]) -> Verdict:
    return checks.verdict(pod, build_pod_interfaces(pod))


def test_what_the_cluster_manager_wrote_is_plumbed(checks: PodAttachmentChecks) -> None:
    assert verdict(checks, blue_pod("web")) == Verdict()


def test_an_entry_for_a_nad_that_does_not_exist_is_refused(checks: PodAttachmentChecks
                                                           ) -> None:
    bogus = entry(BLUE, "103.103.1.6/24", "primary")
    result = verdict(checks, blue_pod("web", **{"blue/nope": bogus}))
    assert result.refused == (
        f"pod blue/web: {ENTRY} blue/nope: NAD blue/nope does not exist",)


def test_a_multicast_mac_is_refused_as_the_zone_refuses_it(checks: PodAttachmentChecks
                                                           ) -> None:
    pod = blue_pod("web")
    networks = json.loads(pod["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])
    networks["blue/net"]["mac_address"] = "03:58:67:67:01:05"
    pod["metadata"]["annotations"]["k8s.ovn.org/pod-networks"] = json.dumps(networks)
    assert verdict(checks, pod).refused == (
        f"pod blue/web: {ENTRY} blue/net (network blue_net): MAC address 03:58:67:67:01:05 "
        "is a multicast address",)


def test_another_namespace_s_primary_network_and_a_foreign_address_are_refused(
        checks: PodAttachmentChecks) -> None:
    red = nad("red", "net", "104.104.0.0/16/24", "8")
    pod = blue_pod("web", **{"red/net": entry(red, "104.104.1.9/24", "primary")})
    networks = json.loads(pod["metadata"]["annotations"]["k8s.ovn.org/pod-networks"])
    networks["default"]["ip_addresses"] = ["10.244.9.5/24"]
    pod["metadata"]["annotations"]["k8s.ovn.org/pod-networks"] = json.dumps(networks)
    refused = verdict(checks, pod).refused
    assert len(refused) == 2, refused
    assert refused[0].startswith(f"pod blue/web: {ENTRY} default (network default): IP "
                                 "10.244.9.5/24 is outside node ovn-worker's subnet(s)")
    assert refused[1] == (
        f"pod blue/web: {ENTRY} red/net (network red_net): network red_net is the primary "
        "network of namespace red, not of the pod's namespace blue")


def test_a_nad_the_cluster_manager_did_not_accept_is_refused(
        client: KubeClient, checks: PodAttachmentChecks) -> None:
    client.create(NADS, nad("blue", "extra", "105.105.0.0/16/24", None, role="secondary"),
                  "blue")
    extra = nad("blue", "extra", "105.105.0.0/16/24", "9", role="secondary")
    pod = blue_pod("web", **{"blue/extra": entry(extra, "105.105.1.5/24", "secondary")})
    pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = "extra"
    assert verdict(checks, pod).refused == (
        f"pod blue/web: {ENTRY} blue/extra (network blue_extra): NAD blue/extra is not "
        "accepted for network blue_extra (the cluster manager wrote no network ID on it)",)


def test_a_nad_the_cache_has_not_seen_yet_is_read_from_the_api_server(
        client: KubeClient, checks: PodAttachmentChecks) -> None:
    extra = nad("blue", "late", "105.105.0.0/16/24", "9", role="secondary")
    checks.nads.stop()  # the cache lags: it never sees the NAD
    client.create(NADS, extra, "blue")
    client.patch(NODES, NODE, {"metadata": {"annotations": {"k8s.ovn.org/node-subnets":
        json.dumps({"default": ["10.244.0.0/24"], "blue_net": ["103.103.1.0/24"],
                    "blue_late": ["105.105.1.0/24"]})}}})
    wait_until(lambda: "blue_late" in (checks.nodes.peek(NODE) or {}).get(
        "metadata", {}).get("annotations", {}).get("k8s.ovn.org/node-subnets", ""))
    assert checks.nads.peek("blue/late") is None
    pod = blue_pod("web", **{"blue/late": entry(extra, "105.105.1.5/24", "secondary")})
    pod["metadata"]["annotations"]["k8s.v1.cni.cncf.io/networks"] = "late"
    assert verdict(checks, pod) == Verdict()


def test_a_network_without_a_subnet_on_this_node_yet_is_waited_for(
        client: KubeClient, checks: PodAttachmentChecks) -> None:
    client.patch(NODES, NODE, {"metadata": {"annotations": {"k8s.ovn.org/node-subnets":
        json.dumps({"default": ["10.244.0.0/24"]})}}})
    wait_until(lambda: "blue_net" not in (checks.nodes.peek(NODE) or {}).get(
        "metadata", {}).get("annotations", {}).get("k8s.ovn.org/node-subnets", "blue_net"))
    assert verdict(checks, blue_pod("web")) == Verdict(
        waiting=("node ovn-worker has no subnet in network blue_net yet",))


class FakeVsctl:
    """No OVS: a refused ADD plugs nothing; anything but the startup sync fails the test."""

    def __call__(self, *args: str) -> str:
        if args[:2] == ("--format=json", "--columns=name,external_ids"):
            return '{"data": []}'
        raise AssertionError(f"unexpected ovs-vsctl {args}")


def test_cni_add_refuses_the_entries_with_the_zone_s_reasons_before_plumbing_anything(
        client: KubeClient, tmp_path: Path) -> None:
    informers = InformerFactory(client)
    agent = NodeAgent(client, NODE, FakeVsctl(), "ovnktest-", tmp_path / "cni.sock",
                      informers=informers, topologies=HOST.topologies, config=CONFIG)
    agent.start()
    try:
        bogus = entry(BLUE, "103.103.1.6/24", "primary")
        created = client.create(PODS, blue_pod("web", **{"blue/nope": bogus}), "blue")
        status, body = cni_call(agent.cni.socket_path, "add",
                                CniRequest("blue", "web", created["metadata"]["uid"]))
        assert (status, body) == (400, {"error": f"pod blue/web: {ENTRY} blue/nope: NAD "
                                                 "blue/nope does not exist"})
    finally:
        agent.stop()
        informers.stop()


def test_two_entries_never_share_an_interface() -> None:
    pod = blue_pod("web", **{"blue/other": entry(BLUE, "103.103.1.6/24", "primary")})
    assert shared_interface_problem(build_pod_interfaces(pod)) == (
        "the entries for blue/net and blue/other would both be interface ovn-udn1")
    assert shared_interface_problem(build_pod_interfaces(blue_pod("web"))) is None
