"""NetworkPolicy's probe matrix with real packets, in the style of Kubernetes' own
NetworkPolicy e2e: three namespaces (labelled ``ns: x|y|z``) by three pods (``pod: a|b|c``,
spread over both nodes), each pod serving TCP and UDP on ports 80 and 81 (named
``serve-80-tcp``...), on the default network, a primary Layer3 and a primary Layer2 UDN
(ClusterUserDefinedNetworks over their own three namespaces) of one ``ovnk local`` cluster.

Each scenario sets the policies (and pod or namespace labels) it is about in all three
networks at once; then every cell (source pod, target pod, TCP/UDP, 80/81: 288 per network)
must come out as Kubernetes' API says (``ovnk_local.testing.netpol_model``) with real
packets (``ovnk_local.testing.port_probes``: one process per client, all cells at once), and
``ovnk reachability``'s ovn-trace verdicts (its endpoints and matrix code, one ovn-trace
daemon) must agree with the real packets in every cell.

Cost: one cluster for all (up with its 27 pods: ~2 min); a scenario is one policy change on
the three networks, one or two rounds of 864 real probes (~1.5 s when the machine is idle,
what a dropped probe waits) and 864 traces (~2.5 ms each): 15-60 s each at load 15-40 on
2 CPUs, 20 min for the module there."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pytest
from ovnk_local.cluster import LocalCluster
from ovnk_local.testing.dataplane import kubectl, pod_netns, primary_ip, require_dataplane
from ovnk_local.testing.netpol_model import Model, ModelPod
from ovnk_local.testing.port_probes import Probe, probe_all

from ovnk_core.cli.reachability_cmd import collect
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.trace_server import TraceServer
from ovnk_core.reachability.matrix import NEW_CONNECTION, build_matrix

pytestmark = [pytest.mark.e2e, pytest.mark.netns]
AGNHOST = "registry.k8s.io/e2e-test-images/agnhost:2.53"
BASES, PODS = ("x", "y", "z"), ("a", "b", "c")
NODES = ("ovn-worker", "ovn-worker2", "ovn-worker")
PORTS = (80, 81)
CELLS = tuple((protocol, port) for protocol in ("tcp", "udp") for port in PORTS)
Cell = tuple[str, str, str, int]  # source, target (ns/name), protocol, port


@dataclass
class Net:
    """One network of the matrix: its namespaces (by base name), subnet and pods."""

    name: str
    prefix: str
    subnet: str
    pods: dict[str, ModelPod] = field(default_factory=dict)  # ns/name -> pod
    raw: dict[str, dict[str, Any]] = field(default_factory=dict)
    policies: set[tuple[str, str]] = field(default_factory=set)  # (namespace, name) applied
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)

    def ns(self, base: str) -> str:
        return f"{self.prefix}{base}"

    def ip(self, base: str, pod: str) -> str:
        return self.pods[f"{self.ns(base)}/{pod}"].ip


NETS = (Net("default", "np-", "10.244.0.0/16"), Net("layer3", "np3-", "10.150.0.0/16"),
        Net("layer2", "np2-", "10.160.0.0/16"))


def apply(cluster: LocalCluster, objects: list[dict[str, Any]]) -> None:
    if objects:
        kubectl(cluster, "apply", "-f", "-", stdin="\n".join(json.dumps(o) for o in objects))


def server_pod(namespace: str, name: str, node: str) -> dict[str, Any]:
    containers = [{"name": f"c{port}", "image": AGNHOST,
                   "args": ["netexec", f"--http-port={port}", f"--udp-port={port}"],
                   "ports": [{"name": f"serve-{port}-tcp", "containerPort": port},
                             {"name": f"serve-{port}-udp", "containerPort": port,
                              "protocol": "UDP"}]} for port in PORTS]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": {"pod": name}},
            "spec": {"nodeName": node, "containers": containers}}


def cudn(net: Net, topology: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"role": "Primary", "subnets": [net.subnet]}
    if topology == "Layer3":
        spec["subnets"] = [{"cidr": net.subnet, "hostSubnet": 24}]
    return {"apiVersion": "k8s.ovn.org/v1", "kind": "ClusterUserDefinedNetwork",
            "metadata": {"name": f"matrix-{net.name}"},
            "spec": {"namespaceSelector": {"matchLabels": {"matrix-net": net.name}},
                     "network": {"topology": topology, topology.lower(): spec}}}


def base_namespace_labels(net: Net, base: str) -> dict[str, str]:
    labels = {"ns": base, "matrix-net": net.name, "kubernetes.io/metadata.name": net.ns(base)}
    if net.name != "default":
        labels["k8s.ovn.org/primary-user-defined-network"] = ""
    return labels


def populate(local: LocalCluster) -> None:
    """The three networks' namespaces and pods, Ready, recorded in ``NETS``."""
    namespaces = [{"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": net.ns(b), "labels": base_namespace_labels(net, b)}}
                  for net in NETS for b in BASES]
    apply(local, [*namespaces, cudn(NETS[1], "Layer3"), cudn(NETS[2], "Layer2")])
    apply(local, [server_pod(net.ns(b), p, node) for net in NETS for b in BASES
                  for p, node in zip(PODS, NODES, strict=True)])
    for net in NETS:
        net.namespace_labels = {net.ns(b): base_namespace_labels(net, b) for b in BASES}
        for b in BASES:
            result = kubectl(local, "wait", "--for=condition=Ready", "pod", "--all", "-n",
                             net.ns(b), "--timeout=120s", check=False)
            assert result.returncode == 0, result.stderr
            for item in json.loads(kubectl(local, "get", "pods", "-n", net.ns(b), "-o",
                                           "json").stdout)["items"]:
                key = f"{net.ns(b)}/{item['metadata']['name']}"
                named = {(port["name"], port.get("protocol", "TCP")): port["containerPort"]
                         for c in item["spec"]["containers"] for port in c["ports"]}
                net.pods[key] = ModelPod(net.ns(b), item["metadata"]["name"],
                                         primary_ip(item), dict(item["metadata"]["labels"]),
                                         named)
                net.raw[key] = item


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    require_dataplane()
    local = LocalCluster(tmp_path_factory.mktemp("netpol-matrix") / ".ovnk")
    local.up(nodes=2, timeout=90, dataplane=True)
    try:
        populate(local)
        yield local
    finally:
        local.down()


# -- the scenarios ---------------------------------------------------------------------------

def np(net: Net, base: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": name, "namespace": net.ns(base)}, "spec": spec}


POD_A = {"matchLabels": {"pod": "a"}}
ALL: dict[str, Any] = {}


def pods(label: str) -> dict[str, Any]:
    return {"podSelector": {"matchLabels": {"pod": label}}}


def nss(*labels: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchExpressions": [
        {"key": "ns", "operator": "In", "values": list(labels)}]}}


def ingress_to_a(net: Net, name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return np(net, "x", name, {"podSelector": POD_A, "policyTypes": ["Ingress"],
                                "ingress": list(rules)})


def egress_from_a(net: Net, name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    return np(net, "x", name, {"podSelector": POD_A, "policyTypes": ["Egress"],
                                "egress": list(rules)})


def tcp(port: int | str, end: int | None = None) -> dict[str, Any]:
    return {"protocol": "TCP", "port": port, **({"endPort": end} if end else {})}


def udp(port: int | str | None = None) -> dict[str, Any]:
    return {"protocol": "UDP", **({"port": port} if port is not None else {})}


@dataclass(frozen=True)
class Scenario:
    name: str
    policies: Callable[[Net], list[dict[str, Any]]]
    pod_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # "x/c" -> labels
    namespace_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # "z" -> ...


SCENARIOS = [
    Scenario("no-policy", lambda n: []),
    Scenario("deny-all-ingress", lambda n: [np(n, "x", "deny", {"podSelector": ALL,
                                                                "policyTypes": ["Ingress"]})]),
    Scenario("deny-all-egress", lambda n: [np(n, "x", "deny", {"podSelector": ALL,
                                                               "policyTypes": ["Egress"]})]),
    Scenario("deny-all-both-directions", lambda n: [np(n, "x", "deny", {
        "podSelector": ALL, "policyTypes": ["Ingress", "Egress"]})]),
    Scenario("deny-all-then-allow-all-ingress", lambda n: [
        np(n, "x", "deny", {"podSelector": ALL, "policyTypes": ["Ingress"]}),
        np(n, "x", "allow-all", {"podSelector": ALL, "ingress": [{}]})]),
    Scenario("ingress-from-same-namespace", lambda n: [ingress_to_a(n, "same-ns", {
        "from": [{"podSelector": {}}]})]),
    Scenario("ingress-from-pod-b", lambda n: [ingress_to_a(n, "from-b", {"from": [pods("b")]})]),
    Scenario("ingress-from-namespace-y", lambda n: [ingress_to_a(n, "from-y", {"from": [{
        "namespaceSelector": {"matchLabels": {"ns": "y"}}}]})]),
    Scenario("ingress-from-namespace-and-pod", lambda n: [ingress_to_a(n, "and", {"from": [{
        **nss("y", "z"), **pods("b")}]})]),
    Scenario("ingress-from-namespace-or-pod", lambda n: [ingress_to_a(n, "or", {"from": [
        nss("y"), pods("c")]})]),
    Scenario("ingress-from-every-namespace", lambda n: [ingress_to_a(n, "all-ns", {"from": [
        {"namespaceSelector": {}}]})]),
    Scenario("ingress-match-expressions", lambda n: [ingress_to_a(n, "expr", {"from": [{
        "namespaceSelector": {"matchExpressions": [{"key": "ns", "operator": "NotIn",
                                                    "values": ["y"]}]},
        "podSelector": {"matchExpressions": [{"key": "pod", "operator": "Exists"},
                                             {"key": "pod", "operator": "NotIn",
                                              "values": ["c"]}]}}]})]),
    Scenario("ingress-tcp-80-only", lambda n: [ingress_to_a(n, "tcp80", {"ports": [tcp(80)]})]),
    Scenario("ingress-udp-81-only", lambda n: [ingress_to_a(n, "udp81", {"ports": [udp(81)]})]),
    Scenario("ingress-named-tcp-port", lambda n: [ingress_to_a(n, "named", {
        "from": [nss("y", "z")], "ports": [{"port": "serve-81-tcp"}]})]),
    Scenario("ingress-named-udp-port", lambda n: [ingress_to_a(n, "named-udp", {
        "ports": [udp("serve-80-udp")]})]),
    Scenario("ingress-end-port-range", lambda n: [ingress_to_a(n, "range", {
        "ports": [tcp(79, 80), udp(81)]})]),
    Scenario("ingress-whole-protocol", lambda n: [ingress_to_a(n, "all-udp", {
        "from": [pods("b")], "ports": [udp()]})]),
    Scenario("ingress-ip-block-except", lambda n: [ingress_to_a(n, "cidr", {"from": [
        {"ipBlock": {"cidr": n.subnet, "except": [f"{n.ip('y', 'b')}/32"]}}]})]),
    Scenario("egress-to-pod-b-tcp-80", lambda n: [egress_from_a(n, "to-b", {
        "to": [pods("b")], "ports": [tcp(80)]})]),
    Scenario("egress-namespace-to-namespace-y", lambda n: [np(n, "x", "to-y", {
        "podSelector": ALL, "policyTypes": ["Egress"], "egress": [{"to": [nss("y")]}]})]),
    Scenario("egress-ip-block-except", lambda n: [egress_from_a(n, "to-cidr", {"to": [
        {"ipBlock": {"cidr": n.subnet, "except": [f"{n.ip('z', 'c')}/32"]}}],
        "ports": [tcp(81), udp(80)]})]),
    Scenario("egress-named-port-on-the-peer", lambda n: [egress_from_a(n, "to-named", {
        "to": [nss("z")], "ports": [udp("serve-81-udp")]})]),
    Scenario("ingress-and-egress-in-one-policy", lambda n: [np(n, "x", "both", {
        "podSelector": POD_A, "policyTypes": ["Ingress", "Egress"],
        "ingress": [{"from": [pods("b")]}], "egress": [{"to": [nss("z")]}]})]),
    Scenario("implicit-policy-types-with-egress", lambda n: [np(n, "x", "implicit", {
        "podSelector": POD_A, "egress": [{"to": [pods("c")]}]})]),
    Scenario("two-policies-add-up", lambda n: [
        ingress_to_a(n, "from-b", {"from": [pods("b")]}),
        ingress_to_a(n, "from-z", {"from": [nss("z")], "ports": [tcp(80)]})]),
    Scenario("a-policy-in-every-namespace", lambda n: [
        np(n, b, "same-ns-only", {"podSelector": ALL, "ingress": [{"from": [{"podSelector":
                                                                              {}}]}]})
        for b in BASES]),
    Scenario("pod-relabelled-into-the-peers", lambda n: [ingress_to_a(n, "from-b", {
        "from": [pods("b")]})], pod_labels={"x/c": {"pod": "b"}}),
    Scenario("pod-relabelled-into-the-selected", lambda n: [np(n, "x", "deny-a", {
        "podSelector": POD_A, "policyTypes": ["Ingress"]})], pod_labels={"x/b": {"pod": "a"}}),
    Scenario("namespace-relabelled-into-the-peers", lambda n: [ingress_to_a(n, "from-y", {
        "from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}}]})],
        namespace_labels={"z": {"ns": "y"}}),
    Scenario("back-to-no-policy", lambda n: []),
]


# -- setting a scenario, probing, tracing ----------------------------------------------------

def set_labels(cluster: LocalCluster, net: Net, scenario: Scenario) -> None:
    for key, pod in list(net.pods.items()):
        base = key.split("/")[0].removeprefix(net.prefix)
        wanted = scenario.pod_labels.get(f"{base}/{pod.name}", {"pod": pod.name})
        if dict(pod.labels) != wanted:
            kubectl(cluster, "label", "pod", "-n", pod.namespace, pod.name, "--overwrite",
                    *(f"{k}={v}" for k, v in wanted.items()))
            net.pods[key] = ModelPod(pod.namespace, pod.name, pod.ip, wanted, pod.named_ports)
    for base in BASES:
        wanted = {**base_namespace_labels(net, base), **scenario.namespace_labels.get(base, {})}
        if net.namespace_labels[net.ns(base)] != wanted:
            kubectl(cluster, "label", "namespace", net.ns(base), "--overwrite",
                    *(f"{k}={v}" for k, v in wanted.items()))
            net.namespace_labels[net.ns(base)] = wanted


def set_scenario(cluster: LocalCluster, net: Net, scenario: Scenario) -> Model:
    policies = scenario.policies(net)
    wanted = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in policies}
    for namespace, name in sorted(net.policies - wanted):
        kubectl(cluster, "delete", "networkpolicy", "-n", namespace, name)
    set_labels(cluster, net, scenario)
    apply(cluster, policies)
    net.policies = wanted
    return Model(policies, net.namespace_labels)


def expected(net: Net, model: Model) -> dict[Cell, bool]:
    return {(s.key, t.key, protocol, port): model.allows(s, t, protocol, port)
            for s in net.pods.values() for t in net.pods.values() if s.key != t.key
            for protocol, port in CELLS}


def real(cluster: LocalCluster, nets: tuple[Net, ...]) -> dict[Cell, bool]:
    plan: dict[str, list[Probe]] = {}
    cells: dict[str, list[Cell]] = {}
    for net in nets:
        for source in net.pods.values():
            netns = pod_netns(cluster, net.raw[source.key])
            for target in net.pods.values():
                if target.key != source.key:
                    for protocol, port in CELLS:
                        plan.setdefault(netns, []).append(Probe(target.ip, protocol, port))
                        cells.setdefault(netns, []).append((source.key, target.key, protocol,
                                                            port))
    results = probe_all(plan, timeout=1.5)
    return {cell: ok for netns, oks in results.items()
            for cell, ok in zip(cells[netns], oks, strict=True)}


def traced(cluster: LocalCluster, nets: tuple[Net, ...]) -> dict[Cell, bool]:
    """``ovnk reachability``'s verdicts: its endpoints (from NB), its matrix (ovn-trace, one
    daemon for the 4 matrices of each network, as each ``ovnk reachability`` starts one)."""
    raw = [item for net in nets for item in net.raw.values()]
    with NbClient([f"unix:{cluster.nb_socket}"]).start() as nb:
        endpoints, skipped = collect(nb, raw)
    assert not skipped, skipped
    by_network: dict[str, list[Any]] = {}
    for endpoint in endpoints:
        by_network.setdefault(endpoint.network, []).append(endpoint)

    def one(server: TraceServer, group: list[Any], protocol: str, port: int
            ) -> dict[Cell, bool]:
        matrix = build_matrix(f"unix:{cluster.sb_socket}", group, protocol, port, workers=2,
                              server=server)
        assert not matrix.errors, matrix.errors
        return {(s, d, protocol, port): ok for (s, d), ok in matrix.verdicts.items()}

    jobs = [(group, protocol, port) for group in by_network.values() for protocol, port in CELLS]
    verdicts: dict[Cell, bool] = {}
    with TraceServer(f"unix:{cluster.sb_socket}", ct=NEW_CONNECTION) as server, \
            ThreadPoolExecutor(4) as pool:
        for part in pool.map(lambda job: one(server, *job), jobs):
            verdicts.update(part)
    return verdicts


def settles(predicate: Callable[[], bool], timeout: float) -> bool:
    """Whether ``predicate`` holds within ``timeout`` seconds (asked again as soon as it
    answered: each call probes or traces for a while)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return False
    return True


def differences(left: dict[Cell, bool], right: dict[Cell, bool]) -> list[str]:
    return [f"{s} -> {t} {protocol}/{port}: {left.get(c)} vs {right.get(c)}"
            for c in sorted(set(left) | set(right)) if left.get(c) != right.get(c)
            for s, t, protocol, port in [c]]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_matrix(cluster: LocalCluster, scenario: Scenario) -> None:
    """The scenario on the three networks: real packets as the API says, and ovn-trace (as
    ``ovnk reachability`` asks it) as the real packets in every cell."""
    with ThreadPoolExecutor(len(NETS)) as pool:
        models = list(pool.map(lambda n: set_scenario(cluster, n, scenario), NETS))
    want: dict[Cell, bool] = {}
    for net, model in zip(NETS, models, strict=True):
        want.update(expected(net, model))
    seen: dict[str, dict[Cell, bool]] = {}

    def converged() -> bool:
        seen["real"] = real(cluster, NETS)
        return seen["real"] == want

    if not settles(converged, timeout=60):
        raise AssertionError("real packets (left) against the API's verdicts (right):\n"
                             + "\n".join(differences(seen["real"], want)))

    def agrees() -> bool:
        seen["trace"] = traced(cluster, NETS)
        return seen["trace"] == seen["real"]

    if not settles(agrees, timeout=20):
        raise AssertionError("ovn-trace (left) against the real packets (right):\n"
                             + "\n".join(differences(seen["trace"], seen["real"])))
