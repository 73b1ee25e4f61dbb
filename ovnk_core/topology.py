"""The contract a topology plugin implements.

A topology (a bundled one or one shipped by a third party) is a class
registered in the ``ovnk.topologies`` entry-point group under the same name
that networks use in their netconf ``topology`` key::

    [project.entry-points."ovnk.topologies"]
    evpn = "ovnk_evpn.topology:EvpnTopology"

The core instantiates it once with the ``Config`` and registers the instance
with the plugin manager, so a topology may also implement any hook of
``ovnk_core.hookspecs``.

Rendering into OVN Northbound is three pure methods, one per owner scope
the zone controller converges: ``build_network`` (rows shared by the whole
network), ``build_node`` (one node's rows in the network) and ``build_pod``
(one pod's attachment).  They return ``DesiredRow`` lists; the core applies
them, deletes what an owner no longer has, and removes every row of a
node, pod or network that is gone.  A topology that does not render (yet)
leaves them as they are here: its networks are parsed and allocated, and
the zone reports that nothing is rendered for them.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Protocol

from ovnk_core.config import Config
from ovnk_core.networks.addressing import IPAddress
from ovnk_core.networks.netconf import NetConf
from ovnk_core.networks.netinfo import NetInfo

if TYPE_CHECKING:
    from ovnk_core.ovn.declarative import DesiredRow, Ref
    from ovnk_core.render_state import NetworkState, NodeState, PodAttachment
    from ovnk_core.udn_section import UdnSection


class RenderingNotSupported(Exception):
    """The topology has no Northbound rendering; its networks stay unrendered."""


@dataclass(frozen=True)
class PodRouting:
    """The gateway and routes a pod's ``k8s.ovn.org/pod-networks`` entry carries.

    :ivar gateway_ips: the pod's default gateways through this network (one per family),
        empty for a network that is not the pod's way out.
    :ivar routes: ``(destination CIDR, next hop)`` pairs, as strings.
    :ivar ipv6_lla_gateway_ip: the link-local gateway of an IPv6 pod, when the topology's
        router answers there (empty otherwise).
    """

    gateway_ips: tuple[str, ...] = ()
    routes: tuple[tuple[str, str], ...] = ()
    ipv6_lla_gateway_ip: str = ""


@dataclass(frozen=True)
class ServiceAttachment:
    """Where one node's service load balancers go in a network.

    :ivar switches: the logical switches the node's pods are on (references to rows the
        topology builds, of the network or the node owner).  They get the network's
        ``clusterLBGroup`` and ``clusterSwitchLBGroup``, and the node's per-node load
        balancers for traffic from pods.
    :ivar routers: the node's gateway routers: ``clusterLBGroup``,
        ``clusterRouterLBGroup`` and the per-node load balancers for traffic from outside
        (NodePort, externalIPs).
    """

    switches: tuple[Ref, ...] = ()
    routers: tuple[Ref, ...] = ()


class NodeHost(Protocol):
    """What a node agent can tell a topology about its own host, read when asked."""

    def bridge_mappings(self) -> Mapping[str, str]:
        """Physical network name → OVS bridge, from ``external_ids:ovn-bridge-mappings``
        of the node's Open_vSwitch (what ovn-controller bridges OVN's physical ports with)."""
        ...

    def gateway_physical_network(self) -> str | None:
        """The physical network of the node's shared-gateway bridge (``breth0``), whose
        flows the node agent owns and which carry only the gateway's traffic; ``None``
        without a gateway."""
        ...


class Topology(abc.ABC):
    """Base class of every topology plugin.

    :cvar name: the topology string networks use (lower case), equal to the entry-point name.
    :cvar supports_primary: whether the topology may carry a network with role ``primary``.
    :cvar udn_section: the section of UserDefinedNetworks and ClusterUserDefinedNetworks
        this topology owns (``ovnk_core.udn_section.UdnSection``: the ``topology`` value
        that selects it, its CRD schema, its admission rules and its NAD keys), one
        stateless instance.  ``None`` (the default): no UDN/CUDN can ask for this
        topology; its networks come from NADs written by hand.
    :cvar rbac_rules: Kubernetes API rights the plugin's hooks need beyond what their
        component's identity has, as ``Feature.rbac_rules`` (component → PolicyRules).
    """

    name: ClassVar[str]
    supports_primary: ClassVar[bool] = True
    udn_section: ClassVar[UdnSection | None] = None
    rbac_rules: ClassVar[Mapping[str, Sequence[Mapping[str, Sequence[str]]]]] = {}

    def __init__(self, config: Config) -> None:
        self.config = config

    def default_mtu(self) -> int:
        """MTU of a network that does not set one (the cluster MTU unless overridden)."""
        return self.config.mtu

    @abc.abstractmethod
    def parse_netconf(self, netconf: NetConf) -> NetInfo:
        """Turn a netconf of this topology into a ``NetInfo``.

        Called whenever a NAD naming this topology is added or changed, in any
        component.  Must be pure: no I/O, no state kept between calls.

        :param netconf: the common keys already parsed by the core, plus ``raw``
            (the whole document) for the topology's own keys.
        :returns: the network's ``NetInfo``.
        :raises NetworkConfigError: when the netconf is invalid for this topology; the
            message is shown on the network's status (and the NAD is ignored), other
            networks are unaffected.
        """

    def pod_routing(self, netinfo: NetInfo, gateways: Sequence[IPAddress]) -> PodRouting:
        """The gateway and routes of a pod's entry for this network.

        **When:** in the cluster manager, each time a pod gets its pod-networks entry for a
        network of this topology (once per pod and network), and in the zone controller,
        which checks that an entry is exactly what this gives.  Must be pure and quick.

        :param netinfo: the network (as this topology parsed it).
        :param gateways: the gateway address of each subnet the pod got an address in (the
            subnet's first host), in the order of the pod's addresses.
        :returns: empty (``PodRouting()``) by default: no routes, no gateway — right for a
            secondary network without a router.  ``ovnk_core.pods.routing`` has the routes
            upstream gives primary networks, for topologies to reuse.
        """
        return PodRouting()

    renders: ClassVar[bool] = False
    """Whether this topology implements the ``build_*`` methods below."""

    renders_default_network: ClassVar[bool] = True
    """Whether it can render the cluster default network (``--default-network-topology``):
    per-node subnets, gateway routers and management ports on every node.  A topology for
    user-defined networks only sets ``False``; startup then refuses it as the default
    network's topology, with the reason."""

    interconnect: ClassVar[bool] = False
    """Whether the topology renders interconnect (one zone per node): with
    ``NetworkState.interconnect`` its ``build_network`` adds the network's transit switch,
    ``build_node`` adds a local node's port on it, and ``build_node`` is also called for
    every node of the other zones (``NodeState.remote``) to render its remote port and the
    routes to it.  A topology without it is given only the zone's own nodes."""

    renders_remote_pods: ClassVar[bool] = False
    """Whether, with ``NetworkState.interconnect``, the pods on the other zones' nodes get
    rows in this zone too (``build_remote_pod``): a topology whose one switch spans the
    zones (the switch is itself the zones' transit switch) needs a ``remote`` port per
    such pod.  A topology without it is given only the zone's own pods."""

    serves_services: ClassVar[bool] = False
    """Whether the default network and primary networks of this topology carry Kubernetes
    Services: the core then adds the network's load balancer groups to its rows and asks
    ``service_attachment`` where each node's load balancers go."""

    def service_attachment(self, network: NetworkState, node: NodeState
                           ) -> ServiceAttachment | None:
        """The switches and gateway routers that serve services on ``node``.

        **When:** in the zone controller, with ``build_network``/``build_node`` (to give those
        rows the load balancer groups) and each time a service is reconciled (to link its
        per-node load balancers), only for networks with ``serves_services``.  Must be pure
        and name only rows that ``build_network``/``build_node`` return for the same
        arguments.

        :returns: ``None`` while the node has nothing to attach to (its gateway is not
            published yet, say); the default: never.
        """
        return None

    def node_attachment_problem(self, netinfo: NetInfo, host: NodeHost) -> str | None:
        """Why a pod of this network cannot be attached on this node (``None``: it can).

        **When:** in the node agent, at each CNI ADD of a pod with an interface on a network
        of this topology, before any of the pod's interfaces is made.  Work here runs on the
        CNI path: keep it to what ``host`` answers.  A problem refuses the CNI ADD with the
        text (the kubelet reports it on the pod as ``FailedCreatePodSandBox``) and the agent
        puts it once on its Node as a Warning event.

        :returns: ``None`` by default: nothing of the host stands in the way.
        """
        return None

    def build_network(self, network: NetworkState) -> list[DesiredRow]:
        """Rows shared by the whole network (its routers, join switch, ...).

        Owned by ``ovnk_core.zone.owners.network_owner(network.netinfo)``; converged in
        one transaction before any node of the network.  Must be pure.

        :raises RenderingNotSupported: the topology does not render into NB.
        """
        raise RenderingNotSupported(self.name)

    def build_node(self, network: NetworkState, node: NodeState) -> list[DesiredRow]:
        """Rows of one node in the network (its switch, router ports, gateway ...).

        Owned by ``node_owner(network.netinfo, node.name)``.  Called for every node of the
        zone whenever the network or the node changes; a node whose facts are not all
        published yet (``node.gateway`` is ``None``) gets what can be built without them.
        Rows may link into rows of the network owner.  Must be pure.
        """
        raise RenderingNotSupported(self.name)

    def build_remote_pod(self, network: NetworkState, pod: PodAttachment
                         ) -> list[DesiredRow]:
        """Rows of the attachment of a pod on another zone's node (interconnect, topologies
        with ``renders_remote_pods`` only).

        Owned by the pod's owner, as ``build_pod``'s rows (a node moving between zones
        turns one into the other).  The zone does not check the addresses (the pod's zone
        does) nor asks features for the pod's rows.  Must be pure.

        :returns: nothing by default.
        """
        return []

    def build_pod(self, network: NetworkState, pod: PodAttachment) -> list[DesiredRow]:
        """Rows of one pod's attachment to the network (its logical switch port).

        Owned by ``pod_owner(network.netinfo, pod.namespace, pod.name)``; the addresses
        come from the pod's ``k8s.ovn.org/pod-networks`` entry (allocated by the cluster
        manager), never from the topology, and have been checked by the zone
        (``ovnk_core.zone.attachment_checks``: the pod may use the network, the IPs are the
        node's or network's and not reserved nor another pod's, the MAC is a unicast
        MAC).  Must be pure.
        """
        raise RenderingNotSupported(self.name)
