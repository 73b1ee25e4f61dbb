"""What a feature adds to a pod's port as the zone controller writes it.

Some features act on each pod's logical switch port, in the same transaction
that creates it, as upstream does in ``addLogicalPort``: put the port in a
port group the feature owns, add per-pod ACLs from the pod's annotations.
The zone controller asks every enabled plugin through the hook
``ovnk_zone_pod_port`` (``ovnk_core.hookspecs``) and writes what they return
with the port: ``links`` make the port a member of a feature's rows (e.g.
``Link(Ref.to("Port_Group", pg_ids), "ports")``), ``rows`` are rows of the
pod's own owner (deleted with the port, re-rendered with it).

A feature that cannot build its part from the pod's input says so in
``error`` (upstream's behaviour follows: see ``PodPortExtras.error``); it
never raises for bad input.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovnk_core.ovn.declarative import DesiredRow, Link

ERROR_ADDING = "ErrorAddingResource"
"""The pod's Warning reason when a feature's error keeps its new port from being written
(and, as upstream's for any failed add, when OVN Northbound cannot be reached)."""

ERROR_UPDATING = "ErrorUpdatingResource"
"""The pod's Warning reason when a feature's error drops its rows from an existing port
(and when OVN Northbound cannot be reached to change its ports)."""

ERROR_DELETING = "ErrorDeletingResource"
"""The pod's Warning reason when its ports cannot be removed (OVN Northbound unreachable)."""


@dataclass(frozen=True)
class PodPortExtras:
    """One feature's part of one pod's port.

    :ivar links: reference sets the port joins (members of rows the feature owns); the
        port leaves them when it is deleted or when the feature no longer returns them.
    :ivar rows: rows owned by the pod's owner (the ``owner`` the hook was given), written
        in the port's transaction; a row of another owner is refused.
    :ivar error: the pod's input is unusable for this feature (a malformed annotation):
        when the port is not in Northbound yet it is not written at all (Warning
        ``ErrorAddingResource`` on the pod); when it is, it keeps its links and loses
        this feature's ``rows`` (Warning ``ErrorUpdatingResource``).  Either way the
        pod is retried with backoff until the input changes.  ``rows`` are ignored then.
    """

    links: tuple[Link, ...] = ()
    rows: tuple[DesiredRow, ...] = ()
    error: str = ""


__all__ = ["ERROR_ADDING", "ERROR_DELETING", "ERROR_UPDATING", "PodPortExtras"]
