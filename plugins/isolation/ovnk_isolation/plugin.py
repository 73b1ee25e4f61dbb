"""Feature plugin object for UDN isolation.

Node (``ovnk_node_controllers``): the host's nftables table ``inet ovn-kubernetes``
(``host_plugin``, ``host_isolation``); the zone's ACLs come in their own change.
"""

from __future__ import annotations

from ovnk_core.feature import Feature
from ovnk_isolation.host_plugin import HostIsolationHooks


class IsolationFeature(HostIsolationHooks, Feature):
    name = "isolation"
    required_flags = ("enable-multi-network", "enable-network-segmentation")
