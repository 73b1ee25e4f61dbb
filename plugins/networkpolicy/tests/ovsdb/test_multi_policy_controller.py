"""MultiNetworkPolicy against a real Northbound and a real API server (which serves the
kind): a policy renders on the secondary networks its ``policy-for`` names, with the rows a
NetworkPolicy has there and pods selected by their attachment to that network; it never
touches NetworkPolicy's rows; a name that is no network, or a selector peer on a network
without IPAM, gets a Warning and blocks no other policy."""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import with_crds
from ovnk_networkpolicy.controller import NETWORK_POLICIES, PolicyController
from ovnk_networkpolicy.multi_policy import MULTI_NETWORK_POLICIES, MultiNetworkPolicyKind
from ovnk_networkpolicy.policy_kinds import NetworkPolicyKind
from ovnk_networkpolicy.rows import NetworkScope

from ovnk_core.annotations.pod_networks import PodNetwork, serialize
from ovnk_core.config.values import ClusterSubnet
from ovnk_core.contexts import ZoneContext
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES, PODS
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import NetworkState
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import read_rows
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.ovsdb

SEC = "sec-network-controller"
RAW = "raw-network-controller"
NETWORKS = {
    "sec": NetInfo(name="sec", topology="layer2", role="secondary", mtu=1400,
                   subnets=(ClusterSubnet(ipaddress.ip_network("10.200.0.0/16"), 16),)),
    "raw": NetInfo(name="raw", topology="localnet", role="secondary", mtu=1400),
}


def nad(name: str, subnets: str = "") -> dict[str, Any]:
    config = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": name,
              "netAttachDefName": f"ns1/{name}", "topology": NETWORKS[name].topology,
              "role": "secondary", **({"subnets": subnets} if subnets else {})}
    return {"metadata": {"namespace": "ns1", "name": name},
            "spec": {"config": json.dumps(config)}}


def pod(client: KubeClient, name: str, primary: str, secondary: str, **labels: str) -> None:
    networks = {"default": PodNetwork(ip_addresses=(f"{primary}/24",),
                                      mac_address="0a:58:0a:f4:00:05", role="primary"),
                "ns1/sec": PodNetwork(ip_addresses=(f"{secondary}/16",),
                                      mac_address="0a:58:0a:c8:00:05", role="secondary")}
    client.create(PODS, {"metadata": {"namespace": "ns1", "name": name, "labels": labels,
                                      "annotations": {"k8s.ovn.org/pod-networks":
                                                      serialize(networks)}},
                         "spec": {"nodeName": "node1",
                                  "containers": [{"name": "c", "image": "i"}]}},
                  namespace="ns1")


def mnp(name: str, policy_for: str | None, **spec: Any) -> dict[str, Any]:
    annotations = {"k8s.v1.cni.cncf.io/policy-for": policy_for} if policy_for else {}
    return {"apiVersion": "k8s.cni.cncf.io/v1beta1", "kind": "MultiNetworkPolicy",
            "metadata": {"namespace": "ns1", "name": name, "annotations": annotations},
            "spec": {"podSelector": {}, **spec}}


def owned_ids(remote: str, table: str) -> dict[str, dict[str, str]]:
    return {dict(r.external_ids)["k8s.ovn.org/id"]: dict(r.external_ids)
            for r in read_rows(remote, table) if "k8s.ovn.org/id" in dict(r.external_ids)}


@pytest.fixture
def running(kube_apiserver: ServerHandle, nb_server: OvsdbServer
            ) -> Iterator[tuple[KubeClient, str]]:
    client = with_crds(kube_apiserver)
    writer = NbWriter([nb_server.remote], timeout=30).start()
    informers = InformerFactory(client)

    def rendered(network: str) -> NetworkState | None:
        netinfo = NETWORKS.get(network)
        return NetworkState(netinfo, 2, (), ()) if netinfo is not None else None

    context = ZoneContext(udn_config(), client, informers,
                          EventRecorder(client, "ovnkube-controller", "test"), writer,
                          rendered, writer.owners_with_key_prefix)
    client.create(NAMESPACES, {"metadata": {"name": "ns1"}})
    client.create(NADS, nad("sec", "10.200.0.0/16"), namespace="ns1")
    client.create(NADS, nad("raw"), namespace="ns1")
    controllers = [
        PolicyController(context, MultiNetworkPolicyKind(context)),
        PolicyController(context, NetworkPolicyKind(lambda _ns: NetworkScope("default"),
                                                    lambda: [NetworkScope("default")]),
                         ["169.254.169.5"])]
    informers.start()
    for controller in controllers:
        controller.controller.start()
    try:
        yield client, nb_server.remote
    finally:
        for controller in controllers:
            controller.controller.stop()
        informers.stop()
        writer.stop()


def warnings(client: KubeClient, name: str) -> list[str]:
    return [e["message"] for e in client.list(EVENTS, namespace="ns1")["items"]
            if e["involvedObject"]["name"] == name and e["type"] == "Warning"]


def test_a_multi_network_policy_renders_on_the_networks_it_names(
        running: tuple[KubeClient, str]) -> None:
    client, remote = running
    pod(client, "web", "10.244.0.5", "10.200.0.5", app="web")
    pod(client, "db", "10.244.0.6", "10.200.0.6", app="db")
    spec = {"podSelector": {"matchLabels": {"app": "db"}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                         "ports": [{"port": 5432}]}]}
    client.create(MULTI_NETWORK_POLICIES, mnp("allow-web", "sec", **spec), namespace="ns1")
    # a NetworkPolicy of the same name: on the default network, untouched by the other
    client.create(NETWORK_POLICIES, {"metadata": {"namespace": "ns1", "name": "allow-web"},
                                     "spec": spec}, namespace="ns1")
    acl = f"{SEC}:NetworkPolicy:ns1:allow-web:Ingress:0:tcp:-1"
    peer = f"{SEC}:PodSelector:ns1_LS{{ML:{{app: web,}},}}:v4"
    wait_until(lambda: acl in owned_ids(remote, "ACL") and
               "default-network-controller:NetworkPolicy:ns1:allow-web:Ingress:0:tcp:-1"
               in owned_ids(remote, "ACL"), timeout=30)
    groups = owned_ids(remote, "Port_Group")
    assert {f"{SEC}:NetworkPolicy:ns1:allow-web", f"{SEC}:NetpolNamespace:ns1:Ingress",
            f"{SEC}:NetpolNamespace:ns1:Egress"} <= set(groups)
    assert groups[f"{SEC}:NetworkPolicy:ns1:allow-web"]["k8s.ovn.org/owner"] == \
        "feature:multinetworkpolicy:policy:ns1/allow-web"
    # the peer set holds the pods' addresses on the secondary network, not their primary
    wait_until(lambda: [list(r.addresses) for r in read_rows(remote, "Address_Set")
                        if dict(r.external_ids).get("k8s.ovn.org/id") == peer] ==
               [["10.200.0.5"]], timeout=30)
    assert not {i for i in groups if i.startswith(RAW)}

    # deleting the NetworkPolicy leaves the MultiNetworkPolicy's rows, and the other way
    client.delete_if_exists(NETWORK_POLICIES, "allow-web", namespace="ns1")
    wait_until(lambda: not {i for i in owned_ids(remote, "Port_Group")
                            if i.startswith("default-network-controller:NetworkPolicy")},
               timeout=30)
    assert acl in owned_ids(remote, "ACL")
    # the network's clusterPortGroup (its pods' ports make its switches stateful) came with
    # the first policy and stays with the network; nothing else of a deleted policy does
    cluster = {f"{SEC}:Cluster:clusterPortGroup", f"{SEC}:Cluster:clusterRtrPortGroup"}
    assert cluster <= set(owned_ids(remote, "Port_Group"))
    client.delete_if_exists(MULTI_NETWORK_POLICIES, "allow-web", namespace="ns1")
    wait_until(lambda: {i for i in owned_ids(remote, "Port_Group") if i.startswith(SEC)}
               == cluster
               and not {i for i in owned_ids(remote, "Address_Set") if i.startswith(SEC)},
               timeout=30)


def test_bad_multi_network_policies_get_warnings_and_block_nothing(
        running: tuple[KubeClient, str]) -> None:
    client, remote = running
    # a selector peer on a network without IPAM: upstream's refusal
    client.create(MULTI_NETWORK_POLICIES, mnp("raw-selector", "raw", ingress=[
        {"from": [{"podSelector": {}}]}]), namespace="ns1")
    # a name that is no NAD, beside one that is: the known one renders
    client.create(MULTI_NETWORK_POLICIES, mnp("half-known", "nope, ns1/sec",
                                              ingress=[{}]), namespace="ns1")
    # an ipBlock peer on the network without IPAM renders
    client.create(MULTI_NETWORK_POLICIES, mnp("raw-block", "ns1/raw", ingress=[
        {"from": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]}]), namespace="ns1")
    # no policy-for: no network's
    client.create(MULTI_NETWORK_POLICIES, mnp("nowhere", None), namespace="ns1")
    # an unknown protocol (the CRD's schema lets any spec through)
    client.create(MULTI_NETWORK_POLICIES, mnp("icmp", "sec", ingress=[
        {"ports": [{"protocol": "ICMP", "port": 1}]}]), namespace="ns1")
    wait_until(lambda: {f"{RAW}:NetworkPolicy:ns1:raw-block:Ingress:0:None:-2",
                        f"{SEC}:NetworkPolicy:ns1:half-known:Ingress:0:None:-1"}
               <= set(owned_ids(remote, "ACL")), timeout=30)
    wait_until(lambda: warnings(client, "raw-selector") and warnings(client, "half-known"),
               timeout=30)
    assert warnings(client, "raw-selector")[0] == (
        "failed to create network policy ns1/raw-selector: invalid ingress peer in "
        "multi-network policy raw-selector; IPAM-less networks can only have `ipBlock` peers")
    assert warnings(client, "half-known")[0] == (
        "ns1/half-known: k8s.v1.cni.cncf.io/policy-for names ns1/nope, which is no "
        "network's NetworkAttachmentDefinition")
    wait_until(lambda: warnings(client, "icmp"), timeout=30)
    assert warnings(client, "icmp")[0] == (
        "failed to create network policy ns1/icmp: spec.ingress[0].ports[0].protocol: "
        "Unsupported value: 'ICMP': supported values: \"SCTP\", \"TCP\", \"UDP\"")
    ids = set(owned_ids(remote, "Port_Group"))
    assert not {i for i in ids if "raw-selector" in i or "nowhere" in i or "icmp" in i}
    # the refused policy makes no default deny on its network (as upstream's failed add):
    # the namespace's on raw come from raw-block alone, and go with it
    assert f"{RAW}:NetpolNamespace:ns1:Ingress" in ids
    client.delete_if_exists(MULTI_NETWORK_POLICIES, "raw-block", namespace="ns1")
    wait_until(lambda: {i for i in owned_ids(remote, "Port_Group") if i.startswith(RAW)} ==
               {f"{RAW}:Cluster:clusterPortGroup", f"{RAW}:Cluster:clusterRtrPortGroup"},
               timeout=30)
    assert not warnings(client, "nowhere")
