"""A network's failure on the node is a Warning event on the Node: at once, again when the
error changes, and otherwise held back while it repeats."""

from __future__ import annotations

from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.resources import EVENTS, NODES
from ovnk_core.node.network_failures import NetworkFailures

NODE = "ovn-worker"


def events(client: KubeClient) -> list[tuple[str, int]]:
    return sorted((e["message"], e["count"]) for e in client.list(EVENTS, "default")["items"]
                  if e["reason"] == "PortFailed")


def test_failures_are_said_once_per_network_and_error_until_they_repeat_or_change(
        kube_apiserver: ServerHandle) -> None:
    client = KubeClient(client_for(kube_apiserver))
    node = client.create(NODES, {"metadata": {"name": NODE}})
    now = [100.0]
    failures = NetworkFailures(EventRecorder(client, "ovnkube-node", NODE), NODE,
                               lambda: node, "PortFailed", "port", repeat=60.0,
                               clock=lambda: now[0])
    refused = OSError("route refused")
    for _ in range(5):  # retried with backoff: still one event, count 1
        failures.failed("a_net", refused)
        now[0] += 1
    failures.failed("b_net", refused)  # another network: its own event
    message = "network {}: port failed: route refused (retrying; other networks are not " \
              "affected)"
    assert events(client) == [(message.format("a_net"), 1), (message.format("b_net"), 1)]
    now[0] += 60  # still failing a while later: said again (the event's count)
    failures.failed("a_net", refused)
    assert events(client) == [(message.format("a_net"), 2), (message.format("b_net"), 1)]
    failures.failed("a_net", OSError("gone"))  # another error: said at once
    gone = "network a_net: port failed: gone (retrying; other networks are not affected)"
    assert (gone, 1) in events(client)
    failures.succeeded("b_net")  # recovered: its next failure is news
    failures.failed("b_net", refused)
    assert (message.format("b_net"), 2) in events(client)
    assert {(e["type"], e["involvedObject"]["kind"], e["involvedObject"]["name"])
            for e in client.list(EVENTS, "default")["items"]} == {("Warning", "Node", NODE)}
