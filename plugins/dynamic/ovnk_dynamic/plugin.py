"""Feature plugin object for dynamic UDN node allocation (trackers in their own issue)."""

from __future__ import annotations

from ovnk_core.feature import Feature


class DynamicAllocationFeature(Feature):
    name = "dynamic"
    required_flags = ("enable-multi-network", "enable-network-segmentation",
                      "enable-dynamic-udn-allocation")
