"""The controllers feature plugins run in the node agent, and the tables they own.

Built once per agent from the ``ovnk_node_controllers`` hook; started after
the agent's own controllers and stopped before them.  At start the nftables
tables of features that are no longer enabled (``ovnk-feature-<name>``,
family ``inet``) are deleted, so disabling a feature leaves no host rules
behind.  A host without nftables is reported and skipped, never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from ovnk_core.contexts import NodeContext, feature_of_table
from ovnk_core.kube.controller import Controller
from ovnk_core.node import nft
from ovnk_core.plugins import PluginHost

log = logging.getLogger(__name__)


def remove_disabled_feature_tables(enabled: Collection[str], netns: str | None) -> list[str]:
    """Delete every feature table whose feature is not in ``enabled``; returns their names.

    :raises NftError: nftables cannot be listed or changed here.
    """
    removed = []
    for family, table in nft.list_tables(netns=netns):
        feature = feature_of_table(family, table)
        if feature is not None and feature not in enabled:
            nft.delete_table(family, table, netns=netns)
            removed.append(table)
            log.info("feature %s is not enabled: removed its nftables table %s %s",
                     feature, family, table)
    return removed


class NodeFeatureControllers:
    """The feature plugins' controllers of one node agent."""

    def __init__(self, host: PluginHost, context: NodeContext) -> None:
        self.host = host
        self.context = context
        self.controllers: list[Controller] = host.contributed_controllers(
            "ovnk_node_controllers", context)

    def start(self) -> None:
        try:
            remove_disabled_feature_tables(self.host.features, self.context.node_netns)
        except nft.NftError as exc:
            log.warning("node %s: cannot clean up the nftables tables of disabled features: "
                        "%s", self.context.node, exc)
        for controller in self.controllers:
            controller.start()

    def stop(self) -> None:
        for controller in reversed(self.controllers):
            controller.stop()
