"""Feature plugin object for UDN isolation (ACLs and nftables in its own issue)."""

from __future__ import annotations

from ovnk_core.feature import Feature


class IsolationFeature(Feature):
    name = "isolation"
    required_flags = ("enable-multi-network", "enable-network-segmentation")
