"""Feature plugin object for the EndpointSlice mirror (controller in its own issue)."""

from __future__ import annotations

from ovnk_core.feature import Feature


class MirrorFeature(Feature):
    name = "mirror"
    required_flags = ("enable-multi-network", "enable-network-segmentation")
