"""The clients and the Widget CRD the API server tests share (the server fixtures come
from the ``ovnk`` pytest plugin)."""

from __future__ import annotations

import copy
import http.client
import json
import ssl
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import ssl_context_for

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.org"},
    "spec": {
        "group": "example.org", "scope": "Namespaced",
        "names": {"kind": "Widget", "plural": "widgets", "singular": "widget",
                  "shortNames": ["wd"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Topology", "type": "string", "jsonPath": ".spec.topology"},
                {"name": "MTU", "type": "integer", "jsonPath": ".spec.mtu"},
                {"name": "Ready", "type": "string",
                 "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object", "required": ["topology"],
                        "properties": {
                            "topology": {"type": "string", "enum": ["Layer2", "Layer3"]},
                            "mtu": {"type": "integer", "minimum": 576, "maximum": 65536},
                            "role": {"type": "string", "default": "Secondary"},
                            "name": {"type": "string", "minLength": 1, "maxLength": 8,
                                     "pattern": "^[a-z]+$"},
                            "subnets": {"type": "array", "minItems": 1, "maxItems": 2,
                                        "items": {"type": "string", "format": "cidr"}},
                            "labels": {"type": "object",
                                       "additionalProperties": {"type": "string"}},
                            "extra": {"type": "object",
                                      "x-kubernetes-preserve-unknown-fields": True},
                            "note": {"type": "string", "nullable": True},
                        }},
                    "status": {
                        "type": "object",
                        "properties": {"conditions": {
                            "type": "array",
                            "items": {"type": "object", "required": ["type", "status"],
                                      "properties": {"type": {"type": "string"},
                                                     "status": {"type": "string"},
                                                     "reason": {"type": "string"}}}}}},
                }}},
        }],
    },
}


@pytest.fixture
def core(kube_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube_client)


@pytest.fixture
def custom(kube_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(kube_client)


@pytest.fixture
def namespace(core: client.CoreV1Api) -> str:
    core.create_namespace({"metadata": {"name": "blue"}})
    return "blue"


@pytest.fixture
def widget_crd(kube_client: client.ApiClient) -> Iterator[dict[str, Any]]:
    """The Widget CRD (namespaced, status subresource, a schema with most keywords)."""
    api = client.ApiextensionsV1Api(kube_client)
    api.create_custom_resource_definition(copy.deepcopy(WIDGET_CRD))
    yield copy.deepcopy(WIDGET_CRD)


@pytest.fixture
def server(kube_apiserver: ServerHandle) -> ServerHandle:
    return kube_apiserver


class RawResponse:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)


RawCall = Callable[..., RawResponse]


@pytest.fixture
def raw(kube_apiserver: ServerHandle) -> RawCall:
    """``raw(method, path, body=None, headers=None, context=None)``: one HTTPS request, as
    the admin unless ``context`` (an ``ssl_context_for(...)``) says otherwise."""
    admin = ssl_context_for(kube_apiserver)

    def call(method: str, path: str, body: Any = None,
             headers: dict[str, str] | None = None,
             context: ssl.SSLContext | None = None) -> RawResponse:
        connection = http.client.HTTPSConnection(kube_apiserver.host, kube_apiserver.port,
                                                 timeout=30, context=context or admin)
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        sent = {"Content-Type": "application/json", "Accept": "application/json",
                **(headers or {})}
        connection.request(method, path, body=data, headers=sent)
        response = connection.getresponse()
        result = RawResponse(response.status, dict(response.getheaders()), response.read())
        connection.close()
        return result

    return call
