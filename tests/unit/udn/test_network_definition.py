"""One network, one definition: a NAD in another namespace claiming an existing network's name
with other subnets is refused by the cluster manager, and the zone controller and the node
agent take the network from the NADs the cluster manager accepted, never from that NAD —
whichever NAD they see first, whatever its name sorts as, even with forged annotations.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import with_crds
from ovnk_local.testing.control_plane import RunningNadController as Running

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES
from ovnk_core.networks.definition import accepted_id, decide
from ovnk_core.networks.registry import NetworkEntry, NetworkRegistry
from ovnk_core.node.networks import primary_networks
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.networks import READY, WAITING, lookup_network

CONFIG = udn_config()
NETWORK = "blue_blue-network"
VICTIM = ("blue", "blue-network")
ID, NAME, KEYS = "k8s.ovn.org/network-id", "k8s.ovn.org/network-name", "k8s.ovn.org/tunnel-keys"


def nad(namespace: str, name: str, subnets: str = "10.100.0.0/16/24",
        annotations: dict[str, str] | None = None, created: str | None = None) -> dict[str, Any]:
    config = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay", "name": NETWORK,
              "netAttachDefName": f"{namespace}/{name}", "topology": "layer3",
              "role": "primary", "subnets": subnets}
    meta: dict[str, Any] = {"name": name, "namespace": namespace,
                            "annotations": annotations or {}}
    if created:
        meta["creationTimestamp"] = created
    return {"metadata": meta, "spec": {"config": json.dumps(config)}}


ACCEPTED = {ID: "3", NAME: NETWORK, KEYS: "[]"}
victim = nad(*VICTIM, annotations=ACCEPTED, created="2026-01-01T10:00:00Z")
# another namespace, sorting before the victim, other subnets, created later
attacker = nad("aaa", "claim", subnets="10.200.0.0/16/24", created="2026-01-01T11:00:00Z")
forger = nad("aaa", "claim", subnets="10.200.0.0/16/24", annotations=ACCEPTED,
             created="2026-01-01T11:00:00Z")


def same(a: str, b: str) -> bool:
    return a == b


def subnets_of(nad_obj: dict[str, Any]) -> str:
    return str(json.loads(nad_obj["spec"]["config"])["subnets"])


# -- the rule ---------------------------------------------------------------------------------
def test_the_cluster_manager_keeps_the_accepted_nad_and_refuses_the_claim() -> None:
    for others in ([attacker], [forger]):
        decision = decide(NETWORK, [(n, subnets_of(n)) for n in (*others, victim)], same)
        assert decision.definition == "10.100.0.0/16/24" and decision.network_id == 3
        assert decision.accepted == ("blue/blue-network",)
        assert decision.conflicting == ("aaa/claim",)
    # what it holds stays while a NAD carries it, even against an older annotated NAD
    older_forger = nad("aaa", "claim", subnets="10.200.0.0/16/24", annotations=ACCEPTED,
                       created="2025-01-01T00:00:00Z")
    held = decide(NETWORK, [(n, subnets_of(n)) for n in (older_forger, victim)], same,
                  holding="10.100.0.0/16/24")
    assert held.accepted == ("blue/blue-network",) and held.conflicting == ("aaa/claim",)
    # with nothing accepted yet, the oldest NAD defines the network, not the first by name
    fresh = decide(NETWORK, [(n, subnets_of(n)) for n in
                             (attacker, nad(*VICTIM, created="2026-01-01T10:00:00Z"))], same)
    assert fresh.accepted == ("blue/blue-network",)


def test_readers_consider_only_accepted_nads_and_their_id() -> None:
    zone = decide(NETWORK, [(n, subnets_of(n)) for n in (attacker, victim)], same,
                  accepted_only=True)
    assert zone.accepted == ("blue/blue-network",) and zone.conflicting == ()
    forged = decide(NETWORK, [(n, subnets_of(n)) for n in (forger, victim)], same,
                    accepted_only=True)
    assert forged.definition == "10.100.0.0/16/24" and forged.accepted == ("blue/blue-network",)
    other_id = nad("green", "blue-network", annotations={ID: "9", NAME: NETWORK})
    mixed = decide(NETWORK, [(n, subnets_of(n)) for n in (victim, other_id)], same,
                   accepted_only=True)
    assert mixed.accepted == ("blue/blue-network",)  # same config, another network's ID
    assert accepted_id(nad(*VICTIM, annotations={ID: "3", NAME: "other"}), NETWORK) is None
    assert decide(NETWORK, [(attacker, subnets_of(attacker))], same,
                  accepted_only=True).definition is None


def test_the_zone_renders_the_network_from_the_accepted_nad_only() -> None:
    host = PluginHost.load(CONFIG)
    for claim in (attacker, forger):
        lookup = lookup_network(NETWORK, [claim, victim], CONFIG, host)
        assert lookup.status == READY and lookup.state is not None
        assert lookup.nads == ("blue/blue-network",)
        assert [str(s.cidr) for s in lookup.state.netinfo.subnets] == ["10.100.0.0/16"]
        assert lookup.state.network_id == 3
    alone = lookup_network(NETWORK, [attacker], CONFIG, host)
    assert alone.status == WAITING and "not accepted" in alone.reason


def test_the_node_agent_serves_the_accepted_definition_only() -> None:
    for claim in (attacker, forger):
        for order in ([claim, victim], [victim, claim]):
            networks = primary_networks(order, PluginHost.load(CONFIG).topologies)
            assert [(n.name, n.network_id, n.cluster_subnets) for n in networks] == [
                (NETWORK, 3, ("10.100.0.0/16",))]


# -- the cluster manager against the API server -------------------------------------------------
@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    api = with_crds(kube_apiserver)
    for namespace in ("aaa", "blue"):
        api.create(NAMESPACES, {"metadata": {"name": namespace}})
    return api


@pytest.fixture
def running(client: KubeClient) -> Iterator[Running]:
    controller = Running(client, CONFIG)
    yield controller
    controller.stop()


def nad_annotations(client: KubeClient, namespace: str, name: str) -> dict[str, str]:
    found: dict[str, str] = client.get(NADS, name, namespace)["metadata"].get(
        "annotations") or {}
    return found


def with_id(registry: NetworkRegistry) -> NetworkEntry | None:
    """The network's registry entry once it has its ID (set after the NADs are sorted)."""
    entry = registry.get(NETWORK)
    return entry if entry is not None and entry.network_id is not None else None


def conflict_events(client: KubeClient) -> list[str]:
    return [e["message"] for e in client.list(EVENTS, "aaa")["items"]
            if e["reason"] == "ConflictingNetworkConfig"]


def plain(nad_obj: dict[str, Any]) -> dict[str, Any]:
    """The object as a user would create it (the server sets creationTimestamp)."""
    meta = dict(nad_obj["metadata"])
    meta.pop("creationTimestamp", None)
    return {"metadata": meta, "spec": nad_obj["spec"]}


def test_a_claim_is_refused_and_a_forged_acceptance_removed(client: KubeClient,
                                                            running: Running) -> None:
    client.create(NADS, plain(nad(*VICTIM)))
    accepted = wait_until(lambda: nad_annotations(client, *VICTIM).get(ID))
    time.sleep(1.1)  # creationTimestamp has one-second steps: the claim is newer
    client.create(NADS, plain(forger))  # claims the name, other subnets, copied annotations
    wait_until(lambda: conflict_events(client) == [
        f"NAD aaa/claim CNI config does not match that of network {NETWORK}"])
    wait_until(lambda: ID not in nad_annotations(client, "aaa", "claim"))
    assert not {NAME, KEYS} & set(nad_annotations(client, "aaa", "claim"))
    entry = wait_until(lambda: with_id(running.registry))
    assert entry is not None and entry.nads == {"blue/blue-network"}
    assert [str(s.cidr) for s in entry.netinfo.subnets] == ["10.100.0.0/16"]
    assert str(entry.network_id) == accepted == nad_annotations(client, *VICTIM)[ID]


def test_a_restarted_cluster_manager_keeps_the_accepted_definition(client: KubeClient) -> None:
    client.create(NADS, plain(nad(*VICTIM)))
    first = Running(client, CONFIG)
    try:
        accepted = wait_until(lambda: nad_annotations(client, *VICTIM).get(ID))
    finally:
        first.stop()
    time.sleep(1.1)
    client.create(NADS, plain(attacker))  # "aaa/claim" is listed first after a restart
    second = Running(client, CONFIG)
    try:
        wait_until(lambda: conflict_events(client))
        entry = wait_until(lambda: with_id(second.registry))
        assert entry is not None and entry.nads == {"blue/blue-network"}
        assert str(entry.network_id) == accepted
        assert ID not in nad_annotations(client, "aaa", "claim")
        assert nad_annotations(client, *VICTIM)[ID] == accepted
    finally:
        second.stop()


def test_a_forged_network_id_on_a_newer_nad_cannot_take_the_network_id(
        client: KubeClient) -> None:
    client.create(NADS, plain(nad(*VICTIM)))
    first = Running(client, CONFIG)
    try:
        accepted = wait_until(lambda: nad_annotations(client, *VICTIM).get(ID))
    finally:
        first.stop()
    time.sleep(1.1)
    # "aaa/claim" is listed first after a restart, and claims another ID for the network
    client.create(NADS, plain(nad("aaa", "claim", subnets="10.200.0.0/16/24",
                                  annotations={ID: "7", NAME: NETWORK, KEYS: "[]"})))
    second = Running(client, CONFIG)
    try:
        entry = wait_until(lambda: with_id(second.registry))
        assert entry is not None and str(entry.network_id) == accepted != "7"
        wait_until(lambda: ID not in nad_annotations(client, "aaa", "claim"))
        assert nad_annotations(client, *VICTIM)[ID] == accepted
    finally:
        second.stop()
