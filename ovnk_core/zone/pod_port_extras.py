"""The zone controller's side of ``ovnk_zone_pod_port``: ask the plugins, merge their parts.

Kept apart from the pod reconcile so that the rule of what a feature may add
(links onto the port, rows of the pod's own owner) and what its error does is
in one place, with its own tests.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any

from ovnk_core.kube.client import JSON
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow, Link
from ovnk_core.ovn.ownership import Owner
from ovnk_core.pod_port import PodPortExtras
from ovnk_core.render_state import PodAttachment

log = logging.getLogger(__name__)

PORT_TABLE = "Logical_Switch_Port"


@dataclass
class MergedPort:
    """The pod's rows on one network with every feature's part.

    :ivar rows: the rows with every link and every row of the features without an error
        (those of a feature with an ``error`` are left out).  With ``errors``, a port
        already in Northbound is written so; a new port is not written at all.
    :ivar errors: the features' ``error`` texts (the pod's input is unusable).
    :ivar failure: a plugin raised or broke the contract: the pod's rows on this network
        are to be left as they are in Northbound (the text says what happened).
    """

    rows: list[DesiredRow]
    errors: list[str] = field(default_factory=list)
    failure: str = ""


def merge_pod_port(hook: Any, pod: JSON, attachment: PodAttachment, netinfo: NetInfo,
                   owner: Owner, rows: list[DesiredRow]) -> MergedPort:
    """Ask every plugin (``hook.ovnk_zone_pod_port``) for its part of the port in ``rows``
    and return the rows with those parts merged in."""
    index = next((i for i, row in enumerate(rows) if row.table == PORT_TABLE), None)
    if index is None:
        return MergedPort(rows)
    port = rows[index]
    try:
        parts = hook.ovnk_zone_pod_port(pod=pod, attachment=attachment, netinfo=netinfo,
                                        owner=owner, port=port)
    except Exception as exc:  # a plugin's bug: leave the pod's rows as they are, retry
        log.exception("ovnk_zone_pod_port failed for pod %s/%s on network %s",
                      attachment.namespace, attachment.name, netinfo.name)
        return MergedPort(rows, failure=f"a plugin failed on the pod's port: {exc}")
    links: list[Link] = []
    extra: list[DesiredRow] = []
    errors: list[str] = []
    for part in parts:
        if not isinstance(part, PodPortExtras):
            return MergedPort(rows, failure=f"a plugin returned {type(part).__name__}, "
                                            "not PodPortExtras, for the pod's port")
        foreign = [row for row in part.rows if row.ids.owner != owner]
        if foreign:
            return MergedPort(rows, failure=(
                f"a plugin returned a {foreign[0].table} row of owner {foreign[0].ids.owner} "
                f"for the port of {owner}"))
        links.extend(part.links)
        if part.error:
            errors.append(part.error)
        else:
            extra.extend(part.rows)
    merged = list(rows)
    if links:
        merged[index] = dataclasses.replace(port, links=(*port.links, *links))
    return MergedPort(merged + extra, errors=errors)


__all__ = ["MergedPort", "merge_pod_port"]
