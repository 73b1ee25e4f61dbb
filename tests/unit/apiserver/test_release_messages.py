"""The Kubernetes release the server emulates (1.36): ``/version``, and messages whose wording
changed since 1.32: owner references (1.36), label keys (1.35)."""

from __future__ import annotations

import pytest
from kubernetes import client

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.errors import ApiError
from ovnk_core.kube.resources import Resource

from .conftest import RawCall

CONFIG_MAPS = Resource("", "v1", "configmaps", "ConfigMap", True)


def refused(api: KubeClient, body: dict[str, object], namespace: str) -> str:
    with pytest.raises(ApiError) as err:
        api.create(CONFIG_MAPS, body, namespace)
    assert err.value.code == 422
    message: str = err.value.status["message"]
    return message


def test_owner_reference_messages(kube_client: client.ApiClient, namespace: str) -> None:
    message = refused(KubeClient(kube_client), {"metadata": {
        "name": "c", "ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": ""}]}},
        namespace)
    assert message == (
        'ConfigMap "c" is invalid: [metadata.ownerReferences[0].apiVersion: Invalid value: "": '
        'version must not be empty, metadata.ownerReferences[0].kind: Invalid value: "": must '
        'not be empty, metadata.ownerReferences[0].name: Invalid value: "": must not be empty, '
        'metadata.ownerReferences[0].uid: Invalid value: "": must not be empty]')


def test_label_keys_are_label_keys(kube_client: client.ApiClient, namespace: str) -> None:
    api = KubeClient(kube_client)
    assert refused(api, {"metadata": {"name": "c", "labels": {"a/b/c": "x"}}}, namespace) == (
        'ConfigMap "c" is invalid: metadata.labels: Invalid value: "a/b/c": a valid label key '
        "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
        "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS "
        "subdomain prefix and '/' (e.g. 'example.com/MyName')")
    assert refused(api, {"metadata": {"name": "c", "labels": {"/b": "x"}}}, namespace) == (
        'ConfigMap "c" is invalid: metadata.labels: Invalid value: "/b": prefix part must be '
        "non-empty")


def test_version_is_the_emulated_release(raw: RawCall, kube_client: client.ApiClient) -> None:
    version = raw("GET", "/version").json()
    assert {k: version[k] for k in ("major", "minor", "emulationMajor", "emulationMinor",
                                    "gitVersion")} == {
        "major": "1", "minor": "36", "emulationMajor": "1", "emulationMinor": "36",
        "gitVersion": "v1.36.2+ovnk"}
    assert client.VersionApi(kube_client).get_code().git_version == "v1.36.2+ovnk"
