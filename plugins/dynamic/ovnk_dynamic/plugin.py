"""Feature plugin object for dynamic UDN node allocation: its ``NetworkActivity``."""

from __future__ import annotations

from ovnk_core import hookimpl
from ovnk_core.config import Config
from ovnk_core.feature import Feature
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.networks.activity import NetworkActivity
from ovnk_dynamic.activity import DynamicActivity


class DynamicAllocationFeature(Feature):
    name = "dynamic"
    required_flags = ("enable-multi-network", "enable-network-segmentation",
                      "enable-dynamic-udn-allocation")

    @hookimpl
    def ovnk_network_activity(self, config: Config, informers: InformerFactory
                              ) -> NetworkActivity:
        """UDN/CUDN networks active only on nodes that use them (plus the grace period)."""
        return DynamicActivity(informers, config.udn_deletion_grace_period)
