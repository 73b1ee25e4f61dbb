"""NADs whose config no network can come from are reported once, with a message the API server
accepts, and stop nothing (issue 30, items 3 and 5): the cluster manager on the local API
server.

* a config spelling a lone UTF-16 surrogate (``"name":"\\ud800"``) used to become a network
  named by a string no UTF-8 can encode: its network-name annotation was refused by the API
  server on every retry, forever, and its Warning event was refused for the same reason;
* a NAD without a config (``config: ""``, no ``spec``, ``spec: {}``) got no Warning at all,
  although upstream reports it like any config that is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NADS, NAMESPACES
from ovnk_core.testing.waiting import wait_until

LONE = "\\ud800"  # the escape as a NAD's config spells it (six characters)


def netconf(name: str, nad: str, **extra: Any) -> str:
    """A Layer2 secondary netconf; ``name`` is inserted as JSON text (so it may hold an
    escape json.dumps would not write)."""
    body = {"cniVersion": "1.0.0", "type": "ovn-k8s-cni-overlay", "name": "@NAME@",
            "topology": "layer2", "role": "secondary", "netAttachDefName": nad,
            "subnets": "10.9.0.0/24", **extra}
    return json.dumps(body).replace('"@NAME@"', f'"{name}"')


def warnings_on(client: KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    return [e for e in client.list(EVENTS, namespace)["items"]
            if e.get("type") == "Warning" and e["involvedObject"].get("name") == name
            and e["involvedObject"].get("kind") == "NetworkAttachmentDefinition"]


def network_id(client: KubeClient, namespace: str, name: str) -> str | None:
    annotations = client.get(NADS, name, namespace)["metadata"].get("annotations") or {}
    return annotations.get("k8s.ovn.org/network-id")


@pytest.fixture
def manager(client: KubeClient, start_manager: Callable[[], ClusterManager]) -> ClusterManager:
    client.create(NAMESPACES, {"metadata": {"name": "tenant"}})
    return start_manager()


def test_a_lone_surrogate_in_a_nad_config_is_one_warning_not_a_retry_loop(
        client: KubeClient, manager: ClusterManager) -> None:
    client.create(NADS, {"metadata": {"name": "lone", "namespace": "tenant"},
                         "spec": {"config": netconf(LONE, "tenant/lone")}})
    # a surrogate deeper inside, as a key: the same
    client.create(NADS, {"metadata": {"name": "key", "namespace": "tenant"},
                         "spec": {"config": netconf("tenant_key", "tenant/key").replace(
                             '"subnets"', f'"{LONE}x": 1, "subnets"')}})
    client.create(NADS, {"metadata": {"name": "fine", "namespace": "tenant"},
                         "spec": {"config": netconf("tenant_fine", "tenant/fine")}})
    assert wait_until(lambda: network_id(client, "tenant", "fine"))  # others unaffected
    lone = wait_until(lambda: warnings_on(client, "tenant", "lone"))
    key = wait_until(lambda: warnings_on(client, "tenant", "key"))
    assert [e["message"] for e in lone] == [
        "NAD tenant/lone is invalid: netconf cannot be parsed: invalid Unicode at name: "
        "unpaired UTF-16 surrogate \\ud800 (a character outside the Basic Multilingual Plane "
        "must be a surrogate pair)"]
    assert lone[0]["reason"] == "InvalidNetworkConfig"
    assert "invalid Unicode at (a key): unpaired UTF-16 surrogate \\ud800" in key[0]["message"]
    # no network came of them, and nothing is retried: the NAD controller never failed
    assert network_id(client, "tenant", "lone") is None
    assert network_id(client, "tenant", "key") is None
    assert manager.nad is not None
    nad_controller = manager.nad.controller
    assert wait_until(lambda: nad_controller.queue.idle())
    assert nad_controller.stats.failures == 0
    # reported once: its event is not bumped by a loop
    assert [e.get("count") for e in warnings_on(client, "tenant", "lone")] == [1]


def test_a_surrogate_pair_is_a_character_not_an_error(client: KubeClient,
                                                      manager: ClusterManager) -> None:
    client.create(NADS, {"metadata": {"name": "emoji", "namespace": "tenant"},
                         "spec": {"config": netconf("tenant_\\ud83d\\ude00", "tenant/emoji")}})
    assert wait_until(lambda: network_id(client, "tenant", "emoji"))
    annotations = client.get(NADS, "emoji", "tenant")["metadata"]["annotations"]
    assert annotations["k8s.ovn.org/network-name"] == "tenant_\U0001f600"


@pytest.mark.parametrize(("spec", "why"), [
    ({"config": ""}, "its spec.config is empty"),
    ({"config": "  \n"}, "its spec.config is empty"),
    ({}, "its spec has no config"),
    (None, "it has no spec"),
])
def test_a_nad_without_a_config_gets_the_promised_warning(
        client: KubeClient, manager: ClusterManager, spec: dict[str, Any] | None,
        why: str) -> None:
    nad: dict[str, Any] = {"metadata": {"name": "empty", "namespace": "tenant"}}
    if spec is not None:
        nad["spec"] = spec
    client.create(NADS, nad)
    events = wait_until(lambda: warnings_on(client, "tenant", "empty"))
    assert [(e["reason"], e["message"]) for e in events] == [
        ("InvalidNetworkConfig", f"NAD tenant/empty is invalid: netconf cannot be parsed: "
                                 f"{why}")]


def test_another_plugins_nad_is_left_alone(client: KubeClient, manager: ClusterManager) -> None:
    client.create(NADS, {"metadata": {"name": "bridge", "namespace": "tenant"},
                         "spec": {"config": json.dumps({"cniVersion": "1.0.0", "type": "bridge",
                                                        "name": "br"})}})
    client.create(NADS, {"metadata": {"name": "fine", "namespace": "tenant"},
                         "spec": {"config": netconf("tenant_fine", "tenant/fine")}})
    assert wait_until(lambda: network_id(client, "tenant", "fine"))
    assert manager.nad is not None
    assert wait_until(lambda: manager.nad is not None and
                      manager.nad.unnamed.controller.queue.idle())
    assert warnings_on(client, "tenant", "bridge") == []
