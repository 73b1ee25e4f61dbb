"""The NetworkPolicy controller against a real Northbound and a real API server: rows
appear as the objects say, a restart with nothing changed writes nothing, a deleted
policy leaves no row, and a policy that cannot be rendered gets a Warning event without
holding up the others."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for
from ovnk_networkpolicy.controller import NETWORK_POLICIES, PolicyController
from ovnk_networkpolicy.policy_kinds import NetworkPolicyKind
from ovnk_networkpolicy.rows import NetworkScope

from ovnk_core.annotations.pod_networks import PodNetwork, serialize
from ovnk_core.contexts import ZoneContext
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import EVENTS, NAMESPACES, NODES, PODS
from ovnk_core.ovn.declarative import ApplyResult, DesiredRow, Ref, apply
from ovnk_core.ovn.hashed_names import hash_for_ovn
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.processes import OvsdbServer
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import NodeSwitch
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.ovsdb_fixtures import read_rows
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.ovsdb

CTRL = "default-network-controller"
SCOPE = NetworkScope("default")
HAIRPIN = ["169.254.169.5"]


@dataclass
class CountingWriter:
    """The zone's writer, counting the transactions that changed something."""

    writer: NbWriter
    changes: list[ApplyResult] = field(default_factory=list)

    @property
    def schema(self) -> Any:
        return self.writer.schema

    def apply_many(self, desired: Mapping[Owner, Sequence[DesiredRow]]) -> ApplyResult:
        result = self.writer.apply_many(desired)
        if result.changed:
            self.changes.append(result)
        return result


@dataclass
class Zone:
    server: ServerHandle
    client: KubeClient
    remote: str
    running: list[tuple[PolicyController, InformerFactory, NbWriter]] = field(
        default_factory=list)

    switches: list[NodeSwitch] = field(default_factory=list)
    # namespace -> its network (default: the default network)
    networks: dict[str, NetworkScope | None] = field(default_factory=dict)  # None: unrendered
    gone: set[str] = field(default_factory=set)  # networks gone for good (not just unrendered)

    def start(self) -> tuple[PolicyController, CountingWriter]:
        writer = NbWriter([self.remote], timeout=30).start()
        counting = CountingWriter(writer)
        informers = InformerFactory(self.client)
        context = ZoneContext(udn_config(), self.client, informers,
                              EventRecorder(self.client, "ovnkube-controller", "test"),
                              counting, lambda _name: None, writer.owners_with_key_prefix,
                              node_switches=lambda _network: list(self.switches))
        controller = PolicyController(context, NetworkPolicyKind(
            lambda ns: self.networks.get(ns, SCOPE),
            lambda: [SCOPE, *{s.network: s for s in self.networks.values() if s}.values()],
            gone=lambda network: network in self.gone), HAIRPIN)
        informers.start()
        controller.controller.start()
        self.running.append((controller, informers, writer))
        return controller, counting

    def stop(self) -> None:
        while self.running:
            controller, informers, writer = self.running.pop()
            controller.controller.stop()
            informers.stop()
            writer.stop()


@pytest.fixture
def zone(kube_apiserver: ServerHandle, nb_server: OvsdbServer, ovn_nb: NbClient
         ) -> Iterator[Zone]:
    env = Zone(kube_apiserver, KubeClient(client_for(kube_apiserver)), nb_server.remote)
    yield env
    env.stop()


def namespace(client: KubeClient, name: str, **labels: str) -> None:
    client.create(NAMESPACES, {"metadata": {"name": name, "labels": labels}})


def pod(client: KubeClient, ns: str, name: str, ip: str, **labels: str) -> None:
    network = PodNetwork(ip_addresses=(f"{ip}/24",), mac_address="0a:58:0a:f4:00:05",
                         role="primary")
    client.create(PODS, {
        "metadata": {"namespace": ns, "name": name, "labels": labels,
                     "annotations": {"k8s.ovn.org/pod-networks": serialize({"default": network})}},
        "spec": {"nodeName": "node1", "containers": [
            {"name": "c", "image": "i", "ports": [{"name": "http", "containerPort": 8080}]}]}},
        namespace=ns)


def netpol(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"namespace": ns, "name": name},
            "spec": {"podSelector": {}, **spec}}


def owned(remote: str, table: str, **ids_: str) -> dict[str, Any]:
    """Rows of ``table`` by ``k8s.ovn.org/id`` whose external_ids hold ``ids_``."""
    found = {}
    for row in read_rows(remote, table):
        ext = dict(row.external_ids)
        if all(ext.get(k) == v for k, v in ids_.items()) and "k8s.ovn.org/id" in ext:
            found[ext["k8s.ovn.org/id"]] = row
    return found


def ids_of(remote: str, table: str, **ids_: str) -> set[str]:
    return set(owned(remote, table, **ids_))


def test_rows_follow_objects_and_restart_writes_nothing(zone: Zone) -> None:
    client = zone.client
    namespace(client, "ns1", team="a")
    pod(client, "ns1", "web", "10.244.0.5", app="web")
    pod(client, "ns1", "db", "10.244.0.6", app="db")
    client.create(NETWORK_POLICIES, netpol(
        "ns1", "allow-web", podSelector={"matchLabels": {"app": "db"}},
        ingress=[{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                  "ports": [{"port": 5432}]}]), namespace="ns1")
    zone.start()
    remote = zone.remote
    policy_pg = f"{CTRL}:NetworkPolicy:ns1:allow-web"
    acl = f"{policy_pg}:Ingress:0:tcp:-1"
    peer = f"{CTRL}:PodSelector:ns1_LS{{ML:{{app: web,}},}}:v4"
    wait_until(lambda: acl in ids_of(remote, "ACL") and
               f"{CTRL}:NetpolNamespace:ns1:Ingress" in ids_of(remote, "Port_Group"),
               timeout=30)
    assert ids_of(remote, "Port_Group") == {
        policy_pg, f"{CTRL}:NetpolNamespace:ns1:Ingress", f"{CTRL}:NetpolNamespace:ns1:Egress",
        f"{CTRL}:Cluster:clusterPortGroup", f"{CTRL}:Cluster:clusterRtrPortGroup"}
    row = owned(remote, "ACL")[acl]
    assert row.match == (f"ip4.src == {{${hash_for_ovn(peer)}}} && tcp && tcp.dst==5432 && "
                         f"outport == @{hash_for_ovn(policy_pg)}")
    assert (row.priority, row.action, row.direction) == (1001, "allow-related", "to-lport")
    groups = owned(remote, "Port_Group")
    assert {a.external_ids["k8s.ovn.org/id"] for a in groups[policy_pg].acls} == {acl}
    assert list(owned(remote, "Address_Set")[peer].addresses) == ["10.244.0.5"]

    # a new peer pod joins the address set (level-driven: the pod event enqueues the set)
    pod(client, "ns1", "web2", "10.244.0.7", app="web")
    wait_until(lambda: sorted(owned(remote, "Address_Set")[peer].addresses) ==
               ["10.244.0.5", "10.244.0.7"], timeout=30)

    # restart: a new writer and controller on the same NB and API objects write nothing
    zone.stop()
    before = {t: {k: str(r.uuid) for k, r in owned(remote, t).items()}
              for t in ("ACL", "Port_Group", "Address_Set")}
    controller, counting = zone.start()
    wait_until(lambda: controller.controller.stats.reconciles >= 4
               and controller.controller.queue.idle(), timeout=30)
    assert counting.changes == []
    assert before == {t: {k: str(r.uuid) for k, r in owned(remote, t).items()}
                      for t in ("ACL", "Port_Group", "Address_Set")}

    # deleting the policy leaves none of its rows, nor the namespace's default deny, nor
    # the now unused address set
    assert client.delete_if_exists(NETWORK_POLICIES, "allow-web", namespace="ns1")
    wait_until(lambda: not ids_of(remote, "Address_Set") and
               ids_of(remote, "Port_Group") == {f"{CTRL}:Cluster:clusterPortGroup",
                                                f"{CTRL}:Cluster:clusterRtrPortGroup"},
               timeout=30)
    assert ids_of(remote, "ACL") == {f"{CTRL}:NetpolDefault:allow-hairpinning:Ingress",
                                     f"{CTRL}:NetpolDefault:allow-hairpinning:Egress"}


def test_unrenderable_policy_gets_a_warning_and_blocks_nothing(zone: Zone) -> None:
    client = zone.client
    namespace(client, "ns1")
    # stored as another API server (without today's checks) would have accepted it
    bad = netpol("ns1", "bad-cidr", ingress=[{"from": [{"ipBlock": {"cidr": "10.0.0.0/33"}}]}])
    bad["metadata"].update(uid="u-bad", creationTimestamp="2026-01-01T00:00:00Z")
    zone.server.store.put("networking.k8s.io/networkpolicies", bad)
    client.create(NETWORK_POLICIES, netpol("ns1", "good", ingress=[{}]), namespace="ns1")
    zone.start()
    remote = zone.remote
    wait_until(lambda: f"{CTRL}:NetworkPolicy:ns1:good:Ingress:0:None:-1"
               in ids_of(remote, "ACL"), timeout=30)
    assert not {i for i in ids_of(remote, "Port_Group") if "bad-cidr" in i}

    def warning() -> list[Any]:
        return [e for e in client.list(EVENTS, namespace="ns1")["items"]
                if e["involvedObject"]["name"] == "bad-cidr"]
    wait_until(warning, timeout=30)
    [event] = warning()
    assert (event["type"], event["reason"]) == ("Warning", "ErrorAddingResource")
    assert event["message"] == (
        "failed to create network policy ns1/bad-cidr: spec.ingress[0].from[0].ipBlock.cidr: "
        "Invalid value: '10.0.0.0/33': must be a valid CIDR value, (e.g. 10.9.8.0/24 or "
        "2001:db8::/64)")
    # fixing it renders it
    fixed = client.get(NETWORK_POLICIES, "bad-cidr", namespace="ns1")
    fixed["spec"]["ingress"][0]["from"][0]["ipBlock"]["cidr"] = "10.0.0.0/8"
    client.update(NETWORK_POLICIES, fixed)
    wait_until(lambda: f"{CTRL}:NetworkPolicy:ns1:bad-cidr:Ingress:0:None:-2"
               in ids_of(remote, "ACL"), timeout=30)


def test_namespace_relabel_and_acl_logging_reach_their_rows(zone: Zone) -> None:
    client = zone.client
    namespace(client, "ns1")
    namespace(client, "ns2")
    pod(client, "ns2", "client", "10.244.1.5")
    client.create(NETWORK_POLICIES, netpol("ns1", "from-team-a", ingress=[
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]), namespace="ns1")
    zone.start()
    remote = zone.remote
    peer = f"{CTRL}:PodSelector:LS{{ML:{{team: a,}},}}_LS{{}}_LNM:v4"
    deny = f"{CTRL}:NetpolNamespace:ns1:Ingress:defaultDeny"
    wait_until(lambda: peer in ids_of(remote, "Address_Set") and deny in ids_of(remote, "ACL"),
               timeout=30)
    assert list(owned(remote, "Address_Set")[peer].addresses) == []
    assert (list(owned(remote, "ACL")[deny].severity), owned(remote, "ACL")[deny].log) == \
        ([], False)

    ns2 = client.get(NAMESPACES, "ns2")
    ns2["metadata"]["labels"] = {"team": "a"}
    client.update(NAMESPACES, ns2)
    wait_until(lambda: list(owned(remote, "Address_Set")[peer].addresses) == ["10.244.1.5"],
               timeout=30)

    ns1 = client.get(NAMESPACES, "ns1")
    ns1["metadata"]["annotations"] = {"k8s.ovn.org/acl-logging":
                                      '{"deny": "alert", "allow": "notice"}'}
    client.update(NAMESPACES, ns1)
    allow = f"{CTRL}:NetworkPolicy:ns1:from-team-a:Ingress:0:None:-1"
    wait_until(lambda: list(owned(remote, "ACL")[deny].severity) == ["alert"] and
               list(owned(remote, "ACL")[allow].severity) == ["notice"], timeout=30)
    assert owned(remote, "ACL")[deny].log and owned(remote, "ACL")[allow].log


def test_node_acls_follow_the_zone_switches(zone: Zone) -> None:
    """``NetpolNode``: an ACL per management address on each node switch, gone with it."""
    topology = Owner("default-network-controller", "node:node1")
    switch = topology.object_ids("LogicalSwitch", "node1")
    writer = NbWriter([zone.remote], timeout=30).start()
    try:
        apply(writer, topology, [DesiredRow("Logical_Switch", switch, {"name": "node1"})])
    finally:
        writer.stop()
    zone.switches = [NodeSwitch("node1", "node1", Ref.to("Logical_Switch", switch),
                                ("10.244.0.2",))]
    zone.start()
    acl = f"{CTRL}:NetpolNode:node1:10.244.0.2"
    wait_until(lambda: acl in ids_of(zone.remote, "ACL"), timeout=30)
    row = owned(zone.remote, "ACL")[acl]
    assert (row.match, row.priority, row.action, row.direction) == (
        "ip4.src==10.244.0.2", 1001, "allow-related", "to-lport")
    [sw] = [r for r in read_rows(zone.remote, "Logical_Switch") if r.name == "node1"]
    assert [a.external_ids["k8s.ovn.org/id"] for a in sw.acls] == [acl]

    zone.switches = []  # the node left the zone: a node event converges the ACLs
    zone.client.create(NODES, {"metadata": {"name": "node2"}})
    wait_until(lambda: acl not in ids_of(zone.remote, "ACL"), timeout=30)


def test_policies_move_when_their_namespace_gets_its_primary_udn(zone: Zone) -> None:
    """A namespace's primary UDN rendered after its policies: told the network changed, the
    controller moves them (and the namespace's default deny) to the UDN's controller."""
    namespace(zone.client, "tenant")
    zone.client.create(NETWORK_POLICIES, netpol("tenant", "deny"), namespace="tenant")
    controller, _ = zone.start()
    remote = zone.remote
    wait_until(lambda: f"{CTRL}:NetworkPolicy:tenant:deny" in ids_of(remote, "Port_Group"),
               timeout=30)
    zone.networks["tenant"] = NetworkScope("tenant_blue")
    controller.network_changed("tenant_blue")
    udn = "tenant_blue-network-controller"
    wait_until(lambda: {f"{udn}:NetworkPolicy:tenant:deny", f"{udn}:NetpolNamespace:tenant:Ingress"}
               <= ids_of(remote, "Port_Group"), timeout=30)
    wait_until(lambda: not {i for i in ids_of(remote, "Port_Group") if ":tenant" in i
                            and i.startswith(CTRL)}, timeout=30)


def test_rows_of_an_unrendered_network_wait_and_go_only_with_it(zone: Zone) -> None:
    """At a restart the zone renders its networks after this controller starts: a network
    not rendered yet keeps its rows (and its namespaces' policies wait); a network gone for
    good loses them."""
    blue = NetworkScope("tenant_blue")
    udn = "tenant_blue-network-controller"
    zone.networks["tenant"] = blue
    namespace(zone.client, "tenant")
    zone.client.create(NETWORK_POLICIES, netpol("tenant", "deny"), namespace="tenant")
    zone.start()
    remote = zone.remote
    rows = {f"{udn}:Cluster:clusterPortGroup", f"{udn}:NetworkPolicy:tenant:deny",
            f"{udn}:NetpolNamespace:tenant:Ingress"}
    wait_until(lambda: rows <= ids_of(remote, "Port_Group"), timeout=30)
    zone.stop()

    zone.networks["tenant"] = None  # restarted, the UDN not rendered again yet
    controller, counting = zone.start()
    wait_until(lambda: controller.controller.stats.reconciles >= 4, timeout=30)
    wait_until(lambda: controller.controller.stats.not_ready >= 1, timeout=30)
    assert rows <= ids_of(remote, "Port_Group") and counting.changes == []

    zone.gone.add("tenant_blue")
    controller.network_changed("tenant_blue")
    wait_until(lambda: not {i for i in ids_of(remote, "Port_Group") if i.startswith(udn)},
               timeout=30)
    assert not {i for i in ids_of(remote, "ACL") if i.startswith(udn)}


def test_an_event_enqueues_only_the_keys_it_can_affect(zone: Zone) -> None:
    """With policies in many namespaces (named ports, namespace selectors), a pod event
    enqueues only the sets and policies whose selectors select the pod, and a namespace
    relabel only those whose verdict on it changed: per-event work does not grow with the
    cluster."""
    client = zone.client
    for i in range(20):
        namespace(client, f"ns{i}", **({"team": "a"} if i % 5 == 0 else {}))
        client.create(NETWORK_POLICIES, netpol(f"ns{i}", "from-web", ingress=[
            {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
             "ports": [{"port": "http"}]}]), namespace=f"ns{i}")
    client.create(NETWORK_POLICIES, netpol("ns1", "from-team-a", ingress=[
        {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]}]), namespace="ns1")
    namespace(client, "quiet")  # no policy, selected by none
    controller, _ = zone.start()
    remote = zone.remote
    team_a = f"{CTRL}:PodSelector:LS{{ML:{{team: a,}},}}_LS{{}}_LNM:v4"
    wait_until(lambda: team_a in ids_of(remote, "Address_Set") and
               controller.controller.queue.idle(), timeout=60)
    queued: list[str] = []
    add = controller.controller.queue.add

    def recording(key: str, *args: Any, **kwargs: Any) -> Any:
        queued.append(key)
        return add(key, *args, **kwargs)
    controller.controller.queue.add = recording  # type: ignore[method-assign]

    pod(client, "quiet", "quiet", "10.244.0.30", app="web")  # selected by nothing
    pod(client, "ns3", "web", "10.244.0.31", app="web")  # a peer of ns3's policy
    web3 = "addrset:default:ns3_LS{ML:{app: web,},}"
    # ns3's policy resolves its named port on its own pods (all of ns3's); its reconcile,
    # after the pod events (delivered in order), queues its namespace's default deny
    wait_until(lambda: "namespace:ns3" in queued, timeout=30)
    wait_until(controller.controller.queue.idle, timeout=30)
    # (and the policy's reconcile its namespace's default deny)
    assert set(queued) == {web3, "policy:ns3/from-web", "namespace:ns3"}, queued

    assert ids_of(remote, "Port_Group") >= {f"{CTRL}:NetworkPolicy:ns3:from-web"}
    queued.clear()
    ns7 = client.get(NAMESPACES, "ns7")
    ns7["metadata"]["labels"] = {"team": "a"}
    client.update(NAMESPACES, ns7)
    wait_until(lambda: queued, timeout=30)
    wait_until(controller.controller.queue.idle, timeout=30)
    assert set(queued) == {"addrset:default:LS{ML:{team: a,},}_LS{}_LNM", "namespace:ns7"}, \
        queued


def test_a_bad_acl_logging_annotation_gets_a_warning_and_keeps_what_it_can(zone: Zone) -> None:
    """A severity that is not one gets a Warning on the namespace, in upstream's words;
    the valid one stays in force, and the namespace's policies are rendered."""
    client = zone.client
    client.create(NAMESPACES, {"metadata": {"name": "ns1", "annotations": {
        "k8s.ovn.org/acl-logging": '{"deny": "loud", "allow": "notice"}'}}})
    client.create(NETWORK_POLICIES, netpol("ns1", "allow-all", ingress=[{}]), namespace="ns1")
    zone.start()
    remote = zone.remote
    allow = f"{CTRL}:NetworkPolicy:ns1:allow-all:Ingress:0:None:-1"
    deny = f"{CTRL}:NetpolNamespace:ns1:Ingress:defaultDeny"
    wait_until(lambda: {allow, deny} <= ids_of(remote, "ACL"), timeout=30)
    wait_until(lambda: list(owned(remote, "ACL")[allow].severity) == ["notice"], timeout=30)
    assert (list(owned(remote, "ACL")[deny].severity), owned(remote, "ACL")[deny].log) == \
        ([], False)

    def warnings() -> list[Any]:  # a cluster-scoped object's events are in "default"
        return [e for e in client.list(EVENTS, namespace="default")["items"]
                if e["involvedObject"]["name"] == "ns1"]
    wait_until(warnings, timeout=30)
    event = warnings()[0]
    assert (event["type"], event["reason"]) == ("Warning", "InvalidACLLogging")
    assert event["message"] == (
        "Namespace ns1: ACL logging contained malformed annotation, ACL logging is set to "
        "deny= allow=notice, err: 'disabling deny logging due to invalid deny annotation. "
        "\"loud\" is not a valid log severity'")
