"""NetworkPolicy: Kubernetes NetworkPolicy on the default network and every primary UDN.

Zone only (``ovnk_zone_controllers``, ``ovnk_zone_pod_port``): one controller renders the
policies of every network (``controller``), and each pod's primary-network port joins the
groups of the policies that select it (``membership``).
"""

from __future__ import annotations

from typing import Any

from ovnk_core import hookimpl
from ovnk_core.config import Config
from ovnk_core.contexts import ZoneContext
from ovnk_core.feature import Feature
from ovnk_core.kube.controller import Controller
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import DesiredRow
from ovnk_core.ovn.ownership import Owner
from ovnk_core.pod_port import PodPortExtras
from ovnk_core.render_state import PodAttachment
from ovnk_networkpolicy.controller import PolicyController
from ovnk_networkpolicy.membership import PolicyCache, pod_port_links
from ovnk_networkpolicy.zone_networks import ZoneNetworks, hairpin_ips


class NetworkPolicyFeature(Feature):
    name = "networkpolicy"
    rbac_rules = {"zone": [{"apiGroups": ["networking.k8s.io"],
                            "resources": ["networkpolicies"],
                            "verbs": ["get", "list", "watch"]}]}

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self._zone: tuple[ZoneContext, PolicyCache] | None = None

    @hookimpl
    def ovnk_zone_controllers(self, context: ZoneContext) -> list[Controller]:
        networks = ZoneNetworks(context)
        controller = PolicyController(context, networks.of_namespace, networks.all,
                                      hairpin_ips(context), scope_of=networks.scope,
                                      gone=networks.gone)

        def network_changed(network: str) -> None:
            networks.saw(network)
            controller.network_changed(network)

        context.on_networks_changed(network_changed)
        context.on_nb_capabilities_changed(lambda _nb: controller.nb_changed())
        self._zone = (context, PolicyCache(controller.policies))
        return [controller.controller]

    @hookimpl
    def ovnk_zone_pod_port(self, pod: dict[str, Any], attachment: PodAttachment,
                           netinfo: NetInfo, owner: Owner, port: DesiredRow
                           ) -> PodPortExtras | None:
        if self._zone is None:
            return None
        context, cache = self._zone
        return pod_port_links(cache, context.row_exists, pod, attachment, netinfo)
