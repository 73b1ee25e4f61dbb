"""Admission hooks, and the UDN namespace-label rule (the core's ``ovnk.admission`` hook)
served through them."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.admission import AdmissionRegistry
from ovnk_local.apiserver.errors import FieldError
from ovnk_local.apiserver.server import ServerHandle, ServerOptions
from ovnk_local.testing.apiserver_fixtures import ServerFactory, client_for

from ovnk_core.admission.contract import PolicyDenied
from ovnk_core.udn.namespace_label import PRIMARY_NAMESPACE_LABEL as UDN_NAMESPACE_LABEL

MERGE = "application/merge-patch+json"
VAP_MESSAGE = (
    "ValidatingAdmissionPolicy 'user-defined-networks-namespace-label' with binding "
    "'user-defined-networks-namespace-label-binding' denied request: The "
    "'k8s.ovn.org/primary-user-defined-network' label cannot be added/removed after the "
    "namespace was created")


@pytest.fixture
def kube_apiserver(kube_apiserver_factory: ServerFactory) -> ServerHandle:
    """A server with the namespace-label rule, as ovnk's admission entry points give it."""
    return kube_apiserver_factory(ServerOptions(
        bookmark_interval=1.0, admission_modules=("ovnk_core.udn.namespace_label",)))


def status_of(exc: ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body


def test_label_may_be_set_at_creation(core: client.CoreV1Api) -> None:
    ns = core.create_namespace({"metadata": {"name": "udn",
                                             "labels": {UDN_NAMESPACE_LABEL: ""}}})
    assert UDN_NAMESPACE_LABEL in ns.metadata.labels
    other = core.patch_namespace("udn", {"metadata": {"labels": {"team": "a"}}},
                                 _content_type=MERGE)
    assert other.metadata.labels["team"] == "a"
    revalued = core.patch_namespace("udn", {"metadata": {"labels": {UDN_NAMESPACE_LABEL: "x"}}},
                                    _content_type=MERGE)
    assert revalued.metadata.labels[UDN_NAMESPACE_LABEL] == "x"


def test_label_cannot_be_removed(core: client.CoreV1Api) -> None:
    core.create_namespace({"metadata": {"name": "udn", "labels": {UDN_NAMESPACE_LABEL: ""}}})
    with pytest.raises(ApiException) as err:
        core.patch_namespace("udn", {"metadata": {"labels": {UDN_NAMESPACE_LABEL: None}}},
                             _content_type=MERGE)
    status = status_of(err.value)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["message"] == f'namespaces "udn" is forbidden: {VAP_MESSAGE}'
    assert status["details"]["causes"] == [{"message": VAP_MESSAGE}]
    assert UDN_NAMESPACE_LABEL in core.read_namespace("udn").metadata.labels


def test_label_cannot_be_added(core: client.CoreV1Api) -> None:
    ns = core.create_namespace({"metadata": {"name": "plain"}})
    ns.metadata.labels[UDN_NAMESPACE_LABEL] = ""
    with pytest.raises(ApiException) as err:
        core.replace_namespace("plain", ns)
    assert status_of(err.value)["message"] == f'namespaces "plain" is forbidden: {VAP_MESSAGE}'


def test_validating_hook_rejects_with_field_errors(server: ServerHandle,
                                                   custom: client.CustomObjectsApi,
                                                   namespace: str,
                                                   widget_crd: dict[str, Any]) -> None:
    seen: list[tuple[str, Any, Any]] = []

    def immutable_topology(operation: str, new: dict[str, Any] | None,
                           old: dict[str, Any] | None) -> FieldError | None:
        seen.append((operation, new and new["spec"]["topology"],
                     old and old["spec"]["topology"]))
        if operation == "UPDATE" and new and old and new["spec"] != old["spec"]:
            return FieldError("Invalid", "spec", "object", "Spec is immutable")
        return None

    server.admission.register_validating("example.org", "widgets", immutable_topology)
    custom.create_namespaced_custom_object("example.org", "v1", namespace, "widgets", {
        "apiVersion": "example.org/v1", "kind": "Widget", "metadata": {"name": "w"},
        "spec": {"topology": "Layer2"}})
    with pytest.raises(ApiException) as err:
        custom.patch_namespaced_custom_object("example.org", "v1", namespace, "widgets", "w",
                                              {"spec": {"topology": "Layer3"}})
    assert status_of(err.value)["message"] == (
        'Widget.example.org "w" is invalid: spec: Invalid value: "object": Spec is immutable')
    custom.delete_namespaced_custom_object("example.org", "v1", namespace, "widgets", "w")
    assert seen == [("CREATE", "Layer2", None), ("UPDATE", "Layer3", "Layer2"),
                    ("DELETE", None, "Layer2")]


def test_hook_message_policy_and_status_scope(server: ServerHandle, core: client.CoreV1Api,
                                              namespace: str) -> None:
    def no_secrets(operation: str, new: dict[str, Any] | None,
                   old: dict[str, Any] | None) -> str | None:
        if new and "secret" in (new.get("data") or {}):
            return "data.secret is not allowed"
        return None

    def policy(operation: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        if old and old["metadata"]["name"] == "protected":
            raise PolicyDenied("protect", "protected objects stay", reason="Forbidden")

    server.admission.register_validating("", "configmaps", no_secrets)
    server.admission.register_validating("", "configmaps", policy, operations=("DELETE",))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"},
                                                      "data": {"secret": "x"}})
    assert status_of(err.value)["message"] == (
        'ConfigMap "a" is invalid: data.secret is not allowed')
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "protected"}})
    with pytest.raises(ApiException) as err:
        core.delete_namespaced_config_map("protected", namespace)
    assert (err.value.status, status_of(err.value)["message"]) == (
        403, "configmaps \"protected\" is forbidden: ValidatingAdmissionPolicy 'protect' "
             "denied request: protected objects stay")
    server.admission.unregister("policy")
    core.delete_namespaced_config_map("protected", namespace)


def test_mutating_hook(server: ServerHandle, core: client.CoreV1Api, namespace: str) -> None:
    def stamp(operation: str, new: dict[str, Any], old: dict[str, Any] | None) -> dict[str, Any]:
        new["metadata"].setdefault("labels", {})["stamped"] = operation.lower()
        return new

    server.admission.register_mutating("", "configmaps", stamp)
    created = core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    assert created.metadata.labels == {"stamped": "create"}


def test_failing_hook_is_an_internal_error(server: ServerHandle, core: client.CoreV1Api,
                                           namespace: str) -> None:
    def broken(operation: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        raise RuntimeError("boom")

    server.admission.register_validating("", "configmaps", broken)
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "a"}})
    assert err.value.status == 500 and "boom" in status_of(err.value)["message"]


def test_admission_plugins_are_loaded_before_serving(
        kube_apiserver_factory: Callable[..., ServerHandle],
        monkeypatch: pytest.MonkeyPatch) -> None:
    plugin = types.ModuleType("ovnk_test_admission_plugin")

    def register(registry: AdmissionRegistry) -> None:
        registry.register_validating("", "configmaps",
                                     lambda op, new, old: "configmaps are frozen",
                                     name="frozen", operations=("CREATE",))

    plugin.register = register  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, plugin.__name__, plugin)
    server = kube_apiserver_factory(ServerOptions(admission_modules=(plugin.__name__,)))
    core = client.CoreV1Api(client_for(server))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    assert status_of(err.value)["message"] == 'ConfigMap "a" is invalid: configmaps are frozen'
