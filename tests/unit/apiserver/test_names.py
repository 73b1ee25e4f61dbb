"""Object names reach the store only through the kind's rule, and no request body stores an
unpaired UTF-16 surrogate: every path a name (or namespace, or generated name, or a name on
the URL) takes, with the messages kube-apiserver prints."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import with_crds

from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.names import DNS1035_MSG, LABEL_MSG, SUBDOMAIN_MSG
from ovnk_core.kube.resources import NADS

RawCall = Callable[..., Any]

NAD_PATH = "/apis/k8s.cni.cncf.io/v1/namespaces/default/network-attachment-definitions"
NAD_KIND = "NetworkAttachmentDefinition.k8s.cni.cncf.io"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    r"used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
MERGE = {"Content-Type": "application/merge-patch+json"}
APPLY = {"Content-Type": "application/apply-patch+yaml"}
SURROGATE = ("unpaired UTF-16 surrogate \\ud800 (a character outside the Basic Multilingual "
             "Plane must be a surrogate pair)")


@pytest.fixture
def nads(kube_apiserver: ServerHandle) -> KubeClient:
    """The project's CRDs served; NetworkAttachmentDefinitions are custom resources."""
    return with_crds(kube_apiserver)


def nad_body(name: str | None = None, **meta: Any) -> dict[str, Any]:
    metadata = dict(meta)
    if name is not None:
        metadata["name"] = name
    return {"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition",
            "metadata": metadata, "spec": {"config": "{}"}}


def status(reply: Any, code: int) -> dict[str, Any]:
    assert reply.status == code, reply.body
    body: dict[str, Any] = reply.json()
    if code >= 400:
        assert body["kind"] == "Status" and body["code"] == code
    return body


def stored_nads(nads: KubeClient) -> list[str]:
    return sorted(item["metadata"]["name"] for item in nads.list(NADS, "default")["items"])


# -- names by the kind's rule ----------------------------------------------------------------
def test_custom_resource_named_with_nul_is_invalid(nads: KubeClient, raw: RawCall) -> None:
    body = status(raw("POST", NAD_PATH, nad_body("a\u0000b")), 422)
    assert body["reason"] == "Invalid"
    assert body["message"] == (
        f'{NAD_KIND} "a\\x00b" is invalid: metadata.name: Invalid value: "a\\x00b": '
        f"{SUBDOMAIN}")
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "metadata.name",
                                          "message": f'Invalid value: "a\\x00b": {SUBDOMAIN}'}]
    assert SUBDOMAIN == SUBDOMAIN_MSG
    assert stored_nads(nads) == []


@pytest.mark.parametrize(("path", "name", "message"), [
    ("/api/v1/namespaces", "Blue_Team", f'Namespace "Blue_Team" is invalid: metadata.name: '
                                        f'Invalid value: "Blue_Team": {LABEL_MSG}'),
    ("/api/v1/namespaces/default/services", "1web", f'Service "1web" is invalid: metadata.name: '
                                                     f'Invalid value: "1web": {DNS1035_MSG}'),
    ("/api/v1/namespaces/default/configmaps", "caf\u00e9",
     f'ConfigMap "café" is invalid: metadata.name: Invalid value: "café": {SUBDOMAIN}'),
    ("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", "..",
     'Role.rbac.authorization.k8s.io ".." is invalid: metadata.name: Invalid value: "..": '
     "may not be '..'"),
    ("/api/v1/namespaces/default/events", "a%b",
     'Event "a%b" is invalid: metadata.name: Invalid value: "a%b": may not contain \'%\''),
])
def test_each_kind_has_its_rule(raw: RawCall, path: str, name: str, message: str) -> None:
    body = {"metadata": {"name": name}, "spec": {"ports": [{"port": 80}]},
            "rules": [], "involvedObject": {"kind": "Pod", "name": "p"}}
    assert status(raw("POST", path, body), 422)["message"] == message
    listed = raw("GET", path).json()["items"]
    assert name not in [item["metadata"]["name"] for item in listed]
    if name != "..":
        assert raw("GET", f"{path}/{quote(name)}").status == 404


def test_generate_name_is_checked_as_a_prefix(nads: KubeClient, raw: RawCall) -> None:
    body = status(raw("POST", NAD_PATH, nad_body(generateName="Net_\u0000")), 422)
    generated = body["details"]["name"]
    assert re.fullmatch("Net_\x00[bcdfghjklmnpqrstvwxz2456789]{5}", generated)
    shown = generated.replace("\x00", "\\x00")
    assert body["message"] == (
        f'{NAD_KIND} "{shown}" is invalid: [metadata.generateName: Invalid value: "Net_\\x00": '
        f'{SUBDOMAIN}, metadata.name: Invalid value: "{shown}": {SUBDOMAIN}]')
    assert [c["field"] for c in body["details"]["causes"]] == ["metadata.generateName",
                                                               "metadata.name"]
    # a trailing dash is fine in a prefix (apimachinery's maskTrailingDash)
    created = status(raw("POST", NAD_PATH, nad_body(generateName="net-")), 201)
    assert created["metadata"]["name"].startswith("net-")
    ns = status(raw("POST", "/api/v1/namespaces", {"metadata": {"generateName": "Team."}}), 422)
    assert ns["details"]["causes"][0] == {
        "reason": "FieldValueInvalid", "field": "metadata.generateName",
        "message": f'Invalid value: "Team.": {LABEL_MSG}'}
    assert stored_nads(nads) == [created["metadata"]["name"]]


def test_non_string_names_never_pass_as_text(nads: KubeClient, raw: RawCall) -> None:
    body = status(raw("POST", "/api/v1/namespaces/default/configmaps",
                      {"metadata": {"name": 5}}), 400)
    assert body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "number into Go struct field ObjectMeta.metadata.name of type string")
    # a custom resource drops the malformed field (apiextensions' GetObjectMeta)
    body = status(raw("POST", NAD_PATH, nad_body(12)), 422)
    assert body["message"] == (f'{NAD_KIND} "" is invalid: metadata.name: Required value: name '
                               "or generateName is required")
    assert stored_nads(nads) == []


# -- names on the URL --------------------------------------------------------------------------
def test_apply_creates_only_under_a_valid_url_name(nads: KubeClient, raw: RawCall) -> None:
    apply = json.dumps(nad_body()).encode()
    body = status(raw("PATCH", f"{NAD_PATH}/a%00b?fieldManager=me", apply, APPLY), 422)
    assert body["message"] == (
        f'{NAD_KIND} "a\\x00b" is invalid: metadata.name: Invalid value: "a\\x00b": '
        f"{SUBDOMAIN}")
    body = status(raw("PATCH", f"{NAD_PATH}/Net?fieldManager=me", apply, APPLY), 422)
    assert body["message"] == (f'{NAD_KIND} "Net" is invalid: metadata.name: Invalid value: '
                               f'"Net": {SUBDOMAIN}')
    # an encoded slash is a path separator, as in Go's decoded URL.Path
    assert raw("PATCH", f"{NAD_PATH}/a%2Fb?fieldManager=me", apply, APPLY).status == 404
    # the body may not name another object than the URL
    other = json.dumps(nad_body("other")).encode()
    body = status(raw("PATCH", f"{NAD_PATH}/net?fieldManager=me", other, APPLY), 400)
    assert body["message"] == "the name of the object (other) does not match the name on the " \
                              "URL (net)"
    elsewhere = json.dumps(nad_body("net", namespace="kube-system")).encode()
    body = status(raw("PATCH", f"{NAD_PATH}/net?fieldManager=me", elsewhere, APPLY), 400)
    assert body["message"] == ("the namespace of the object (kube-system) does not match the "
                               "namespace on the request (default)")
    assert stored_nads(nads) == []
    status(raw("PATCH", f"{NAD_PATH}/net?fieldManager=me", apply, APPLY), 201)
    assert stored_nads(nads) == ["net"]


def test_put_does_not_create(nads: KubeClient, raw: RawCall) -> None:
    """Custom resources do not allow create on update (nor does any kind here): a PUT of a
    missing object, whatever its URL name, is 404 and stores nothing."""
    for url_name, body_name in (("a%00b", "a\u0000b"), ("net", "net")):
        body = status(raw("PUT", f"{NAD_PATH}/{url_name}", nad_body(body_name)), 404)
        assert body["reason"] == "NotFound"
    body = status(raw("PUT", f"{NAD_PATH}/a%00b", nad_body("a\u0000b")), 404)
    assert body["message"] == ('network-attachment-definitions.k8s.cni.cncf.io "a\\x00b" not '
                               "found")
    assert stored_nads(nads) == []


def test_a_patch_cannot_rename(nads: KubeClient, raw: RawCall) -> None:
    status(raw("POST", NAD_PATH, nad_body("net")), 201)
    body = status(raw("PATCH", f"{NAD_PATH}/net", {"metadata": {"name": "a\u0000b"}}, MERGE),
                  400)
    assert body["message"] == ("the name of the object (a\x00b) does not match the name on the "
                               "URL (net)")
    json_patch = [{"op": "replace", "path": "/metadata/name", "value": "other"}]
    body = status(raw("PATCH", f"{NAD_PATH}/net", json_patch,
                      {"Content-Type": "application/json-patch+json"}), 400)
    assert body["message"] == ("the name of the object (other) does not match the name on the "
                               "URL (net)")
    assert stored_nads(nads) == ["net"]


def test_namespace_on_the_url(nads: KubeClient, raw: RawCall) -> None:
    path = "/apis/k8s.cni.cncf.io/v1/namespaces/Bad%00/network-attachment-definitions"
    body = status(raw("POST", path, nad_body("net")), 404)
    assert body["message"] == 'namespaces "Bad\\x00" not found'
    assert stored_nads(nads) == []


def test_a_mutating_hook_cannot_rename(kube_apiserver: ServerHandle, raw: RawCall) -> None:
    def rename(operation: str, new: dict[str, Any], old: dict[str, Any] | None) -> Any:
        return {**new, "metadata": {**new["metadata"], "name": "renamed"}}

    path = "/api/v1/namespaces/default/configmaps"
    status(raw("POST", path, {"metadata": {"name": "cm"}}), 201)
    kube_apiserver.admission.register_mutating("", "configmaps", rename,
                                               operations=("UPDATE",))
    body = status(raw("PATCH", f"{path}/cm", {"data": {"a": "b"}}, MERGE), 422)
    assert body["message"] == ('ConfigMap "renamed" is invalid: metadata.name: Invalid value: '
                               '"renamed": field is immutable')
    assert raw("GET", f"{path}/renamed").status == 404
    assert "data" not in raw("GET", f"{path}/cm").json()


# -- unpaired surrogates -------------------------------------------------------------------------
@pytest.mark.parametrize(("document", "where"), [
    (b'{"metadata":{"name":"a\\ud800"},"spec":{"config":"{}"}}', "metadata.name"),
    (b'{"metadata":{"name":"net","labels":{"app":"\\udc00x"}},"spec":{"config":"{}"}}',
     "metadata.labels.app"),
    (b'{"metadata":{"name":"net","annotations":{"note":"\\ud800"}},"spec":{"config":"{}"}}',
     "metadata.annotations.note"),
    (b'{"metadata":{"name":"net","annotations":{"\\ud800":"x"}},"spec":{"config":"{}"}}',
     "metadata.annotations (a key)"),
    (b'{"metadata":{"name":"net","finalizers":["ok","\\ud800"]},"spec":{"config":"{}"}}',
     "metadata.finalizers[1]"),
    (b'{"metadata":{"name":"net"},"spec":{"config":"{\\"name\\":\\"\\ud800\\"}"}}',
     "spec.config"),
])
def test_create_with_an_unpaired_surrogate_is_refused(nads: KubeClient, raw: RawCall,
                                                      document: bytes, where: str) -> None:
    body = status(raw("POST", NAD_PATH, document), 400)
    assert body["reason"] == "BadRequest"
    unpaired = SURROGATE.replace("\\ud800", "\\udc00") if b"udc00" in document else SURROGATE
    assert body["message"] == (f"error decoding request body: invalid Unicode at {where}: "
                               f"{unpaired}")
    assert stored_nads(nads) == []


def test_yaml_and_protobuf_bodies_too(nads: KubeClient, raw: RawCall) -> None:
    yaml_body = b'metadata: {name: "net", annotations: {note: "\\ud800"}}\nspec: {config: "{}"}\n'
    body = status(raw("POST", NAD_PATH, yaml_body, {"Content-Type": "application/yaml"}), 400)
    assert body["message"] == ("error decoding request body: invalid Unicode at "
                               f"metadata.annotations.note: {SURROGATE}")
    # a surrogate sent as (invalid) UTF-8 bytes: Python's JSON decoder lets it through
    # ("surrogatepass"), the check does not
    utf8 = b'{"metadata":{"name":"net","annotations":{"a":"\xed\xa0\x80"}}}'
    body = status(raw("POST", NAD_PATH, utf8), 400)
    assert body["message"] == ("error decoding request body: invalid Unicode at "
                               f"metadata.annotations.a: {SURROGATE}")
    # a protobuf Namespace whose name carries the same bytes
    envelope = (b'k8s\x00\n\x0f\n\x02v1\x12\tNamespace\x12\x1c\n\x14\n\x04r\xed\xa0\x80\x12\x00'
                b'\x1a\x00"\x00*\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00"\x00')
    body = status(raw("POST", "/api/v1/namespaces", envelope,
                      {"Content-Type": "application/vnd.kubernetes.protobuf"}), 400)
    assert body["message"].startswith("error decoding protobuf request body: a string field "
                                      "is not valid UTF-8: ")
    assert stored_nads(nads) == []
    namespaces = raw("GET", "/api/v1/namespaces").json()["items"]
    assert not [ns for ns in namespaces if ns["metadata"]["name"].startswith("r")]


def test_updates_and_patches_with_an_unpaired_surrogate_are_refused(nads: KubeClient,
                                                                   raw: RawCall) -> None:
    created = status(raw("POST", NAD_PATH, nad_body("net")), 201)
    put = (b'{"apiVersion":"k8s.cni.cncf.io/v1","kind":"NetworkAttachmentDefinition",'
           b'"metadata":{"name":"net"},"spec":{"config":"\\ud800"}}')
    body = status(raw("PUT", f"{NAD_PATH}/net", put), 400)
    assert body["message"] == f"error decoding request body: invalid Unicode at spec.config: " \
                              f"{SURROGATE}"
    merge = b'{"metadata":{"annotations":{"note":"\\ud800"}}}'
    body = status(raw("PATCH", f"{NAD_PATH}/net", merge, MERGE), 400)
    assert body["message"] == ("error decoding patch: invalid Unicode at "
                               f"metadata.annotations.note: {SURROGATE}")
    json_patch = b'[{"op":"add","path":"/metadata/labels","value":{"a":"\\ud800"}}]'
    body = status(raw("PATCH", f"{NAD_PATH}/net", json_patch,
                      {"Content-Type": "application/json-patch+json"}), 400)
    assert body["message"] == f"error decoding patch: invalid Unicode at [0].value.a: {SURROGATE}"
    apply = b'metadata:\n  name: net\n  annotations: {note: "\\ud800"}\n'
    body = status(raw("PATCH", f"{NAD_PATH}/net?fieldManager=me", apply, APPLY), 400)
    assert body["message"] == ("error decoding patch: invalid Unicode at "
                               f"metadata.annotations.note: {SURROGATE}")
    body = status(raw("PATCH", f"{NAD_PATH}/new?fieldManager=me", apply, APPLY), 400)
    assert stored_nads(nads) == ["net"]
    current = raw("GET", f"{NAD_PATH}/net").json()
    assert current["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert "annotations" not in current["metadata"]


def test_a_surrogate_pair_is_a_character(nads: KubeClient, raw: RawCall) -> None:
    document = b'{"metadata":{"name":"net","annotations":{"note":"\\ud83d\\ude00"}},' \
               b'"spec":{"config":"{}"}}'
    created = status(raw("POST", NAD_PATH, document), 201)
    assert created["metadata"]["annotations"]["note"] == "\U0001F600"
    body = status(raw("POST", NAD_PATH, nad_body("\U0001F600")), 422)
    assert body["message"] == (f'{NAD_KIND} "\U0001F600" is invalid: metadata.name: Invalid '
                               f'value: "\U0001F600": {SUBDOMAIN}')
