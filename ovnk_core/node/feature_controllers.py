"""The controllers feature plugins run in the node agent, and the tables they own.

Built once per agent from the ``ovnk_node_controllers`` hook; started after
the agent's own controllers and stopped before them.  At start the nftables
tables of features that are no longer enabled (``ovnk-feature-<name>``, and
the upstream-named table an installed but disabled feature claims with
``Feature.nft_table_name``; family ``inet``) are deleted, so disabling a
feature leaves no host rules behind.  A host without nftables is reported and
skipped, never fatal.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from ovnk_core.contexts import FEATURE_TABLE_FAMILY, NodeContext, feature_of_table
from ovnk_core.kube.controller import Controller
from ovnk_core.node import nft
from ovnk_core.plugins import PluginHost

log = logging.getLogger(__name__)


def remove_disabled_feature_tables(enabled: Collection[str], netns: str | None,
                                   claimed: Mapping[str, str] | None = None) -> list[str]:
    """Delete every feature table whose feature is not in ``enabled``: the
    ``ovnk-feature-<name>`` ones and ``claimed`` (feature → the table it claims, for
    disabled features: ``PluginHost.disabled_feature_tables``); returns their names.

    :raises NftError: nftables cannot be listed or changed here.
    """
    owner_of_claimed = {table: feature for feature, table in (claimed or {}).items()
                        if feature not in enabled}
    removed = []
    for family, table in nft.list_tables(netns=netns):
        feature = feature_of_table(family, table)
        if feature is None and family == FEATURE_TABLE_FAMILY:
            feature = owner_of_claimed.get(table)
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
        # each feature's table: the one it claims (Feature.nft_table_name) or its own
        context.nft_table = host.nft_table
        self.controllers: list[Controller] = host.contributed_controllers(
            "ovnk_node_controllers", context)

    def start(self) -> None:
        try:
            remove_disabled_feature_tables(self.host.features, self.context.node_netns,
                                           self.host.disabled_feature_tables())
        except nft.NftError as exc:
            log.warning("node %s: cannot clean up the nftables tables of disabled features: "
                        "%s", self.context.node, exc)
        for controller in self.controllers:
            controller.start()

    def stop(self) -> None:
        for controller in reversed(self.controllers):
            controller.stop()
