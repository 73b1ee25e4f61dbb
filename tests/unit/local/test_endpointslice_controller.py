"""The local cluster's EndpointSlice controller on a real (local) API server: it manages the
slices of services with a selector and, as upstream, leaves a selector-less service's slices
(written through the API by whoever manages them) alone, whatever their labels say."""

from __future__ import annotations

from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.endpointslices import EndpointSliceController
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_core.annotations.endpointslices import (
    DEFAULT_CONTROLLER,
    MANAGED_BY_LABEL,
    SERVICE_NAME_LABEL,
)
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import NotFound
from ovnk_core.kube.resources import ENDPOINTSLICES, NAMESPACES, SERVICES
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.unit


def service(name: str, selector: dict[str, str] | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"ports": [{"name": "http", "port": 80, "targetPort": 8080}]}
    if selector:
        spec["selector"] = selector
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": spec}


def manual_slice(service_name: str) -> dict[str, Any]:
    return {"metadata": {"name": f"{service_name}-manual", "namespace": "ns", "labels": {
                SERVICE_NAME_LABEL: service_name, MANAGED_BY_LABEL: DEFAULT_CONTROLLER}},
            "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
            "endpoints": [{"addresses": ["10.244.9.9"], "conditions": {"ready": True}}]}


def exists(client: KubeClient, name: str) -> bool:
    try:
        client.get(ENDPOINTSLICES, name, "ns")
    except NotFound:
        return False
    return True


def test_slices_of_a_selector_less_service_are_left_alone(kube_apiserver: ServerHandle
                                                          ) -> None:
    client = KubeClient(client_for(kube_apiserver))
    client.create(NAMESPACES, {"metadata": {"name": "ns"}})
    client.create(SERVICES, service("manual", None))
    client.create(SERVICES, service("selected", {"app": "web"}))  # no pod matches
    client.create(ENDPOINTSLICES, manual_slice("manual"))
    client.create(ENDPOINTSLICES, manual_slice("selected"))
    controller = EndpointSliceController(client, resync_period=0)
    controller.start()
    try:
        # the selected service's foreign slice is replaced by the controller's own (empty)
        wait_until(lambda: not exists(client, "selected-manual"),
                   timeout=30, what="the selected service's stray slice deleted")
        controller.controller.queue.add("ns/manual")
        wait_until(lambda: controller.controller.queue.idle(), timeout=30)
        kept = client.get(ENDPOINTSLICES, "manual-manual", "ns")
        assert kept["endpoints"][0]["addresses"] == ["10.244.9.9"]
        # a deleted service's slices go
        client.delete(SERVICES, "manual", "ns")
        wait_until(lambda: not exists(client, "manual-manual"),
                   timeout=30, what="the deleted service's slice deleted")
    finally:
        controller.stop()
