"""Builders for what the mirror controller reads, for its tests and its benchmark.

``MirrorEnv`` wraps a client of an API server (the project's local one in
tests) and the context a mirror controller is built with: it creates the
namespaces, networks, pods, services and default slices a scenario needs, and
reads back the mirrors the controller wrote.  The networks it registers are Layer3:
the ``layer3`` topology must be installed (the ``test`` extra of ``ovnk-mirror`` brings it,
and ``ovnk-local`` for the API server the tests run on).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ovnk_core.annotations.endpointslices import (
    DEFAULT_CONTROLLER,
    MANAGED_BY_LABEL,
    SOURCE_ANNOTATION,
)
from ovnk_core.annotations.pod_networks import POD_NETWORKS_ANNOTATION, PodNetwork, serialize
from ovnk_core.contexts import ClusterManagerContext
from ovnk_core.kube.client import JSON, KubeClient
from ovnk_core.kube.resources import ENDPOINTSLICES, NAMESPACES, PODS, SERVICES
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until
from ovnk_mirror.controller import EndpointSliceMirror
from ovnk_mirror.mirror import MIRROR_CONTROLLER

CONFIG = udn_config()
DEFAULT_MANAGER = DEFAULT_CONTROLLER
POD_MAC = "0a:58:0a:84:02:04"


@dataclass
class MirrorEnv:
    """The API server's client, the running mirror controller and its network registry."""

    client: KubeClient
    context: ClusterManagerContext
    mirror: EndpointSliceMirror | None = None

    # -- the world the controller reads -------------------------------------------------------
    def namespace(self, name: str) -> None:
        self.client.create(NAMESPACES, {"metadata": {"name": name}})

    def primary_network(self, namespace: str, name: str = "l3-network",
                        network: str | None = None) -> str:
        """Register a Layer3 primary network whose NAD is ``namespace/name``; its name."""
        nad_key = f"{namespace}/{name}"
        netconf = {"cniVersion": "1.1.0", "type": "ovn-k8s-cni-overlay",
                   "name": network or name, "netAttachDefName": nad_key,
                   "topology": "layer3", "role": "primary",
                   "subnets": "10.132.0.0/16/24,fd00:10:132::/48/64"}
        netinfo = PluginHost.load(CONFIG).parse_netconf(json.dumps(netconf))
        self.context.networks.set_nad(nad_key, netinfo)
        self.context.networks_changed(netinfo.name)
        return str(netinfo.name)

    def service(self, namespace: str, name: str = "svc2") -> JSON:
        return self.client.create(SERVICES, {
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": {"app": name}, "ports": [{"port": 80}]}}, namespace)

    def pod(self, namespace: str, name: str, networks: dict[str, list[str]] | None = None,
            host_ips: list[str] | None = None) -> JSON:
        """A pod; ``networks`` maps NAD keys to addresses for ``k8s.ovn.org/pod-networks``."""
        meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": {"app": "svc2"}}
        if networks is not None:
            meta["annotations"] = {POD_NETWORKS_ANNOTATION: serialize({
                key: PodNetwork(tuple(ips), POD_MAC,
                                "infrastructure-locked" if key == "default" else "primary")
                for key, ips in networks.items()})}
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "agnhost"}],
                                "nodeName": "ovn-worker"}
        if host_ips is not None:
            spec["hostNetwork"] = True
        pod = self.client.create(PODS, {"metadata": meta, "spec": spec}, namespace)
        if host_ips is not None:
            pod["status"] = {"podIP": host_ips[0], "podIPs": [{"ip": ip} for ip in host_ips]}
            pod = self.client.update_status(PODS, pod)
        return pod

    def annotate_pod(self, namespace: str, name: str, networks: dict[str, list[str]]) -> None:
        self.client.patch(PODS, name, {"metadata": {"annotations": {
            POD_NETWORKS_ANNOTATION: serialize({
                key: PodNetwork(tuple(ips), POD_MAC, "primary")
                for key, ips in networks.items()})}}}, namespace)

    def source_slice(self, namespace: str, service: JSON, pods: list[tuple[str, str]],
                     name: str = "default-endpointslice", address_type: str = "IPv4",
                     managed_by: str = DEFAULT_MANAGER) -> JSON:
        """A default slice of ``service`` listing ``pods`` as (name, default IP)."""
        return self.client.create(ENDPOINTSLICES, {
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {MANAGED_BY_LABEL: managed_by,
                                    "kubernetes.io/service-name": service["metadata"]["name"]},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service",
                                              "name": service["metadata"]["name"],
                                              "uid": service["metadata"]["uid"],
                                              "controller": True,
                                              "blockOwnerDeletion": True}]},
            "addressType": address_type,
            "endpoints": [endpoint(namespace, pod, ip) for pod, ip in pods],
            "ports": [{"name": "", "port": 80, "protocol": "TCP"}]}, namespace)

    # -- what the controller wrote ------------------------------------------------------------
    def mirrors(self, namespace: str, source: str | None = None) -> list[JSON]:
        slices = self.client.list(ENDPOINTSLICES, namespace,
                                  label_selector=f"{MANAGED_BY_LABEL}={MIRROR_CONTROLLER}")
        return [s for s in slices["items"] if source is None
                or (s["metadata"].get("annotations") or {}).get(SOURCE_ANNOTATION) == source]

    def the_mirror(self, namespace: str, source: str = "default-endpointslice",
                   addresses: list[str] | None = None) -> JSON:
        """Wait for exactly one mirror of ``source`` (with ``addresses``, if given)."""
        def found() -> JSON:
            mirrors = self.mirrors(namespace, source)
            if len(mirrors) != 1:
                return {}
            if addresses is not None and mirror_addresses(mirrors[0]) != addresses:
                return {}
            return mirrors[0]
        return wait_until(found, what=f"one mirror of {namespace}/{source} with {addresses}")

    def settle(self, write: Callable[[], object] | None = None) -> None:
        """Run ``write``, then wait until the controller has been told of everything written
        so far (its informers handled the server's current version) and has nothing left
        to do.  Tests use it to assert that something did *not* happen."""
        assert self.mirror is not None
        if write is not None:
            write()
        current = int(self.client.list(ENDPOINTSLICES, limit=1)["metadata"]["resourceVersion"])
        informers = (self.mirror.slices, self.mirror.pods)
        controller = self.mirror.controller

        def settled() -> bool:
            return (all(int(i.handled_version or 0) >= current for i in informers)
                    and controller.queue.idle())
        wait_until(settled, what="the mirror controller to settle")

def endpoint(namespace: str, pod: str, ip: str) -> JSON:
    return {"addresses": [ip], "conditions": {"ready": True, "serving": True,
                                              "terminating": False},
            "nodeName": "ovn-worker",
            "targetRef": {"kind": "Pod", "name": pod, "namespace": namespace,
                          "uid": f"uid-{pod}"}}


def mirror_addresses(slice_: JSON) -> list[str]:
    return [a for e in slice_.get("endpoints") or [] for a in e.get("addresses") or []]
