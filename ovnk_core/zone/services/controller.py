"""The services controller of a zone: one Service at a time, in whatever network it belongs to.

Upstream runs one shared services controller with a registration per network
(``ovn-lb-controller``); here the queue holds service keys (``<ns>/<name>``)
and each reconcile works out the service's network itself, level-driven:

* the network is the primary network of the service's namespace (the default
  network when it has none; none at all while a namespace that requires a
  user-defined network waits for it);
* the endpoints are that network's EndpointSlices, found through an index
  (``<network>|<ns>/<name>``): ``kubernetes.io/service-name`` slices on the
  default network, mirrored slices (label ``k8s.ovn.org/service-name`` and
  annotation ``k8s.ovn.org/endpointslice-network``) on a user-defined one;
* its rows are written under the service's owner in that network, and the
  rows it has in any other network (the namespace changed network, the
  network went) are deleted in the same transaction.

A network that is rendered anew (nodes came or went, it was created or
removed) enqueues its services; an EndpointSlice change enqueues only its
service, so endpoint churn rewrites only that service's load balancers.
"""

from __future__ import annotations

import ipaddress
import logging
import threading
from collections.abc import Iterable
from typing import Protocol

from ovnk_core.annotations.endpointslices import (
    NETWORK_ANNOTATION,
    SERVICE_NAME_LABEL,
    UDN_SERVICE_NAME_LABEL,
)
from ovnk_core.errors import NotReady
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import ENDPOINTSLICES, NAMESPACES, SERVICES, split_key
from ovnk_core.networks.addressing import HOST_MASQUERADE_OFFSET, OVN_SERVICE_HAIRPIN_OFFSET
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME
from ovnk_core.ovn.declarative import DesiredRow, MissingReference, Ref
from ovnk_core.ovn.group_commit import GroupCommit
from ovnk_core.ovn.nb import NbConnectError
from ovnk_core.ovn.ownership import Owner
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import NetworkState, NodeState
from ovnk_core.topology import ServiceAttachment, Topology
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL
from ovnk_core.zone import owners
from ovnk_core.zone.services.desired import carries_services, load_balancer_rows
from ovnk_core.zone.services.lb_config import (
    NodeAddresses,
    ServiceSpec,
    base_options,
    build_configs,
    cluster_load_balancers,
    node_load_balancers,
    parse_service,
)

log = logging.getLogger(__name__)

CONTROLLER_NAME = "ovn-lb-controller"
INVALID_SERVICE_REASON = "InvalidService"
INTERNAL_POLICY_NOT_APPLIED_REASON = "InternalTrafficPolicyNotApplied"
WORKERS = 4  # services reconciled at once (their writes share transactions: GroupCommit)


def slice_index_keys(slice_: JSON) -> list[str]:
    """``<network>|<ns>/<service>`` of an EndpointSlice (none for a slice of no service)."""
    meta = slice_.get("metadata") or {}
    namespace = meta.get("namespace", "")
    labels = meta.get("labels") or {}
    service = labels.get(SERVICE_NAME_LABEL)
    if service:
        return [f"{DEFAULT_NETWORK_NAME}|{namespace}/{service}"]
    service = labels.get(UDN_SERVICE_NAME_LABEL)
    network = (meta.get("annotations") or {}).get(NETWORK_ANNOTATION)
    if service and network:
        return [f"{network}|{namespace}/{service}"]
    return []


def slice_service_keys(slice_: JSON) -> list[str]:
    return [key.split("|", 1)[1] for key in slice_index_keys(slice_)]


def _namespace_of(obj: JSON) -> list[str]:
    return [str((obj.get("metadata") or {}).get("namespace", ""))]


class ServicesController:
    """Keeps every Service's load balancers in its network.

    :param zone: what the controller needs of the zone controller (``ZoneView``).
    """

    def __init__(self, informers: InformerFactory, zone: ZoneView, nb: NbWriter,
                 recorder: EventRecorder | None = None, workers: int = WORKERS,
                 commit: GroupCommit | None = None) -> None:
        self.zone = zone
        self.nb = nb
        # the workers' services go out together while a transaction is in flight (with the
        # zone's pods, when the zone shares its GroupCommit): one round trip per service
        # would cost more than computing its rows
        self.commit = commit if commit is not None else GroupCommit(nb)
        self.recorder = recorder
        self.services = informers.get(SERVICES, indexers={"namespace": _namespace_of})
        self.slices = informers.get(ENDPOINTSLICES, indexers={"service": slice_index_keys})
        self.namespaces = informers.get(NAMESPACES)
        self._lock = threading.Lock()
        self._reported: dict[str, str] = {}
        self._noticed: dict[str, str] = {}
        self.controller = Controller(CONTROLLER_NAME, self.reconcile, workers=workers,
                                     initial_sync=self.sync)
        self.controller.watch(self.services, primary=True)
        self.controller.watch(self.slices, key_func=slice_service_keys)
        self.controller.watch(self.namespaces, key_func=self._services_of_namespace,
                              relevant=_label_changed)

    # -- what to enqueue -------------------------------------------------------------------
    def _services_of_namespace(self, namespace: JSON) -> list[str]:
        return self.services.keys_by_index("namespace", namespace["metadata"]["name"])

    def network_rendered(self, network: str) -> None:
        """A network was rendered anew or removed: its services are reconciled."""
        keys: set[str] = set()
        if network == DEFAULT_NETWORK_NAME:
            keys.update(self.services.list_keys())
        else:
            for namespace in self.zone.namespaces_of_network(network):
                keys.update(self.services.keys_by_index("namespace", namespace))
        for owner in self.nb.owners(controller=owners.controller_name(network)):
            service = owners.scope_service(owner)
            if service is not None:
                keys.add(service)
        for key in keys:
            self.controller.queue.add(key)

    def repair(self, owner: Owner) -> bool:
        """Another writer changed rows of ``owner``: reconcile its service (True when
        ``owner`` is a service's)."""
        service = owners.scope_service(owner)
        if service is None or owners.network_of_controller(owner.controller) is None:
            return False
        self.controller.queue.add(service)
        return True

    def sync(self) -> None:
        """Startup: services that have rows in NB (some may be gone) are reconciled too."""
        for key in self.nb.owner_keys():
            if owners.scope_service(Owner("", key)) is not None:
                self.controller.queue.add(key)

    # -- reconcile -------------------------------------------------------------------------
    def network_of_namespace(self, namespace: str) -> str | None:
        """The network a namespace's services belong to: its primary network, else the
        default network; ``None`` while a namespace that requires a primary user-defined
        network has none."""
        network = self.zone.primary_network_of_namespace(namespace)
        if network is not None:
            return network
        ns = self.namespaces.peek(namespace)
        labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
        return None if PRIMARY_NAMESPACE_LABEL in labels else DEFAULT_NETWORK_NAME

    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        if namespace is None:
            return  # not a namespaced key: nothing of ours
        service = self.services.peek(key)
        state = None
        if service is None:
            with self._lock:  # a service created again under this name is reported again
                self._reported.pop(key, None)
                self._noticed.pop(key, None)
        else:
            network = self.network_of_namespace(namespace)
            state = self.zone.rendered_network(network) if network is not None else None
            if state is None:
                # its network is not rendered yet (the zone is starting, a UDN is coming):
                # leave its rows as they are; the network's rendering enqueues it again.
                # A network that is removed takes its services' rows with it.
                return
        # rows it has anywhere go, unless the network it belongs to wants them below
        desired: dict[Owner, list[DesiredRow]] = {
            owner: [] for owner in self.nb.owners(owner_key=key)
            if owners.network_of_controller(owner.controller) is not None}
        topology = self.zone.topology_of(state) if state is not None else None
        if service is not None and state is not None and topology is not None \
                and carries_services(topology, state.netinfo):
            owner = owners.service_owner(state.netinfo, namespace, name)
            spec = parse_service(service)
            desired[owner] = self._rows(state, topology, spec, owner) if spec else []
            if spec is not None:
                self._report(service, key, spec)
        if not desired:
            return
        try:
            self.commit.apply(desired)
        except NbConnectError as exc:  # waits for NB (retried at once when it is back)
            raise NotReady(f"service {key}: {exc}", backoff=True) from None
        except MissingReference as exc:  # the network's groups or a node's router
            raise NotReady(f"service {key}: {exc}") from None

    def _rows(self, state: NetworkState, topology: Topology, spec: ServiceSpec,
              owner: Owner) -> list[DesiredRow]:
        netinfo = state.netinfo
        slices = self.slices.peek_by_index("service", f"{netinfo.name}|{spec.key}")
        configs = build_configs(spec, slices, [s.cidr for s in netinfo.subnets])
        families = {s.cidr.version for s in netinfo.subnets}
        masquerade = [s for s in state.masquerade_subnets if s.version in families]
        options = base_options([str(s.network_address + OVN_SERVICE_HAIRPIN_OFFSET)
                                for s in masquerade], spec.affinity_timeout)
        balancers = cluster_load_balancers(spec, configs.cluster, netinfo.name, options)
        attachments: dict[str, ServiceAttachment] = {}
        if configs.per_node:
            host_masquerade = tuple(str(s.network_address + HOST_MASQUERADE_OFFSET)
                                    for s in masquerade)
            nodes = self.zone.node_states(netinfo.name)
            for node in nodes:
                attachment = topology.service_attachment(state, node)
                if attachment is not None:
                    attachments[node.name] = attachment
            shared = shared_switches(attachments.values())
            for node in nodes:
                attachment = attachments.get(node.name)
                if attachment is None:
                    continue
                addresses = NodeAddresses(node.name, node_ips(node, families), host_masquerade)
                balancers += node_load_balancers(
                    spec, configs.per_node, netinfo.name, addresses, options,
                    shared_switch=any(ref in shared for ref in attachment.switches))
            if shared and any(config.internal_local for config in configs.per_node):
                self._notice(spec.key, INTERNAL_POLICY_NOT_APPLIED_REASON,
                             f"service {spec.key}: internalTrafficPolicy Local is not applied "
                             f"in network {netinfo.name}: one switch spans its nodes, so its "
                             "pods reach every endpoint (traffic from outside still follows "
                             "externalTrafficPolicy)")
        return load_balancer_rows(netinfo, owner, balancers, attachments)

    def _notice(self, key: str, reason: str, text: str) -> None:
        """A Warning about a service that is balanced, but not quite as it asks (once per
        distinct text)."""
        with self._lock:
            if self._noticed.get(key) == text:
                return
            self._noticed[key] = text
        log.warning("%s", text)
        service = self.services.peek(key)
        if self.recorder is not None and service is not None:
            self.recorder.event(service, WARNING, reason, text)

    def _report(self, service: JSON, key: str, spec: ServiceSpec) -> None:
        message = "; ".join(spec.problems)
        with self._lock:
            if self._reported.get(key, "") == message:
                return
            self._reported[key] = message
        if not message:
            return
        text = f"service {key}: left out of its load balancers: {message}"
        log.warning("%s", text)
        if self.recorder is not None:
            self.recorder.event(service, WARNING, INVALID_SERVICE_REASON, text)

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()


def shared_switches(attachments: Iterable[ServiceAttachment]) -> set[Ref]:
    """Switches that more than one node's attachment names (a network whose one switch
    spans its nodes, in a single zone): per-node load balancers there must agree."""
    seen: set[Ref] = set()
    shared: set[Ref] = set()
    for attachment in attachments:
        for ref in set(attachment.switches):
            (shared if ref in seen else seen).add(ref)
    return shared


def node_ips(node: NodeState, families: Iterable[int]) -> tuple[str, ...]:
    """The node's gateway IPs of the network's families (its NodePort addresses)."""
    if node.gateway is None:
        return ()
    wanted = set(families)
    found = []
    for text in node.gateway.ips:
        try:
            ip = ipaddress.ip_interface(text).ip
        except ValueError:
            continue
        if ip.version in wanted:
            found.append(str(ip))
    return tuple(found)


def _label_changed(old: JSON | None, new: JSON | None) -> bool:
    def label(obj: JSON | None) -> bool:
        return obj is not None and PRIMARY_NAMESPACE_LABEL in (
            (obj.get("metadata") or {}).get("labels") or {})
    return old is None or new is None or label(old) != label(new)


class ZoneView(Protocol):
    """What the services controller reads from the zone controller."""

    def rendered_network(self, name: str) -> NetworkState | None: ...

    def topology_of(self, state: NetworkState) -> Topology | None: ...

    def node_states(self, network: str) -> list[NodeState]: ...

    def primary_network_of_namespace(self, namespace: str) -> str | None: ...

    def namespaces_of_network(self, network: str) -> list[str]: ...
