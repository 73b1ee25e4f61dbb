"""NetworkPolicy and MultiNetworkPolicy: one engine, two feature plugins.

``networkpolicy`` (on by default, as upstream's): Kubernetes NetworkPolicy on the default
network and every primary UDN.  ``multinetworkpolicy`` (``--enable-multi-networkpolicy``):
MultiNetworkPolicy on secondary Layer2/Layer3/Localnet networks.  Zone only
(``ovnk_zone_controllers``, ``ovnk_zone_pod_port``): one controller per kind renders its
policies on every network (``controller``, ``policy_kinds``), and each pod's port on such a
network joins the groups of the policies that select it (``membership``).  Each kind owns
its rows under its own feature name, so turning one off removes its rows only.
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
from ovnk_networkpolicy.multi_policy import MultiNetworkPolicyKind
from ovnk_networkpolicy.policy_kinds import NetworkPolicyKind, PolicyKind
from ovnk_networkpolicy.zone_networks import ZoneNetworks, hairpin_ips


class _PolicyFeature(Feature):
    """The zone half both kinds share: their controller and their pods' port links."""

    def __init__(self, config: Config) -> None:
        super().__init__(config)
        self._zone: tuple[ZoneContext, PolicyCache] | None = None

    def _start(self, context: ZoneContext, kind: PolicyKind,
               hairpin: list[str]) -> PolicyController:
        controller = PolicyController(context, kind, hairpin)
        context.on_nb_capabilities_changed(lambda _nb: controller.nb_changed())
        self._zone = (context, PolicyCache(controller.policies, kind))
        return controller

    @hookimpl
    def ovnk_zone_pod_port(self, pod: dict[str, Any], attachment: PodAttachment,
                           netinfo: NetInfo, owner: Owner, port: DesiredRow
                           ) -> PodPortExtras | None:
        if self._zone is None:
            return None
        context, cache = self._zone
        return pod_port_links(cache, context.row_exists, pod, attachment, netinfo)


class NetworkPolicyFeature(_PolicyFeature):
    name = "networkpolicy"
    rbac_rules = {"zone": [{"apiGroups": ["networking.k8s.io"],
                            "resources": ["networkpolicies"],
                            "verbs": ["get", "list", "watch"]}]}

    @hookimpl
    def ovnk_zone_controllers(self, context: ZoneContext) -> list[Controller]:
        networks = ZoneNetworks(context)
        kind = NetworkPolicyKind(networks.of_namespace, networks.all, scope_of=networks.scope,
                                 gone=networks.gone)
        controller = self._start(context, kind, hairpin_ips(context))

        def network_changed(network: str) -> None:
            networks.saw(network)
            controller.network_changed(network)

        context.on_networks_changed(network_changed)
        return [controller.controller]


class MultiNetworkPolicyFeature(_PolicyFeature):
    name = "multinetworkpolicy"
    required_flags = ("enable-multi-network", "enable-multi-networkpolicy")
    rbac_rules = {"zone": [{"apiGroups": ["k8s.cni.cncf.io"],
                            "resources": ["multi-networkpolicies"],
                            "verbs": ["get", "list", "watch"]}]}

    @hookimpl
    def ovnk_zone_controllers(self, context: ZoneContext) -> list[Controller]:
        # the hairpin ACLs of a secondary network's clusterPortGroup (its first policy's):
        # allow-related ACLs, so that its switches track connections (membership.py)
        controller = self._start(context, MultiNetworkPolicyKind(context),
                                 hairpin_ips(context))
        context.on_networks_changed(controller.network_changed)
        return [controller.controller]
