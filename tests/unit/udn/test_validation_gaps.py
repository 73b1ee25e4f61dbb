"""Input that used to be accepted and then rendered broken (or not at all) without a word.

Each case runs the real cluster manager against the local API server and asserts
what a user sees: the refusal at apply time, the ``NetworkCreated`` condition, or
the Warning event on the object, with its exact message — and that nothing was
allocated for it while everything else still works.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import Invalid
from ovnk_core.kube.names import QUALIFIED_NAME_MSG
from ovnk_core.kube.resources import CUDNS, EVENTS, NADS, NAMESPACES, PODS, UDNS
from ovnk_core.testing.waiting import wait_until
from ovnk_core.udn import admission
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL

NETWORK_ID = "k8s.ovn.org/network-id"
POD_NETWORKS = "k8s.ovn.org/pod-networks"
SELECTIONS = "k8s.v1.cni.cncf.io/networks"


def namespace(client: KubeClient, name: str, primary: bool = False, **labels: str) -> None:
    if primary:
        labels[PRIMARY_NAMESPACE_LABEL] = ""
    client.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})


def layer3(subnet: str, **extra: Any) -> dict[str, Any]:
    return {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
        {"cidr": subnet, "hostSubnet": 24}], **extra}}


def condition(client: KubeClient, resource: Any, name: str, namespace: str | None = None
              ) -> dict[str, Any] | None:
    obj = client.get(resource, name, namespace)
    for found in (obj.get("status") or {}).get("conditions") or []:
        if found["type"] == "NetworkCreated" and found["status"] == "False":
            return dict(found)
    return None


def failed(client: KubeClient, resource: Any, name: str, namespace: str | None = None
           ) -> dict[str, Any]:
    """The NetworkCreated=False condition, once it is there."""
    found = wait_until(lambda: condition(client, resource, name, namespace))
    assert found is not None
    return found


def events(client: KubeClient, namespace: str, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in client.list(EVENTS, namespace)["items"]
            if e["involvedObject"]["name"] == name and e["type"] == "Warning"]


def wait_event(client: KubeClient, namespace: str, name: str, reason: str, message: str
               ) -> None:
    wait_until(lambda: (reason, message) in events(client, namespace, name), timeout=20)


def nad(namespace: str, name: str, config: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"config": config if isinstance(config, str) else json.dumps(config)}}


def netconf(namespace: str, name: str, network: str, role: str = "secondary",
            subnets: str = "10.50.0.0/16/24") -> dict[str, Any]:
    return {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": network,
            "netAttachDefName": f"{namespace}/{name}", "topology": "layer3", "role": role,
            "subnets": subnets}


def network_id(client: KubeClient, namespace: str, name: str) -> str | None:
    annotations = client.get(NADS, name, namespace)["metadata"].get("annotations") or {}
    return annotations.get(NETWORK_ID)


def pod(client: KubeClient, ns: str, name: str, selections: str | None = None) -> None:
    annotations = {SELECTIONS: selections} if selections is not None else {}
    client.create(PODS, {"metadata": {"name": name, "namespace": ns, "annotations": annotations},
                         "spec": {"nodeName": "ovn-worker",
                                  "containers": [{"name": "c", "image": "agnhost"}]}})


def pod_networks(client: KubeClient, ns: str, name: str) -> dict[str, Any]:
    raw = (client.get(PODS, name, ns)["metadata"].get("annotations") or {}).get(POD_NETWORKS)
    result: dict[str, Any] = json.loads(raw) if raw else {}
    return result


# --------------------------------------------------------------------------- at apply time

@pytest.mark.parametrize(("spec", "message"), [
    (layer3("10.100.0.0/16") | {"layer3": {"role": "Primary", "subnets": [
        {"cidr": "10.100.0.0/16", "hostSubnet": 30}]}},
     'spec.layer3.subnets[0]: Invalid value: HostSubnet must be at most 29 for ipv4 '
     "CIDR: a /30 node subnet has no address left for pods after its network, gateway (.1), "
     "management port (.2) and broadcast addresses"),
    (layer3("10.100.0.0/16", joinSubnets=["100.70.0.0/30"]),
     'spec.layer3.joinSubnets: Invalid value: joinSubnets 100.70.0.0/30 is too small: '
     "it must hold the cluster router and a gateway router address for every node ID (up to "
     "65534), so a /16 or larger IPv4 CIDR"),
    (layer3("10.100.0.0/16", joinSubnets=["fd70::/64"]),
     'spec.layer3.joinSubnets: Invalid value: joinSubnets must have a CIDR of every IP '
     "family of the subnets: IPv4 is missing"),
], ids=["host-subnet-30", "join-30", "v6-join-on-v4-network"])
def test_refused_at_apply_time(client: KubeClient, kube_apiserver: ServerHandle,
                               spec: dict[str, Any], message: str) -> None:
    admission.register(kube_apiserver.admission)
    namespace(client, "blue", primary=True)
    with pytest.raises(Invalid) as info:
        client.create(UDNS, {"metadata": {"name": "blue", "namespace": "blue"}, "spec": spec})
    assert str(info.value).endswith(f'UserDefinedNetwork.k8s.ovn.org "blue" is invalid: '
                                    f"{message}"), str(info.value)


# --------------------------------------------------------------------------- conditions

def test_subnet_equal_to_its_own_join_subnet_is_a_sync_error(
        client: KubeClient, manager: ClusterManager) -> None:
    namespace(client, "blue", primary=True)
    client.create(UDNS, {"metadata": {"name": "blue", "namespace": "blue"},
                         "spec": layer3("100.65.0.0/16")})  # the default UDN join subnet
    found = failed(client, UDNS, "blue", "blue")
    assert (found["reason"], found["message"]) == (
        "SyncError", "pod or join subnet overlaps with already configured internal subnets: "
        "user defined join subnet 100.65.0.0/16 overlaps user defined subnet 100.65.0.0/16")
    assert client.list(NADS, "blue")["items"] == []  # nothing rendered with router ports on pods


def test_no_overlay_transport_is_unsupported_not_an_overlay(
        client: KubeClient, manager: ClusterManager) -> None:
    namespace(client, "red", primary=True, tenant="red")
    client.create(CUDNS, {"metadata": {"name": "flat"}, "spec": {
        "namespaceSelector": {"matchLabels": {"tenant": "red"}},
        "network": {**layer3("10.60.0.0/16"), "transport": "NoOverlay",
                    "noOverlay": {"outboundSNAT": "Enabled", "routing": "Managed"}}}})
    found = failed(client, CUDNS, "flat")
    assert (found["reason"], found["message"]) == (
        "NetworkAttachmentDefinitionSyncError",
        "transport 'NoOverlay' is not supported by this control plane")
    assert client.list(NADS, "red")["items"] == []


@pytest.mark.parametrize(("selector", "message"), [
    ({"matchExpressions": [{"key": "tenant", "operator": "In"}]},
     "failed to create label-selector: values: Invalid value: null: for 'in', "
     "'notin' operators, values set can't be empty"),
    ({"matchExpressions": [{"key": "bad key", "operator": "Exists"}]},
     f'failed to create label-selector: key: Invalid value: "bad key": {QUALIFIED_NAME_MSG}'),
], ids=["in-without-values", "invalid-key"])
def test_malformed_namespace_selector_is_reported_not_an_empty_success(
        client: KubeClient, manager: ClusterManager, selector: dict[str, Any],
        message: str) -> None:
    namespace(client, "red", tenant="red")
    client.create(CUDNS, {"metadata": {"name": "sel"}, "spec": {
        "namespaceSelector": selector,
        "network": {"topology": "Layer3", "layer3": {
            "role": "Secondary", "subnets": [{"cidr": "10.61.0.0/16"}]}}}})
    found = failed(client, CUDNS, "sel")
    assert (found["reason"], found["message"]) == ("NetworkAttachmentDefinitionSyncError",
                                                   message)
    wait_event(client, "default", "sel", "NetworkAttachmentDefinitionSyncError", message)


# --------------------------------------------------------------------------- NADs

def test_second_primary_nad_in_a_namespace_with_a_primary_udn(
        client: KubeClient, manager: ClusterManager) -> None:
    namespace(client, "green", primary=True)
    client.create(UDNS, {"metadata": {"name": "green", "namespace": "green"},
                         "spec": layer3("10.70.0.0/16")})
    wait_until(lambda: network_id(client, "green", "green"))
    client.create(NADS, nad("green", "second", netconf("green", "second", "green_second",
                                                       role="primary")))
    wait_event(client, "green", "second", "PrimaryNetworkConflict",
               "NAD green/green is primary for the namespace, NAD green/second can't be "
               "primary")
    assert network_id(client, "green", "second") is None
    # the namespace keeps its network: a pod gets the UDN, not the second NAD's network
    pod(client, "green", "p")
    wait_until(lambda: len(pod_networks(client, "green", "p")) == 2)
    assert set(pod_networks(client, "green", "p")) == {"default", "green/green"}


@pytest.mark.parametrize(("name", "config", "reason", "message"), [
    ("named-default", netconf("blue", "named-default", "default"), "InvalidNetworkConfig",
     "NAD blue/named-default is invalid: invalid name in in secondary network netconf "
     "(default)"),
    ("named-ext", netconf("blue", "named-ext", "ext"), "InvalidNetworkConfig",
     "NAD blue/named-ext is invalid: network name 'ext' is reserved: its node switches would "
     "be named ext_<node>, like the default network's external switches"),
    ("no-name", {k: v for k, v in netconf("blue", "no-name", "x").items() if k != "name"},
     "InvalidNetworkConfig", "NAD blue/no-name is invalid: netconf name is required"),
    ("name-not-string", netconf("blue", "name-not-string", 7),  # type: ignore[arg-type]
     "InvalidNetworkConfig", "NAD blue/name-not-string is invalid: netconf name is required"),
    ("not-json", '{"type": "ovn-k8s-cni-overlay", ', "InvalidNetworkConfig",
     "NAD blue/not-json is invalid: netconf is not valid JSON: Expecting property name "
     "enclosed in double quotes: line 1 column 33 (char 32)"),
], ids=["named-default", "named-ext", "no-name", "name-not-string", "not-json"])
def test_broken_nad_gets_a_warning_event_and_no_network_id(
        client: KubeClient, manager: ClusterManager, name: str, config: Any, reason: str,
        message: str) -> None:
    namespace(client, "blue")
    client.create(NADS, nad("blue", name, config))
    client.create(NADS, nad("blue", "fine", netconf("blue", "fine", "blue_fine")))
    wait_until(lambda: network_id(client, "blue", "fine"))  # the others are not blocked
    wait_event(client, "blue", name, reason, message)
    assert network_id(client, "blue", name) is None


def test_other_cni_plugins_nads_are_left_alone(client: KubeClient,
                                               manager: ClusterManager) -> None:
    namespace(client, "blue")
    client.create(NADS, nad("blue", "macvlan", {"cniVersion": "1.0.0", "type": "macvlan",
                                                 "master": "eth0"}))
    client.create(NADS, nad("blue", "fine", netconf("blue", "fine", "blue_fine")))
    pod(client, "blue", "p", "macvlan")  # Multus' business: the pod still gets its network
    wait_until(lambda: pod_networks(client, "blue", "p").get("default"))
    wait_until(lambda: network_id(client, "blue", "fine"))
    assert events(client, "blue", "macvlan") == []
    assert events(client, "blue", "p") == []


# --------------------------------------------------------------------------- pods

PREFIX = "failed to get all NetworkSelectionElements for pod blue/p: "


@pytest.mark.parametrize(("selections", "message"), [
    ("[", PREFIX + "parsePodNetworkAnnotation: failed to parse pod Network Attachment "
          "Selection Annotation JSON format: Expecting value: line 1 column 2 (char 1)"),
    ("[1]", PREFIX + "parsePodNetworkAnnotation: failed to parse pod Network Attachment "
            "Selection Annotation JSON format: json: cannot unmarshal number into Go value of "
            "type v1.NetworkSelectionElement"),
    ("[{}]", PREFIX + "network selection element 0 has no name"),
    ('[{"name": "side", "ips": ["10.80.0.9/24"]}]',
     PREFIX + "static IPs ['10.80.0.9/24'] requested for NAD blue/side are not supported: "
              'ovnk allocates every address itself (remove "ips")'),
    ('[{"name": "side", "mac": "02:00:00:00:00:01"}]',
     PREFIX + "static MAC 02:00:00:00:00:01 requested for NAD blue/side is not supported: "
              'ovnk derives every MAC from the pod\'s address (remove "mac")'),
    ("side,blue/side", "unexpected error: more than one of the same NAD blue/side specified "
                       "for pod blue/p"),
    ("Side", PREFIX + "parsePodNetworkAnnotation: Failed to parse: one or more items did not "
                      "match comma-delimited format (must consist of lower case alphanumeric "
                      "characters). Must start and end with an alphanumeric character), "
                      "mismatch @ 'Side'"),
    ("nope", "cannot find a network-attachment-definition (nope) in namespace (blue): "
             'network-attachment-definitions.k8s.cni.cncf.io "nope" not found'),
    ('[{"name": "side", "interface": "a-very-long-interface"}]',
     PREFIX + "network selection element 0 (side): interface 'a-very-long-interface' is not a "
              "valid interface name (1 to 15 characters, none of them '/', ':' or white space, "
              "not '.' or '..')"),
    ('[{"name": "side", "interface": "eth0"}]',
     "pod blue/p: interface 'eth0' is asked for twice (the pod's own interfaces are eth0 and "
     "ovn-udn1)"),
], ids=["bracket", "number", "empty-element", "static-ips", "static-mac", "duplicate",
        "upper-case", "unknown-nad", "bad-interface", "taken-interface"])
def test_unusable_network_selections_are_warning_events_on_the_pod(
        client: KubeClient, manager: ClusterManager, selections: str, message: str) -> None:
    namespace(client, "blue")
    client.create(NADS, nad("blue", "side", {**netconf("blue", "side", "blue_side"),
                                             "topology": "layer2",
                                             "subnets": "10.80.0.0/24"}))
    wait_until(lambda: network_id(client, "blue", "side"))
    pod(client, "blue", "p", selections)
    pod(client, "blue", "ok", "side")
    wait_until(lambda: pod_networks(client, "blue", "ok").get("blue/side"))  # others served
    wait_event(client, "blue", "p", "ErrorAllocatingPod", message)
    assert pod_networks(client, "blue", "p") == {}  # nothing half-allocated


def test_a_missing_nad_is_waited_for(client: KubeClient, manager: ClusterManager) -> None:
    namespace(client, "blue")
    pod(client, "blue", "p", "later")
    wait_event(client, "blue", "p", "ErrorAllocatingPod",
               "cannot find a network-attachment-definition (later) in namespace (blue): "
               'network-attachment-definitions.k8s.cni.cncf.io "later" not found')
    client.create(NADS, nad("blue", "later", {**netconf("blue", "later", "blue_later"),
                                              "topology": "layer2", "subnets": "10.81.0.0/24"}))
    wait_until(lambda: "blue/later" in pod_networks(client, "blue", "p"), timeout=30)
    assert pod_networks(client, "blue", "p")["blue/later"]["ip_addresses"] == ["10.81.0.1/24"]


def test_the_primary_nad_is_not_a_secondary_selection(client: KubeClient,
                                                      manager: ClusterManager) -> None:
    namespace(client, "green", primary=True)
    client.create(UDNS, {"metadata": {"name": "green", "namespace": "green"},
                         "spec": layer3("10.70.0.0/16")})
    wait_until(lambda: network_id(client, "green", "green"))
    pod(client, "green", "p", "green")
    wait_event(client, "green", "p", "ErrorAllocatingPod",
               "unexpected primary network NAD green/green specified in "
               "k8s.v1.cni.cncf.io/networks of pod green/p: it is the pod's primary network "
               "already")
    assert pod_networks(client, "green", "p") == {}
