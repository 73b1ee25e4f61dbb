"""The other zones' chassis in this zone's Southbound (interconnect).

A remote node's port on a transit switch is bound to the node's chassis
(``requested-chassis``); this zone's ovn-controllers tunnel to it only if the
zone's Southbound has that chassis with its encapsulation.  The node's own
ovn-controller registers it in *its* zone's Southbound, never in this one, so
the zone controller writes it here, as upstream's ``ZoneChassisHandler``:
``Chassis`` named by ``k8s.ovn.org/node-chassis-id``, ``hostname`` = the node,
``other_config:is-remote=true``, one geneve ``Encap`` per address of
``k8s.ovn.org/node-encap-ips`` (``options:csum=true``).

Level-driven, one key per node: the node's remote chassis is made to match
its annotations, or removed (the node is gone, in this zone, in no zone, or
its chassis changed).  Only chassis with ``is-remote=true`` are ever removed:
a chassis an ovn-controller registered is never touched, except that a
node's chassis is taken over as a remote one when the node is now another
zone's (upstream turns it into a remote chassis too).  At start every remote
chassis of a node that is gone is removed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from ovnk_core.errors import NotReady
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.informer import Informer
from ovnk_core.ovn.jsonrpc import OvsdbConnection, OvsdbConnectionError, OvsdbRequestError
from ovnk_core.zone.node_facts import NodeFacts

log = logging.getLogger(__name__)

SB = "OVN_Southbound"
IS_REMOTE = "is-remote"
ENCAP_TYPE = "geneve"
ENCAP_OPTIONS = {"csum": "true"}


def _map(pairs: dict[str, str]) -> list[Any]:
    return ["map", [[k, v] for k, v in sorted(pairs.items())]]


def _map_of(value: Any) -> dict[str, str]:
    return {k: v for k, v in value[1]} if isinstance(value, list) and value[0] == "map" else {}


def _uuids(value: Any) -> list[str]:
    if isinstance(value, list) and value and value[0] == "uuid":
        return [value[1]]
    if isinstance(value, list) and value and value[0] == "set":
        return [entry[1] for entry in value[1]]
    return []


def wanted_chassis(facts: NodeFacts | None, zone: str) -> tuple[str, tuple[str, ...]] | None:
    """(chassis name, encap IPs) of the node's remote chassis in ``zone``; ``None`` when it
    has none there (gone, the zone's own node, in no zone, or not published yet)."""
    if facts is None or facts.zone is None or facts.zone == zone or not facts.chassis_id \
            or not facts.encap_ips:
        return None
    return facts.chassis_id, tuple(sorted(facts.encap_ips))


class RemoteChassisController:
    """Keeps this zone's Southbound's remote chassis equal to the other zones' nodes."""

    def __init__(self, nodes: Informer, facts: Callable[[Any], NodeFacts], zone: str,
                 sb_remotes: tuple[str, ...]) -> None:
        self.nodes = nodes
        self.facts = facts
        self.zone = zone
        self.remotes = sb_remotes
        self._conn: OvsdbConnection | None = None
        self._lock = threading.Lock()
        self.controller = Controller("zone-remote-chassis-controller", self.reconcile,
                                     initial_sync=self.sync)
        self.controller.watch(nodes, primary=True)

    # -- Southbound I/O ----------------------------------------------------------------------
    def _transact(self, operations: list[dict[str, Any]]) -> list[Any]:
        with self._lock:
            problems = []
            for attempt in range(2 * len(self.remotes)):
                if self._conn is None or self._conn.closed:
                    remote = self.remotes[attempt % len(self.remotes)]
                    try:
                        self._conn = OvsdbConnection(remote, timeout=30)
                    except OvsdbConnectionError as exc:
                        problems.append(str(exc))
                        continue
                try:
                    result = self._conn.transact(SB, operations)
                except OvsdbConnectionError as exc:
                    problems.append(str(exc))
                    continue
                failed = [entry for entry in result
                          if isinstance(entry, dict) and entry.get("error")]
                if failed or len(result) > len(operations):
                    raise OvsdbRequestError("OVN Southbound transaction failed: "
                                            f"{failed or result}")
                return result
            raise NotReady("cannot reach OVN Southbound: " + "; ".join(problems[-2:]),
                           backoff=True)

    def _chassis(self, where: list[Any]) -> list[dict[str, Any]]:
        [found] = self._transact([{"op": "select", "table": "Chassis", "where": where,
                                   "columns": ["_uuid", "name", "hostname", "other_config",
                                               "encaps"]}])
        rows: list[dict[str, Any]] = found["rows"]
        return rows

    def _encaps(self, chassis_name: str) -> set[tuple[str, str, tuple[tuple[str, str], ...]]]:
        [found] = self._transact([{"op": "select", "table": "Encap",
                                   "where": [["chassis_name", "==", chassis_name]],
                                   "columns": ["type", "ip", "options"]}])
        return {(row["type"], row["ip"], tuple(sorted(_map_of(row["options"]).items())))
                for row in found["rows"]}

    # -- reconcile -------------------------------------------------------------------------
    def reconcile(self, name: str) -> None:
        node = self.nodes.get(name)
        wanted = wanted_chassis(self.facts(node) if node is not None else None, self.zone)
        operations: list[dict[str, Any]] = []
        for row in self._chassis([["hostname", "==", name]]):
            if _map_of(row["other_config"]).get(IS_REMOTE) == "true" and \
                    (wanted is None or row["name"] != wanted[0]):
                operations.append(_delete(row["_uuid"][1]))
        if wanted is not None:
            chassis_name, ips = wanted
            existing = self._chassis([["name", "==", chassis_name]])
            if existing and self._matches(existing[0], name, ips):
                wanted = None
            else:
                operations += [_delete(row["_uuid"][1]) for row in existing]
        if wanted is not None:
            operations += _insert(wanted[0], name, wanted[1])
        if operations:
            self._transact(operations)
            log.info("OVN Southbound: remote chassis of node %s %s", name,
                     "written" if wanted is not None else "removed")

    def _matches(self, row: dict[str, Any], node: str, ips: tuple[str, ...]) -> bool:
        if _map_of(row["other_config"]).get(IS_REMOTE) != "true" or row["hostname"] != node \
                or len(_uuids(row["encaps"])) != len(ips):
            return False
        options = tuple(sorted(ENCAP_OPTIONS.items()))
        return self._encaps(row["name"]) == {(ENCAP_TYPE, ip, options) for ip in ips}

    def sync(self) -> None:
        """Remove the remote chassis of nodes that are gone; the informer enqueues the rest."""
        for row in self._chassis([]):
            if _map_of(row["other_config"]).get(IS_REMOTE) == "true" and \
                    self.nodes.peek(row["hostname"]) is None:
                self.controller.queue.add(row["hostname"])

    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        with self._lock:
            if self._conn is not None:
                self._conn.close()


def _delete(uuid: str) -> dict[str, Any]:
    return {"op": "delete", "table": "Chassis", "where": [["_uuid", "==", ["uuid", uuid]]]}


def _insert(chassis_name: str, node: str, ips: tuple[str, ...]) -> list[dict[str, Any]]:
    operations: list[dict[str, Any]] = []
    names = []
    for index, ip in enumerate(ips):
        names.append(f"encap{index}")
        operations.append({"op": "insert", "table": "Encap", "uuid-name": f"encap{index}",
                           "row": {"type": ENCAP_TYPE, "ip": ip, "chassis_name": chassis_name,
                                   "options": _map(ENCAP_OPTIONS)}})
    operations.append({"op": "insert", "table": "Chassis", "row": {
        "name": chassis_name, "hostname": node, "other_config": _map({IS_REMOTE: "true"}),
        "encaps": ["set", [["named-uuid", n] for n in names]]}})
    return operations


__all__ = ["RemoteChassisController", "wanted_chassis"]
