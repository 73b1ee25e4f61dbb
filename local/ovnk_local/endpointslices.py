"""The EndpointSlice controller of the local cluster, shaped like upstream's.

For each Service with a selector it keeps the default EndpointSlices:
label ``kubernetes.io/service-name``, ``endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io``, an owner reference to the Service,
``generateName: <service>-``, one address type per slice, at most 100
endpoints per slice, and for every selected pod with an IP of that family an
endpoint with its ``ready``/``serving``/``terminating`` conditions, node name
and target reference.  Named target ports are resolved per pod, and pods
that resolve to different port sets go to different slices, as upstream.
The EndpointSlice mirror (a feature plugin) works from these slices.
"""

from __future__ import annotations

import ipaddress
import logging
from collections import defaultdict
from typing import Any

from ovnk_core.annotations.endpointslices import (
    DEFAULT_CONTROLLER,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
)
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.errors import AlreadyExists, Conflict, NotFound
from ovnk_core.kube.informer import Informer, index_by_namespace
from ovnk_core.kube.resources import ENDPOINTSLICES, PODS, SERVICES, object_key, split_key

log = logging.getLogger(__name__)

CONTROLLER_NAME = DEFAULT_CONTROLLER
MAX_ENDPOINTS_PER_SLICE = 100


def selector_matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def pod_is_ready(pod: JSON) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


def resolve_ports(service: JSON, pod: JSON) -> tuple[tuple[str, str, int], ...] | None:
    """(name, protocol, port) of every service port for this pod; None if one is unresolvable."""
    container_ports: dict[str, int] = {}
    for container in (pod.get("spec") or {}).get("containers") or []:
        for port in container.get("ports") or []:
            if port.get("name"):
                container_ports[port["name"]] = int(port["containerPort"])
    resolved = []
    for port in (service.get("spec") or {}).get("ports") or []:
        target = port.get("targetPort", port.get("port"))
        if isinstance(target, str) and not target.isdigit():
            if target not in container_ports:
                return None
            number = container_ports[target]
        else:
            number = int(target)
        resolved.append((port.get("name", ""), port.get("protocol", "TCP"), number))
    return tuple(resolved)


def build_endpoint(pod: JSON, ip: str) -> JSON:
    meta = pod["metadata"]
    terminating = bool(meta.get("deletionTimestamp"))
    ready = pod_is_ready(pod)
    endpoint: JSON = {
        "addresses": [ip],
        "conditions": {"ready": ready and not terminating, "serving": ready,
                       "terminating": terminating},
        "targetRef": {"kind": "Pod", "namespace": meta["namespace"], "name": meta["name"],
                      "uid": meta.get("uid", "")},
    }
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        endpoint["nodeName"] = node
    return endpoint


def build_slices(service: JSON, pods: list[JSON]) -> list[JSON]:
    """The desired slices of one service (without names): one per family, port set and
    chunk of 100 endpoints, endpoints sorted by address."""
    spec = service.get("spec") or {}
    selector = spec.get("selector") or {}
    families = spec.get("ipFamilies") or ["IPv4"]
    groups: dict[tuple[str, tuple[tuple[str, str, int], ...]], list[JSON]] = defaultdict(list)
    for pod in pods:
        labels = pod.get("metadata", {}).get("labels") or {}
        if not selector_matches(selector, labels):
            continue
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            continue
        ports = resolve_ports(service, pod)
        if ports is None:
            continue
        for entry in (pod.get("status") or {}).get("podIPs") or []:
            ip = entry.get("ip")
            if not ip:
                continue
            family = "IPv4" if ipaddress.ip_address(ip).version == 4 else "IPv6"
            if family in families:
                groups[(family, ports)].append(build_endpoint(pod, ip))
    meta = service["metadata"]
    slices = []
    for (family, ports), endpoints in sorted(groups.items()):
        endpoints.sort(key=lambda e: ipaddress.ip_address(e["addresses"][0]))
        for start in range(0, len(endpoints), MAX_ENDPOINTS_PER_SLICE):
            slices.append({
                "addressType": family,
                "endpoints": endpoints[start:start + MAX_ENDPOINTS_PER_SLICE],
                "ports": [{"name": name, "protocol": protocol, "port": port}
                          for name, protocol, port in ports],
                "metadata": {"namespace": meta["namespace"],
                             "labels": {**(meta.get("labels") or {}),
                                        SERVICE_NAME_LABEL: meta["name"],
                                        MANAGED_BY_LABEL: CONTROLLER_NAME}},
            })
    return slices


def _comparable(slice_: JSON) -> Any:
    return (slice_.get("addressType"), slice_.get("endpoints") or [], slice_.get("ports") or [],
            (slice_.get("metadata") or {}).get("labels") or {})


class EndpointSliceController:
    def __init__(self, client: KubeClient, resync_period: float = 60.0) -> None:
        self.client = client
        self.services = Informer(client, SERVICES, resync_period=resync_period,
                                 indexers={"namespace": index_by_namespace})
        self.pods = Informer(client, PODS, resync_period=resync_period,
                             indexers={"namespace": index_by_namespace})
        self.slices = Informer(client, ENDPOINTSLICES, resync_period=resync_period,
                               label_selector=f"{MANAGED_BY_LABEL}={CONTROLLER_NAME}",
                               indexers={"service": self._slice_service_key})
        self.controller = Controller("endpointslice-controller", self.reconcile, workers=2)
        self.controller.watch(self.services, primary=True)
        self.controller.watch(self.pods, key_func=self._services_of_pod)
        self.controller.watch(self.slices, key_func=lambda s: self._slice_service_key(s))

    @staticmethod
    def _slice_service_key(slice_: JSON) -> list[str]:
        meta = slice_.get("metadata") or {}
        service = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        return [f"{meta.get('namespace')}/{service}"] if service else []

    def _services_of_pod(self, pod: JSON) -> list[str]:
        namespace = pod["metadata"].get("namespace")
        labels = pod["metadata"].get("labels") or {}
        # the namespace's services only, read in place (this runs for every pod event)
        return [object_key(svc) for svc in self.services.peek_by_index("namespace",
                                                                       str(namespace))
                if selector_matches((svc.get("spec") or {}).get("selector") or {}, labels)]

    def reconcile(self, key: str) -> None:
        namespace, name = split_key(key)
        service = self.services.get(key)
        existing = sorted(self.slices.by_index("service", key),
                          key=lambda s: s["metadata"]["name"])
        if service is None:
            for stale in existing:
                self._delete(stale)
            return
        if not (service.get("spec") or {}).get("selector"):
            # as upstream: a service without a selector gets its slices out of band (written
            # through the API by whoever manages it), whatever their labels say
            return
        desired = build_slices(service, self.pods.peek_by_index("namespace", str(namespace)))
        owner = {"apiVersion": "v1", "kind": "Service", "name": name,
                 "uid": service["metadata"].get("uid", ""), "controller": True,
                 "blockOwnerDeletion": True}
        unused = list(existing)
        for want in desired:
            want["metadata"]["ownerReferences"] = [owner]
            match = next((s for s in unused if _comparable(s) == _comparable(want)), None)
            if match is not None:
                unused.remove(match)
                continue
            reuse = next((s for s in unused if s.get("addressType") == want["addressType"]),
                         None)
            if reuse is not None:
                unused.remove(reuse)
                updated = dict(reuse, endpoints=want["endpoints"], ports=want["ports"])
                updated["metadata"] = dict(reuse["metadata"], labels=want["metadata"]["labels"],
                                           ownerReferences=[owner])
                try:
                    self.client.update(ENDPOINTSLICES, updated)
                except (Conflict, NotFound):
                    self.controller.requeue(key)
                continue
            want["metadata"]["generateName"] = f"{name}-"
            try:
                self.client.create(ENDPOINTSLICES, want, namespace=namespace)
            except (AlreadyExists, NotFound):
                return
        for stale in unused:
            self._delete(stale)

    def _delete(self, slice_: JSON) -> None:
        meta = slice_["metadata"]
        self.client.delete_if_exists(ENDPOINTSLICES, meta["name"], meta.get("namespace"))

    def start(self) -> None:
        for informer in (self.services, self.pods, self.slices):
            informer.start()
        self.controller.start()

    def stop(self) -> None:
        self.controller.stop()
        for informer in (self.services, self.pods, self.slices):
            informer.stop()
