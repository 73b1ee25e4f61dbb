"""The node-agent half of the isolation feature plugin (mixed into ``IsolationFeature``).

Kept apart from ``plugin.py`` so that the zone and node halves of the
feature change independently.  It claims upstream's table name, ``inet
ovn-kubernetes`` (``Feature.nft_table_name``): the node agent hands it out as
``context.nft_table("isolation")`` and deletes it when the feature is
installed but not enabled.
"""

from __future__ import annotations

from typing import ClassVar

from ovnk_core import hookimpl
from ovnk_core.contexts import NodeContext
from ovnk_core.kube.controller import Controller
from ovnk_isolation.host_isolation import HostIsolation

UPSTREAM_TABLE = "ovn-kubernetes"


class HostIsolationHooks:
    """``ovnk_node_controllers``: the ``udn-isolation`` chain and sets on every node."""

    nft_table_name: ClassVar[str | None] = UPSTREAM_TABLE

    @hookimpl
    def ovnk_node_controllers(self, context: NodeContext) -> list[Controller]:
        return [HostIsolation(context).controller]
