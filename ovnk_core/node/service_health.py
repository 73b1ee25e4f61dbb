"""Health-check node ports of ``externalTrafficPolicy: Local`` LoadBalancer services.

A cloud load balancer sends a service's traffic only to nodes that have an endpoint of it
when its policy is ``Local``; it learns which by probing ``spec.healthCheckNodePort`` (which
the API server allocates) on every node.  As kube-proxy and upstream
(``pkg/node/healthcheck_service.go``) do, every node agent serves that port in the node's
host namespace (``health_server``), answering with the number of the service's ready
endpoints on this node: the distinct addresses of the ready endpoints whose ``nodeName`` is
this node, in the service's default EndpointSlices (``kubernetes.io/service-name``).  A
service of a primary user-defined network counts the same way: its default slices list its
pods with their nodes (the mirrored slices only re-address them).

Level-driven: Service and EndpointSlice events enqueue the service's key; ``reconcile``
reads both from the informers and converges that service's listener (opened, moved to a new
port, count updated, or closed).  A port that cannot be opened gets upstream's Warning event
``FailedToStartServiceHealthcheck`` on the Service and is retried with backoff; other
services are not held up.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from ovnk_core.annotations.endpointslices import SERVICE_NAME_LABEL
from ovnk_core.errors import TemporaryError
from ovnk_core.kube.client import JSON
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import ENDPOINTSLICES, SERVICES
from ovnk_core.node.health_server import HealthCheckPortError, HealthCheckServer

log = logging.getLogger(__name__)
SERVICE_INDEX = "service"
FAILED_REASON = "FailedToStartServiceHealthcheck"  # upstream's (and kube-proxy's) reason


def health_check_port(service: Mapping[str, Any] | None) -> int | None:
    """The port the service's health check is served on here: ``healthCheckNodePort`` of a
    ``LoadBalancer`` service with ``externalTrafficPolicy: Local``; ``None`` otherwise."""
    spec = (service or {}).get("spec")
    if not isinstance(spec, Mapping) or spec.get("type") != "LoadBalancer" or \
            spec.get("externalTrafficPolicy") != "Local":
        return None
    port = spec.get("healthCheckNodePort")
    if isinstance(port, int) and not isinstance(port, bool) and 0 < port <= 65535:
        return port
    return None


def local_ready_endpoints(slices: Iterable[Mapping[str, Any]], node: str) -> int:
    """The distinct addresses of the ready endpoints on ``node`` (a missing ``ready``
    condition counts as ready, as upstream's ``IsEndpointReady``)."""
    found: set[str] = set()
    for slice_ in slices:
        endpoints = slice_.get("endpoints")
        for endpoint in endpoints if isinstance(endpoints, list) else ():
            if not isinstance(endpoint, Mapping) or endpoint.get("nodeName") != node:
                continue
            conditions = endpoint.get("conditions")
            ready = conditions.get("ready") if isinstance(conditions, Mapping) else None
            if ready is False:
                continue
            addresses = endpoint.get("addresses")
            for address in addresses if isinstance(addresses, list) else ():
                try:
                    found.add(str(ipaddress.ip_address(str(address))))
                except ValueError:
                    continue
    return len(found)


def slice_service_key(slice_: JSON) -> list[str]:
    """The key of the service a default-network EndpointSlice belongs to."""
    meta = slice_.get("metadata") or {}
    service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
    return [f"{meta.get('namespace')}/{service}"] if service else []


class ServiceHealthChecks:
    """The node agent's health-check controller (``node-service-health-<node>``)."""

    def __init__(self, informers: InformerFactory, node: str, netns: str | None,
                 recorder: EventRecorder | None = None,
                 server: HealthCheckServer | None = None) -> None:
        """:param netns: the node's network namespace, where the ports are opened
            (``None``: the agent's own).
        :param recorder: for the Warning event of a port that cannot be opened."""
        self.node = node
        self.recorder = recorder
        self.server = server or HealthCheckServer(netns)
        self.controller = Controller(f"node-service-health-{node}", self.reconcile)
        self.services = informers.get(SERVICES)
        self.slices = informers.get(ENDPOINTSLICES,
                                    indexers={SERVICE_INDEX: slice_service_key})
        self.controller.watch(self.services, primary=True)
        self.controller.watch(self.slices, key_func=slice_service_key)

    def reconcile(self, key: str) -> None:
        service = self.services.get(key)
        port = health_check_port(service)
        if service is None or port is None:
            self.server.remove(key)
            return
        count = local_ready_endpoints(self.slices.peek_by_index(SERVICE_INDEX, key),
                                      self.node)
        try:
            self.server.ensure(key, port, count)
        except HealthCheckPortError as exc:
            message = (f"node {self.node} failed to start healthcheck \"{key}\" on port "
                       f"{port}: {exc.strerror}")
            if self.recorder is not None:
                self.recorder.event(service, WARNING, FAILED_REASON, message)
            raise TemporaryError(message) from None

    def start(self) -> None:
        """Start the controller (the informers belong to the agent's factory)."""
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        self.server.close()
