"""What the zone takes from ``ovnk_zone_pod_port`` (``zone.pod_port_extras``): links onto the
port, rows of the pod's own owner; anything else is a plugin's failure, never written."""

from __future__ import annotations

import dataclasses
from typing import Any

import pluggy
import pytest

from ovnk_core import hookimpl, hookspecs
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Link, Ref
from ovnk_core.ovn.ownership import Owner
from ovnk_core.pod_port import PodPortExtras
from ovnk_core.render_state import PodAttachment
from ovnk_core.zone.pod_port_extras import merge_pod_port

pytestmark = pytest.mark.unit

OWNER = Owner("default-network-controller", "pod:a/p")
OTHER = Owner("default-network-controller", "pod:a/q")
PORT = DesiredRow("Logical_Switch_Port", OWNER.object_ids("PodLogicalSwitchPort", "a_p"),
                  {"name": "a_p"})
SWITCH_LINK = Link(Ref("Logical_Switch", "sw"), "ports")
GROUP_LINK = Link(Ref("Port_Group", "pg"), "ports")
ATTACHMENT = PodAttachment("a", "p", "uid", "n1", "default", "0a:58:0a:00:00:05",
                           ("10.0.0.5/24",), "infrastructure-locked")
NETINFO = NetInfo(name="default", topology="layer3", role="default", mtu=1400)


def manager(*plugins: Any) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT)
    pm.add_hookspecs(hookspecs)
    for plugin in plugins:
        pm.register(plugin)
    return pm


class Returns:
    def __init__(self, value: Any) -> None:
        self.value = value

    @hookimpl
    def ovnk_zone_pod_port(self) -> Any:
        return self.value


def acl(owner: Owner) -> DesiredRow:
    return DesiredRow("ACL", owner.object_ids("X", "p"), {"match": "1"},
                      links=(Link(Ref("Port_Group", "pg"), "acls"),))


def merge(*plugins: Any, rows: list[DesiredRow] | None = None) -> Any:
    port = dataclasses.replace(PORT, links=(SWITCH_LINK,))
    return merge_pod_port(manager(*plugins).hook, {"metadata": {}}, ATTACHMENT, NETINFO,
                          OWNER, rows if rows is not None else [port])


def test_links_join_the_port_and_rows_follow_it() -> None:
    merged = merge(Returns(PodPortExtras(links=(GROUP_LINK,), rows=(acl(OWNER),))),
                   Returns(None))
    assert (merged.errors, merged.failure) == ([], "")
    assert merged.rows[0].links == (SWITCH_LINK, GROUP_LINK)
    assert merged.rows[1:] == [acl(OWNER)]


def test_an_error_keeps_the_links_and_drops_only_that_features_rows() -> None:
    merged = merge(Returns(PodPortExtras(links=(GROUP_LINK,), rows=(acl(OWNER),),
                                         error="invalid port 70000")),
                   Returns(PodPortExtras(rows=(DesiredRow("ACL", OWNER.object_ids("Y", "p"),
                                                          {"match": "2"}),))))
    assert merged.errors == ["invalid port 70000"]
    assert merged.rows[0].links == (SWITCH_LINK, GROUP_LINK)
    assert [row.ids.owner_type for row in merged.rows[1:]] == ["Y"]


@pytest.mark.parametrize(("value", "failure"), [
    (PodPortExtras(rows=(acl(OTHER),)), "a plugin returned a ACL row of owner "
     "default-network-controller/pod:a/q for the port of default-network-controller/pod:a/p"),
    ({"links": []}, "a plugin returned dict, not PodPortExtras, for the pod's port"),
])
def test_a_plugin_breaking_the_contract_writes_nothing(value: Any, failure: str) -> None:
    merged = merge(Returns(value))
    assert merged.failure == failure
    assert merged.rows[0].links == (SWITCH_LINK,)  # unchanged: the caller leaves NB as it is


def test_a_plugin_that_raises_is_a_failure_not_a_crash() -> None:
    class Raises:
        @hookimpl
        def ovnk_zone_pod_port(self) -> None:
            raise KeyError("spec")

    assert merge(Raises()).failure == "a plugin failed on the pod's port: 'spec'"


def test_rows_without_a_port_are_not_offered() -> None:
    called: list[bool] = []

    class Records:
        @hookimpl
        def ovnk_zone_pod_port(self) -> None:
            called.append(True)

    router = DesiredRow("Logical_Router_Static_Route", OWNER.object_ids("R", "p"), {})
    assert merge(Records(), rows=[router]).rows == [router]
    assert called == []
