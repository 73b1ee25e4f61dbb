"""Every namespace has its ``default`` ServiceAccount, as kube-controller-manager's
serviceaccounts controller gives it."""

from __future__ import annotations

import json
from pathlib import Path

from kubernetes import client
from ovnk_local.testing.apiserver_fixtures import ServerFactory, client_for

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NAMESPACES, Resource
from ovnk_core.testing.waiting import wait_until

SERVICE_ACCOUNTS = Resource("", "v1", "serviceaccounts", "ServiceAccount", True)


def test_every_namespace_has_its_default_service_account(kube_client: client.ApiClient,
                                                         namespace: str) -> None:
    """As kube-controller-manager's serviceaccounts controller: created with the namespace,
    created again when deleted, not in a namespace being deleted."""
    api = KubeClient(kube_client)

    def default_in(ns: str) -> bool:
        return any(sa["metadata"]["name"] == "default"
                   for sa in api.list(SERVICE_ACCOUNTS, ns)["items"])

    wait_until(lambda: all(default_in(ns) for ns in (namespace, "default", "kube-system")))
    first = api.get(SERVICE_ACCOUNTS, "default", namespace)["metadata"]["uid"]
    api.delete(SERVICE_ACCOUNTS, "default", namespace)
    wait_until(lambda: default_in(namespace) and api.get(
        SERVICE_ACCOUNTS, "default", namespace)["metadata"]["uid"] != first)
    api.create(NAMESPACES, {"metadata": {"name": "going", "finalizers": ["example.org/hold"]}})
    wait_until(lambda: default_in("going"))
    api.delete(NAMESPACES, "going")
    wait_until(lambda: not default_in("going"))
    assert api.get(NAMESPACES, "going")["status"]["phase"] == "Terminating"


def test_namespaces_of_an_older_server_get_it_at_start(
        tmp_path: Path, kube_apiserver_factory: ServerFactory) -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace",
                 "metadata": {"name": "old", "uid": "u1", "resourceVersion": "3",
                              "labels": {"kubernetes.io/metadata.name": "old"}},
                 "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}
    data = tmp_path / "state.json"
    data.write_text(json.dumps({"resourceVersion": 3, "objects": {"/namespaces": [namespace]}}))
    api = KubeClient(client_for(kube_apiserver_factory(data_file=data)))
    wait_until(lambda: api.get(SERVICE_ACCOUNTS, "default", "old") is not None)
