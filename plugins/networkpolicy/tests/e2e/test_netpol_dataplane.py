"""NetworkPolicy with real packets in ``ovnk local``, on the default network, on a primary
Layer3 UDN and on a primary Layer2 UDN: a deny-all policy drops what reached a server, then
a policy allowing one client lets exactly that client back in, and deleting the policies
restores everything."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.settings import ComponentSettings
from ovnk_local.testing.dataplane import kubectl, require_dataplane
from ovnk_local.testing.port_probes import Probe, probe_from

from ovnk_core.testing.ovsdb_fixtures import read_rows
from ovnk_core.testing.waiting import wait_until

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
TIMED_OUT = 28  # curl: no answer at all (dropped)
UDN_NAMESPACE = "tenant"
L2_NAMESPACE = "tenant-l2"


def apply(cluster: LocalCluster, *objects: dict[str, Any]) -> None:
    for obj in objects:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(obj))


def netexec_pod(namespace: str, name: str, node: str, probe: bool = False,
                networks: str = "", **labels: str) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "netexec", "image": AGNHOST, "args": ["netexec", "--http-port=8080"],
        "ports": [{"name": "http", "containerPort": 8080}]}
    if probe:
        container["readinessProbe"] = {"httpGet": {"path": "/healthz", "port": "http"},
                                       "periodSeconds": 1}
    annotations = {"k8s.v1.cni.cncf.io/networks": networks} if networks else {}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels,
                         "annotations": annotations},
            "spec": {"nodeName": node, "containers": [container]}}


def ready(cluster: LocalCluster, namespace: str, name: str) -> bool:
    found = json.loads(kubectl(cluster, "get", "pod", "-n", namespace, name, "-o",
                               "json").stdout)
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (found.get("status") or {}).get("conditions") or [])


def policy(namespace: str, name: str, ingress: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"podSelector": {"matchLabels": {"app": "server"}},
                     "policyTypes": ["Ingress"], "ingress": ingress}}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("netpol") / ".ovnk")
    # NetworkPolicy is on by default; MultiNetworkPolicy on with upstream's flag
    local.up(nodes=2, timeout=90, dataplane=True, settings=ComponentSettings(
        given={"enable_multi_networkpolicy": "true"}))
    try:
        apply(local, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "np"}},
              *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name,
                 "labels": {"k8s.ovn.org/primary-user-defined-network": ""}}}
                for name in (UDN_NAMESPACE, L2_NAMESPACE)))
        apply(local, {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
                      "metadata": {"name": "net", "namespace": UDN_NAMESPACE},
                      "spec": {"topology": "Layer3", "layer3": {"role": "Primary", "subnets": [
                          {"cidr": "106.106.0.0/16", "hostSubnet": 24}]}}},
              {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
               "metadata": {"name": "net", "namespace": L2_NAMESPACE},
               "spec": {"topology": "Layer2", "layer2": {"role": "Primary",
                                                         "subnets": ["107.107.0.0/16"]}}})
        for namespace in ("np", UDN_NAMESPACE, L2_NAMESPACE):
            apply(local, netexec_pod(namespace, "server", "ovn-worker", app="server"),
                  netexec_pod(namespace, "allowed", "ovn-worker2", role="client"),
                  netexec_pod(namespace, "other", "ovn-worker"))
        yield local
    finally:
        local.down()


def pod_ip(cluster: LocalCluster, namespace: str, name: str) -> str:
    """The pod's address on its primary network (its UDN's, in a UDN namespace)."""
    found = json.loads(kubectl(cluster, "get", "pod", "-n", namespace, name, "-o",
                               "json").stdout)
    raw = ((found.get("metadata") or {}).get("annotations") or {}).get(
        "k8s.ovn.org/pod-networks")
    for entry in (json.loads(raw) if raw else {}).values():
        if entry.get("role") == "primary" and entry.get("ip_addresses"):
            return str(entry["ip_addresses"][0]).split("/")[0]
    return ""


def curl(cluster: LocalCluster, namespace: str, name: str, url: str
         ) -> subprocess.CompletedProcess[str]:
    return kubectl(cluster, "exec", "-n", namespace, name, "--", "curl", "-sS", "--max-time",
                   "3", url, check=False)


def answers(cluster: LocalCluster, namespace: str, client: str, url: str) -> bool:
    result = curl(cluster, namespace, client, url)
    return result.returncode == 0 and result.stdout == "server"


NETWORK_CONTROLLERS = ("default-network-controller", f"{UDN_NAMESPACE}_net-network-controller",
                       f"{L2_NAMESPACE}_net-network-controller")


def test_every_network_has_upstreams_rows_without_any_policy(cluster: LocalCluster) -> None:
    """With NetworkPolicy on by default and no policy in the cluster, each network (the
    default one, a primary Layer3 and a primary Layer2 UDN) has the rows upstream's
    network controllers keep: ``clusterPortGroup`` and ``clusterRtrPortGroup``, the two
    ``NetpolDefault`` allow-hairpinning ACLs, and on its node switches a ``NetpolNode`` ACL
    letting the node's management port address in; nothing else of NetworkPolicy.  (ovnk's
    primary Layer2 renders no management port, docs/features/layer2.md: no ``NetpolNode``
    there; its kubelet probes use the pods' default-network interface.)"""
    remote = f"unix:{cluster.nb_socket}"

    def owned(table: str, controller: str) -> list[Any]:
        return [row for row in read_rows(remote, table)
                if dict(row.external_ids).get("k8s.ovn.org/owner-controller") == controller
                and dict(row.external_ids).get("k8s.ovn.org/owner", "").startswith(
                    "feature:networkpolicy:")]

    def ids(rows: list[Any]) -> set[str]:
        return {dict(row.external_ids)["k8s.ovn.org/id"] for row in rows}

    for controller in NETWORK_CONTROLLERS:
        wait_until(lambda c=controller: len(ids(owned("Port_Group", c))) == 2
                   and owned("ACL", c), timeout=90, what=f"the rows of {controller}")
        assert ids(owned("Port_Group", controller)) == {
            f"{controller}:Cluster:clusterPortGroup", f"{controller}:Cluster:clusterRtrPortGroup"}
        acls = owned("ACL", controller)
        by_type: dict[str, list[Any]] = {}
        for acl in acls:
            by_type.setdefault(dict(acl.external_ids)["k8s.ovn.org/owner-type"], []).append(acl)
        layer2 = controller.startswith(L2_NAMESPACE)
        assert set(by_type) == ({"NetpolDefault"} if layer2 else
                                {"NetpolDefault", "NetpolNode"}), controller
        assert {(a.direction, a.priority, a.action) for a in by_type["NetpolDefault"]} == {
            ("to-lport", 1001, "allow-related"), ("from-lport", 1001, "allow-related")}
        # OVN's service hairpin source: the masquerade subnet's .5 (ovnk local runs with the
        # UDN-sized 169.254.0.0/17)
        assert {a.match for a in by_type["NetpolDefault"]} == {"ip4.src == 169.254.0.5"}
        # each NetpolNode ACL sits on a node switch holding that node's management port
        node_acls = {str(a.uuid): a for a in by_type.get("NetpolNode", [])}
        switches = [sw for sw in read_rows(remote, "Logical_Switch")
                    if {str(a.uuid) for a in sw.acls} & set(node_acls)]
        assert switches or layer2, controller
        for switch in switches:
            addresses = {address for port in switch.ports for entry in port.addresses
                         for address in entry.split()[1:]}
            for acl in (node_acls[str(a.uuid)] for a in switch.acls
                        if str(a.uuid) in node_acls):
                assert acl.match.startswith("ip4.src==") and acl.priority == 1001
                assert acl.match.removeprefix("ip4.src==") in addresses, (controller, acl.match)


@pytest.mark.parametrize("namespace", ["np", UDN_NAMESPACE, L2_NAMESPACE])
def test_deny_all_then_allow_one_client(cluster: LocalCluster, namespace: str) -> None:
    wait_until(lambda: all(pod_ip(cluster, namespace, p) for p in ("server", "allowed",
                                                                   "other")),
               timeout=90, what="pods with addresses")
    url = f"http://{pod_ip(cluster, namespace, 'server')}:8080/hostname"
    wait_until(lambda: answers(cluster, namespace, "allowed", url) and
               answers(cluster, namespace, "other", url),
               timeout=90, what="the server reachable without policies")

    apply(cluster, policy(namespace, "deny-all", []))
    wait_until(lambda: curl(cluster, namespace, "allowed", url).returncode == TIMED_OUT and
               curl(cluster, namespace, "other", url).returncode == TIMED_OUT,
               timeout=60, what="everything dropped by deny-all")
    # upstream's tier for NetworkPolicy (2), where the NB has tiers (OVN 26.03 does): here
    # on the namespace's default-deny ACLs (deny-all has no rules of its own)
    acls = [acl for acl in read_rows(f"unix:{cluster.nb_socket}", "ACL")
            if dict(acl.external_ids).get("k8s.ovn.org/owner-type") == "NetpolNamespace"]
    assert acls
    if hasattr(acls[0], "tier"):
        assert {acl.tier for acl in acls} == {2}
    # ...but not the kubelet's probes from the node (upstream's NetpolNode ACL): a new
    # selected pod with a readiness probe becomes Ready
    apply(cluster, netexec_pod(namespace, "probed", "ovn-worker", probe=True, app="server"))
    wait_until(lambda: ready(cluster, namespace, "probed"), timeout=90,
               what="a denied pod Ready by its kubelet's HTTP probe")

    apply(cluster, policy(namespace, "allow-client", [{"from": [
        {"podSelector": {"matchLabels": {"role": "client"}}}],
        "ports": [{"port": 8080, "protocol": "TCP"}]}]))
    wait_until(lambda: answers(cluster, namespace, "allowed", url), timeout=60,
               what="the selected client let in")
    assert curl(cluster, namespace, "other", url).returncode == TIMED_OUT

    kubectl(cluster, "delete", "networkpolicy", "-n", namespace, "deny-all", "allow-client")
    wait_until(lambda: answers(cluster, namespace, "other", url), timeout=60,
               what="everything back once the policies are gone")


def test_zone_restart_never_opens_a_denied_path(cluster: LocalCluster) -> None:
    """While the zone controller restarts (its pods' ports re-reconciled, the policies read
    again), a client the policies deny is never let through, and the allowed one is back
    once it runs."""
    wait_until(lambda: all(pod_ip(cluster, "np", p) for p in ("server", "allowed", "other")),
               timeout=90, what="pods with addresses")
    url = f"http://{pod_ip(cluster, 'np', 'server')}:8080/hostname"
    apply(cluster, policy("np", "deny-all", []),
          policy("np", "allow-client", [{"from": [
              {"podSelector": {"matchLabels": {"role": "client"}}}]}]))
    wait_until(lambda: answers(cluster, "np", "allowed", url) and
               curl(cluster, "np", "other", url).returncode == TIMED_OUT,
               timeout=60, what="the policies in force")
    results: list[int] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set():
            results.append(curl(cluster, "np", "other", url).returncode)

    prober = threading.Thread(target=probe, daemon=True)
    prober.start()
    try:
        cluster.restart("controller", timeout=90)
        # the restarted zone reconciles every pod: keep probing while it does
        wait_until(lambda: answers(cluster, "np", "allowed", url), timeout=60,
                   what="the allowed client served after the restart")
        count = len(results)
        wait_until(lambda: len(results) >= count + 3, timeout=60)
    finally:
        done.set()
        prober.join(timeout=30)
    assert results and set(results) == {TIMED_OUT}, results
    kubectl(cluster, "delete", "networkpolicy", "-n", "np", "deny-all", "allow-client")


def test_egress_to_a_named_port_of_selected_pods(cluster: LocalCluster) -> None:
    """Egress from the client only to pods labelled ``app=server`` on their port named
    ``http`` (resolved on the server pod: 8080); everything else it sends is dropped."""
    wait_until(lambda: all(pod_ip(cluster, "np", p) for p in ("server", "allowed", "other")),
               timeout=90, what="pods with addresses")
    server = f"http://{pod_ip(cluster, 'np', 'server')}:8080/hostname"
    other = f"http://{pod_ip(cluster, 'np', 'other')}:8080/hostname"
    wait_until(lambda: answers(cluster, "np", "allowed", server) and
               curl(cluster, "np", "allowed", other).returncode == 0,
               timeout=60, what="the client reaching both without policies")
    apply(cluster, {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": {"name": "egress-named", "namespace": "np"},
                    "spec": {"podSelector": {"matchLabels": {"role": "client"}},
                             "policyTypes": ["Egress"],
                             "egress": [{"to": [{"podSelector": {"matchLabels": {
                                 "app": "server"}}}], "ports": [{"port": "http"}]}]}})
    wait_until(lambda: curl(cluster, "np", "allowed", other).returncode == TIMED_OUT,
               timeout=60, what="egress to a pod the policy does not name dropped")
    assert answers(cluster, "np", "allowed", server)
    kubectl(cluster, "delete", "networkpolicy", "-n", "np", "egress-named")
    wait_until(lambda: curl(cluster, "np", "allowed", other).returncode == 0, timeout=60,
               what="egress back once the policy is gone")


MNP_NAMESPACE = "mnp"


def secondary_ip(cluster: LocalCluster, namespace: str, name: str, nad_key: str) -> str:
    found = json.loads(kubectl(cluster, "get", "pod", "-n", namespace, name, "-o",
                               "json").stdout)
    raw = ((found.get("metadata") or {}).get("annotations") or {}).get(
        "k8s.ovn.org/pod-networks")
    entry = (json.loads(raw) if raw else {}).get(nad_key) or {}
    return str((entry.get("ip_addresses") or [""])[0]).split("/")[0]


def multi_policy(name: str, ingress: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "k8s.cni.cncf.io/v1beta1", "kind": "MultiNetworkPolicy",
            "metadata": {"name": name, "namespace": MNP_NAMESPACE,
                         "annotations": {"k8s.v1.cni.cncf.io/policy-for": "side"}},
            "spec": {"podSelector": {"matchLabels": {"app": "server"}},
                     "policyTypes": ["Ingress"], "ingress": ingress}}


def test_multi_network_policy_on_a_secondary_layer2_network(cluster: LocalCluster) -> None:
    """A MultiNetworkPolicy for a secondary Layer2 network: deny-all drops what reached the
    server's secondary address, an allow lets exactly the selected client back in, and the
    pods' primary network is never affected."""
    apply(cluster,
          {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": MNP_NAMESPACE}},
          {"apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
           "metadata": {"name": "side", "namespace": MNP_NAMESPACE},
           "spec": {"topology": "Layer2", "layer2": {"role": "Secondary",
                                                     "subnets": ["10.131.0.0/24"]}}})
    apply(cluster, netexec_pod(MNP_NAMESPACE, "server", "ovn-worker", networks="side",
                               app="server"),
          netexec_pod(MNP_NAMESPACE, "allowed", "ovn-worker2", networks="side", role="client"),
          netexec_pod(MNP_NAMESPACE, "other", "ovn-worker", networks="side"))
    nad = f"{MNP_NAMESPACE}/side"
    wait_until(lambda: all(secondary_ip(cluster, MNP_NAMESPACE, p, nad) and
                           pod_ip(cluster, MNP_NAMESPACE, p)
                           for p in ("server", "allowed", "other")),
               timeout=90, what="pods with secondary addresses")
    side = f"http://{secondary_ip(cluster, MNP_NAMESPACE, 'server', nad)}:8080/hostname"
    primary = f"http://{pod_ip(cluster, MNP_NAMESPACE, 'server')}:8080/hostname"
    wait_until(lambda: answers(cluster, MNP_NAMESPACE, "allowed", side) and
               answers(cluster, MNP_NAMESPACE, "other", side),
               timeout=90, what="the server reachable on the secondary network")

    apply(cluster, multi_policy("deny-all", []))
    wait_until(lambda: curl(cluster, MNP_NAMESPACE, "allowed", side).returncode == TIMED_OUT
               and curl(cluster, MNP_NAMESPACE, "other", side).returncode == TIMED_OUT,
               timeout=60, what="everything on the secondary network dropped by deny-all")
    assert answers(cluster, MNP_NAMESPACE, "other", primary)  # the primary network is not its

    apply(cluster, multi_policy("allow-client", [{"from": [
        {"podSelector": {"matchLabels": {"role": "client"}}}],
        "ports": [{"port": 8080, "protocol": "TCP"}]}]))
    wait_until(lambda: answers(cluster, MNP_NAMESPACE, "allowed", side), timeout=60,
               what="the selected client let in on the secondary network")
    assert curl(cluster, MNP_NAMESPACE, "other", side).returncode == TIMED_OUT

    kubectl(cluster, "delete", "multi-networkpolicy", "-n", MNP_NAMESPACE, "deny-all",
            "allow-client")
    wait_until(lambda: answers(cluster, MNP_NAMESPACE, "other", side), timeout=60,
               what="everything back once the policies are gone")


# -- MultiNetworkPolicy on secondary Layer3 and Localnet networks (fast TCP probes) ----------

@dataclass(frozen=True)
class Secondary:
    """A secondary network for MultiNetworkPolicy: its namespace, the NAD's name there, the
    object that makes it, and (no IPAM) the addresses its pods set themselves."""

    namespace: str
    nad: str
    network: dict[str, Any]
    static: tuple[str, ...] = ()  # server, allowed, other: set by hand (no IPAM)


def localnet_cudn(name: str, namespace: str, localnet: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "k8s.ovn.org/v1", "kind": "ClusterUserDefinedNetwork",
            "metadata": {"name": name},
            "spec": {"namespaceSelector": {"matchLabels": {
                "kubernetes.io/metadata.name": namespace}},
                "network": {"topology": "Localnet", "localnet": {
                    "role": "Secondary", "physicalNetworkName": "physnet1", **localnet}}}}


SECONDARIES = {
    "layer3": Secondary("mnp-l3", "side3", {
        "apiVersion": "k8s.ovn.org/v1", "kind": "UserDefinedNetwork",
        "metadata": {"name": "side3", "namespace": "mnp-l3"},
        "spec": {"topology": "Layer3", "layer3": {"role": "Secondary", "subnets": [
            {"cidr": "10.132.0.0/16", "hostSubnet": 24}]}}}),
    "localnet": Secondary("mnp-ln", "mnp-vlan30", localnet_cudn(
        "mnp-vlan30", "mnp-ln", {"vlan": {"mode": "Access", "access": {"id": 30}},
                                 "subnets": ["10.100.30.0/24"]})),
    "localnet-without-ipam": Secondary("mnp-raw", "mnp-vlan40", localnet_cudn(
        "mnp-vlan40", "mnp-raw", {"vlan": {"mode": "Access", "access": {"id": 40}},
                                  "ipam": {"mode": "Disabled"}}),
        static=("10.100.40.10", "10.100.40.11", "10.100.40.12")),
}
SECONDARY_PODS = ("server", "allowed", "other")


def reaches(cluster: LocalCluster, namespace: str, source: str, ip: str) -> bool:
    return probe_from(cluster.pod_netns(namespace, source), [Probe(ip, "tcp", 8080)],
                      timeout=2.0)[0]


@pytest.mark.parametrize("kind", sorted(SECONDARIES))
def test_multi_network_policy_on_secondary_layer3_and_localnet(cluster: LocalCluster,
                                                               kind: str) -> None:
    """A MultiNetworkPolicy on a secondary Layer3, a Localnet (VLAN 30, IPAM) and a Localnet
    without IPAM (VLAN 40, the pods set their own addresses; only ipBlock peers there):
    deny-all drops what reached the server on that network, while the server's own
    connections out are still answered (stateful); an allow lets exactly one client back in;
    deleting the policies restores everything."""
    net = SECONDARIES[kind]
    namespace = net.namespace
    apply(cluster, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
          net.network)
    apply(cluster, *(netexec_pod(namespace, name, node, networks=net.nad, **labels)
                     for name, node, labels in (("server", "ovn-worker", {"app": "server"}),
                                                ("allowed", "ovn-worker2", {"role": "client"}),
                                                ("other", "ovn-worker", {}))))
    nad = f"{namespace}/{net.nad}"
    if net.static:
        wait_until(lambda: all(ready(cluster, namespace, p) for p in SECONDARY_PODS),
                   timeout=90, what="pods running")
        for name, ip in zip(SECONDARY_PODS, net.static, strict=True):
            subprocess.run(["ip", "netns", "exec", cluster.pod_netns(namespace, name), "ip",
                            "addr", "add", f"{ip}/24", "dev", "net1"], check=True)
        ips = dict(zip(SECONDARY_PODS, net.static, strict=True))
    else:
        wait_until(lambda: all(secondary_ip(cluster, namespace, p, nad)
                               for p in SECONDARY_PODS),
                   timeout=90, what="pods with secondary addresses")
        ips = {p: secondary_ip(cluster, namespace, p, nad) for p in SECONDARY_PODS}
    wait_until(lambda: reaches(cluster, namespace, "allowed", ips["server"]) and
               reaches(cluster, namespace, "other", ips["server"]),
               timeout=90, what=f"the server reachable on the secondary {kind} network")

    def mnp(name: str, ingress: list[dict[str, Any]]) -> dict[str, Any]:
        return {"apiVersion": "k8s.cni.cncf.io/v1beta1", "kind": "MultiNetworkPolicy",
                "metadata": {"name": name, "namespace": namespace,
                             "annotations": {"k8s.v1.cni.cncf.io/policy-for": net.nad}},
                "spec": {"podSelector": {"matchLabels": {"app": "server"}},
                         "policyTypes": ["Ingress"], "ingress": ingress}}

    apply(cluster, mnp("deny-all", []))
    wait_until(lambda: not reaches(cluster, namespace, "allowed", ips["server"]) and
               not reaches(cluster, namespace, "other", ips["server"]),
               timeout=60, what=f"everything to the server on {kind} dropped by deny-all")
    # the denied server's own connection out is answered: its reply is not a new packet
    assert reaches(cluster, namespace, "server", ips["other"])

    peer = ({"ipBlock": {"cidr": f"{ips['allowed']}/32"}} if net.static else
            {"podSelector": {"matchLabels": {"role": "client"}}})
    apply(cluster, mnp("allow-client", [{"from": [peer],
                                         "ports": [{"port": 8080, "protocol": "TCP"}]}]))
    wait_until(lambda: reaches(cluster, namespace, "allowed", ips["server"]), timeout=60,
               what=f"the allowed client let in on {kind}")
    assert not reaches(cluster, namespace, "other", ips["server"])

    kubectl(cluster, "delete", "multi-networkpolicy", "-n", namespace, "deny-all",
            "allow-client")
    wait_until(lambda: reaches(cluster, namespace, "other", ips["server"]), timeout=60,
               what=f"everything back on {kind} once the policies are gone")
