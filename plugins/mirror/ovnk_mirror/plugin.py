"""Feature plugin object for the EndpointSlice mirror (entry point ``mirror``).

Loaded only with network segmentation (or when named explicitly); it adds one
controller to the cluster-manager process and nothing to the others.
"""

from __future__ import annotations

from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.feature import Feature
from ovnk_core.hookspecs import hookimpl
from ovnk_core.kube.controller import Controller


class MirrorFeature(Feature):
    name = "mirror"
    required_flags = ("enable-multi-network", "enable-network-segmentation")

    @hookimpl
    def ovnk_cluster_manager_controllers(self, context: ClusterManagerContext) -> list[Controller]:
        from ovnk_mirror.controller import EndpointSliceMirror

        return [EndpointSliceMirror(context).controller]
