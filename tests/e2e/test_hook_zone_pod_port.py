"""Hook ``ovnk_zone_pod_port``: a feature adds to pods' ports in the transaction that writes
them, and what its ``error`` and its exceptions do.

A test feature ("grouping") owns a port group; for default-network pods labelled
``join`` it puts the port in the group and adds one ACL of the pod's own owner.  An
annotation ``example.org/ports: broken`` is input it cannot use (``error``); a pod named
in ``explode`` makes it raise.  Real API server, cluster manager, zone controller and NB.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from ovnk_local.testing.apiserver_fixtures import component_client
from ovnk_local.testing.control_plane import ControlPlane, Zone

from ovnk_core import hookimpl
from ovnk_core.contexts import feature_owner
from ovnk_core.identities import CONTROLLER_USER
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import EVENTS, NAMESPACES, PODS
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref, apply
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.plugins import PluginHost
from ovnk_core.pod_port import PodPortExtras
from ovnk_core.render_state import PodAttachment
from ovnk_core.testing import ovsdb_fixtures
from ovnk_core.testing.ovsdb_fixtures import OvnStack
from ovnk_core.testing.waiting import wait_until
from ovnk_core.zone.controller import ZoneController

pytestmark = pytest.mark.e2e

GROUP_OWNER = feature_owner("grouping", "cluster")
GROUP_IDS = GROUP_OWNER.object_ids("PortGroup", "joined")
GROUP = Ref.to("Port_Group", GROUP_IDS)
BROKEN = "example.org/ports"


class Grouping:
    def __init__(self) -> None:
        self.explode: set[str] = set()

    @hookimpl
    def ovnk_zone_pod_port(self, pod: dict[str, Any], attachment: PodAttachment,
                           netinfo: NetInfo, owner: Owner, port: DesiredRow
                           ) -> PodPortExtras | None:
        if netinfo.name != "default" or "join" not in (pod["metadata"].get("labels") or {}):
            return None
        if attachment.name in self.explode:
            raise RuntimeError("grouping exploded")
        links = (Link(GROUP, "ports"),)
        value = (pod["metadata"].get("annotations") or {}).get(BROKEN)
        if value == "broken":
            return PodPortExtras(links=links, error=f"invalid ports {value!r}")
        acl = DesiredRow("ACL", owner.object_ids("JoinedACL", attachment.name),
                         {"action": "allow-related", "direction": "to-lport",
                          "priority": 1001, "match": f'outport == "{port.columns["name"]}"'},
                         links=(Link(GROUP, "acls"),))
        return PodPortExtras(links=links, rows=(acl,))


@pytest.fixture
def grouping() -> Grouping:
    return Grouping()


@pytest.fixture
def zone(plane: ControlPlane, grouping: Grouping, ovn_stack: OvnStack) -> Iterator[Zone]:
    """A zone controller whose plugin host also has ``grouping``, and the group it uses."""
    plane.start_manager()
    writer = NbWriter([ovn_stack.nb.remote]).start()
    apply(writer, GROUP_OWNER, [DesiredRow("Port_Group", GROUP_IDS, {"name": "joined"})])
    host = PluginHost.load(plane.config)
    host.manager.register(grouping)
    host.features["grouping"] = grouping  # enabled: the zone keeps its rows
    client = component_client(plane.handle, CONTROLLER_USER)
    informers = InformerFactory(client)
    controller = ZoneController(informers, plane.config, host, writer,
                                EventRecorder(client, "ovnkube-controller", "t"))
    informers.start()
    controller.start()
    running = Zone(writer, NbClient([ovn_stack.nb.remote]).start(), informers, controller)
    yield running
    running.stop()


def nbctl(stack: OvnStack, *args: str) -> str:
    return ovsdb_fixtures.nbctl(stack.nb.remote, *args)


def group_ports(stack: OvnStack) -> set[str]:
    uuids = nbctl(stack, "--bare", "--columns=ports", "find", "Port_Group", "name=joined")
    return {nbctl(stack, "get", "Logical_Switch_Port", uuid, "name").strip('"')
            for uuid in uuids.split()}


def acl_matches(stack: OvnStack) -> set[str]:
    out = nbctl(stack, "--format=json", "--columns=match", "list", "ACL")
    return {row[0] for row in json.loads(out)["data"]}


def ports(stack: OvnStack) -> set[str]:
    return set(nbctl(stack, "--bare", "--columns=name", "list", "Logical_Switch_Port").split())


def create_pod(client: KubeClient, name: str, annotations: dict[str, str] | None = None
               ) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": "apps",
                                      "labels": {"join": ""}, "annotations": annotations or {}},
                         "spec": {"nodeName": "ovn-worker",
                                  "containers": [{"name": "c", "image": "pause"}]}})


def warnings(client: KubeClient, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in client.list(EVENTS, "apps")["items"]
            if e["involvedObject"]["name"] == name and e["type"] == "Warning"]


def test_hook_ovnk_zone_pod_port(client: KubeClient, zone: Zone, grouping: Grouping,
                                 ovn_stack: OvnStack) -> None:
    client.create(NAMESPACES, {"metadata": {"name": "apps"}})
    # A port the feature joins: member of its group, with the pod's own ACL.
    create_pod(client, "a")
    wait_until(lambda: group_ports(ovn_stack) == {"apps_a"}, timeout=30)
    assert 'outport == "apps_a"' in acl_matches(ovn_stack)

    # Unusable input at creation: the port is not written; Warning ErrorAddingResource;
    # retried until the input changes.
    create_pod(client, "b", {BROKEN: "broken"})
    wait_until(lambda: ("ErrorAddingResource", "invalid ports 'broken'")
               in warnings(client, "b") or None, timeout=30)
    assert "apps_b" not in ports(ovn_stack)
    client.patch(PODS, "b", {"metadata": {"annotations": {BROKEN: None}}}, "apps")
    wait_until(lambda: group_ports(ovn_stack) == {"apps_a", "apps_b"}, timeout=30)
    assert 'outport == "apps_b"' in acl_matches(ovn_stack)

    # Unusable input on an existing port: it stays in the group, loses the feature's rows;
    # Warning ErrorUpdatingResource.
    client.patch(PODS, "a", {"metadata": {"annotations": {BROKEN: "broken"}}}, "apps")
    wait_until(lambda: 'outport == "apps_a"' not in acl_matches(ovn_stack) or None,
               timeout=30)
    assert group_ports(ovn_stack) == {"apps_a", "apps_b"}
    assert ("ErrorUpdatingResource", "invalid ports 'broken'") in warnings(client, "a")

    # A plugin that raises: the pod's rows stay as they are in NB (no port lost).
    grouping.explode.add("b")
    client.patch(PODS, "b", {"metadata": {"labels": {"touched": "1"}}}, "apps")
    wait_until(lambda: [w for w in warnings(client, "b")
                        if "grouping exploded" in w[1]] or None, timeout=30)
    assert "apps_b" in group_ports(ovn_stack)
    assert 'outport == "apps_b"' in acl_matches(ovn_stack)
    grouping.explode.clear()

    # Deleting a pod removes its port from the group and its rows.
    client.delete(PODS, "b", "apps")
    wait_until(lambda: group_ports(ovn_stack) == {"apps_a"}, timeout=30)
    assert 'outport == "apps_b"' not in acl_matches(ovn_stack)
