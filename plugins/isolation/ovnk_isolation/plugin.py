"""UDN isolation: a primary-UDN pod is reachable on the default network only by its kubelet.

Zone (``ovnk_zone_controllers``, ``ovnk_zone_pod_port``): the ``SecondaryPods`` port group,
its ACLs and each isolated pod's membership and open ports (``zone``, ``ovn_acls``).
Node (``ovnk_node_controllers``): the host's nftables table ``inet ovn-kubernetes``
(``host_plugin``, ``host_isolation``).
"""

from __future__ import annotations

from typing import Any

from ovnk_core import hookimpl
from ovnk_core.contexts import ZoneContext
from ovnk_core.feature import Feature
from ovnk_core.kube.controller import Controller
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.capabilities import CURRENT
from ovnk_core.ovn.declarative import DesiredRow
from ovnk_core.ovn.ownership import Owner
from ovnk_core.pod_port import PodPortExtras
from ovnk_core.render_state import PodAttachment
from ovnk_isolation import zone
from ovnk_isolation.host_plugin import HostIsolationHooks


class IsolationFeature(HostIsolationHooks, Feature):
    name = "isolation"
    required_flags = ("enable-multi-network", "enable-network-segmentation")

    # the zone's context once its controllers are made: what its NB supports
    _zone: ZoneContext | None = None

    @hookimpl
    def ovnk_zone_controllers(self, context: ZoneContext) -> list[Controller]:
        self._zone = context
        return [zone.IsolationRows(context).controller]

    @hookimpl
    def ovnk_zone_pod_port(self, pod: dict[str, Any], attachment: PodAttachment,
                           netinfo: NetInfo, owner: Owner, port: DesiredRow
                           ) -> PodPortExtras | None:
        nb = self._zone.nb_capabilities if self._zone is not None else CURRENT
        return zone.pod_port_extras(pod, attachment, netinfo, owner, port, nb)
