"""Feature plugin object for dynamic UDN node allocation: its ``NetworkActivity``, and
its reports in the cluster manager (``status``)."""

from __future__ import annotations

from ovnk_core import hookimpl
from ovnk_core.config import Config
from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.feature import Feature
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.networks.activity import NetworkActivity
from ovnk_dynamic.activity import DynamicActivity
from ovnk_dynamic.status import DynamicStatus


class DynamicAllocationFeature(Feature):
    name = "dynamic"
    required_flags = ("enable-multi-network", "enable-network-segmentation",
                      "enable-dynamic-udn-allocation")

    @hookimpl
    def ovnk_network_activity(self, config: Config, informers: InformerFactory
                              ) -> NetworkActivity:
        """UDN/CUDN networks active only on nodes that use them (plus the grace period)."""
        return DynamicActivity(informers, config.udn_deletion_grace_period)

    @hookimpl
    def ovnk_cluster_manager_controllers(self, context: ClusterManagerContext
                                         ) -> list[Controller]:
        """``NodesSelected`` on each UDN/CUDN, the nodes-rendered gauge, and an event per
        node a network is rendered on or leaves."""
        return [DynamicStatus(context).controller]
