"""The e2e harness itself: rows written by the declarative layer, compiled by a real
ovn-northd, judged by ovn-trace (delivered vs dropped)."""

from __future__ import annotations

import pytest

from ovnk_core.ovn.declarative import DesiredRow, Link, Ref, apply
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.trace import TraceError, packet_flow, trace, wait_for_sb
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.testing.ovsdb_fixtures import OvnStack

OWNER = Owner("test-controller", "network")
ROUTER_MAC = {"a": "0a:58:0a:00:01:01", "b": "0a:58:0a:00:02:01"}
POD = {"a": ("0a:58:0a:00:01:0a", "10.0.1.10"), "b": ("0a:58:0a:00:02:0a", "10.0.2.10")}


DENY_B = OWNER.object_ids("PortGroup", "deny-b")


def topology(deny_b: bool = False) -> list[DesiredRow]:
    router = OWNER.object_ids("LogicalRouter", "lr0")
    rows = [DesiredRow("Logical_Router", router, {"name": "lr0"})]
    for side, third in (("a", 1), ("b", 2)):
        switch = OWNER.object_ids("LogicalSwitch", f"sw-{side}")
        rows += [
            DesiredRow("Logical_Switch", switch, {"name": f"sw-{side}"}),
            DesiredRow("Logical_Router_Port", OWNER.object_ids("RouterPort", side),
                       {"name": f"lr0-sw-{side}", "mac": ROUTER_MAC[side],
                        "networks": [f"10.0.{third}.1/24"]},
                       links=(Link(Ref.to("Logical_Router", router), "ports"),)),
            DesiredRow("Logical_Switch_Port", OWNER.object_ids("SwitchRouterPort", side),
                       {"name": f"sw-{side}-lr0", "type": "router", "addresses": ["router"],
                        "options": {"router-port": f"lr0-sw-{side}"}},
                       links=(Link(Ref.to("Logical_Switch", switch), "ports"),)),
            DesiredRow("Logical_Switch_Port", OWNER.object_ids("Pod", side),
                       {"name": f"pod-{side}", "addresses": [" ".join(POD[side])],
                        "port_security": [" ".join(POD[side])]},
                       links=(Link(Ref.to("Logical_Switch", switch), "ports"),
                              *((Link(Ref.to("Port_Group", DENY_B), "ports"),)
                                if deny_b and side == "b" else ()))),
        ]
    if deny_b:
        rows += [
            DesiredRow("Port_Group", DENY_B, {"name": "deny_b"}),
            DesiredRow("ACL", OWNER.object_ids("ACL", "deny-b"),
                       {"direction": "to-lport", "priority": 1001,
                        "match": "outport == @deny_b && ip4", "action": "drop"},
                       links=(Link(Ref.to("Port_Group", DENY_B), "acls"),)),
        ]
    return rows


def a_to_b() -> str:
    return packet_flow("pod-a", POD["a"][0], ROUTER_MAC["a"], POD["a"][1], POD["b"][1])


def test_routed_packet_is_delivered_then_dropped_by_acl(ovn_stack: OvnStack) -> None:
    with NbWriter([ovn_stack.nb.remote]).start() as nb:
        apply(nb, OWNER, topology())
        wait_for_sb(nb.remote)
        assert trace(ovn_stack.sb.remote, "sw-a", a_to_b()).delivered_to("pod-b")

        apply(nb, OWNER, topology(deny_b=True))
        wait_for_sb(nb.remote)
        result = trace(ovn_stack.sb.remote, "sw-a", a_to_b())
        assert not result.delivered_to("pod-b")
        assert result.outputs == ()

        apply(nb, OWNER, topology())  # the ACL and port group are swept again
        wait_for_sb(nb.remote)
        assert trace(ovn_stack.sb.remote, "sw-a", a_to_b()).delivered_to("pod-b")


def test_trace_errors_are_clear(ovn_stack: OvnStack) -> None:
    wait_for_sb(ovn_stack.nb.remote)
    with pytest.raises(TraceError, match="ovn-trace no-such-switch failed"):
        trace(ovn_stack.sb.remote, "no-such-switch", a_to_b())
