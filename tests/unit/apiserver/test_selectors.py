"""Label and field selectors: the parser, and list filtering over HTTP."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from ovnk_local.apiserver.errors import ApiStatusError
from ovnk_local.apiserver.selectors import matcher, parse_label_selector

OBJECTS = {
    "a": {"app": "web", "tier": "front"},
    "b": {"app": "web", "tier": "back"},
    "c": {"app": "db"},
    "d": {},
}


@pytest.mark.parametrize(("selector", "expected"), [
    ("app=web", "ab"), ("app==web", "ab"), ("app!=web", "cd"),
    ("app in (web, db)", "abc"), ("tier notin (front)", "bcd"), ("tier", "ab"),
    ("!tier", "cd"), ("app=web,tier=back", "b"), ("app,!tier", "c"), ("", "abcd"),
])
def test_label_selector_semantics(selector: str, expected: str) -> None:
    matches = matcher(selector, None)
    chosen = "".join(name for name, labels in OBJECTS.items()
                     if matches({"metadata": {"labels": labels}}))
    assert chosen == expected


def test_numeric_comparisons_and_errors() -> None:
    matches = matcher("size>3", None)
    assert matches({"metadata": {"labels": {"size": "5"}}})
    assert not matches({"metadata": {"labels": {"size": "2"}}})
    with pytest.raises(ApiStatusError) as err:
        parse_label_selector("a b c")
    assert err.value.code == 400


def test_field_selector_on_any_path() -> None:
    pod = {"metadata": {"name": "p", "namespace": "n"}, "spec": {"hostNetwork": True},
           "status": {"phase": "Running"}}
    assert matcher(None, "status.phase=Running,metadata.name=p")(pod)
    assert matcher(None, "spec.nodeName=")(pod)
    assert matcher(None, "spec.hostNetwork=true")(pod)
    assert not matcher(None, "status.phase!=Running")(pod)


def test_list_filters(core: client.CoreV1Api, namespace: str) -> None:
    for name, labels in OBJECTS.items():
        core.create_namespaced_pod(namespace, {
            "metadata": {"name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "image": "i"}],
                     **({"nodeName": "n1"} if name in "ab" else {})}})
    names = [p.metadata.name for p in core.list_namespaced_pod(
        namespace, label_selector="app in (web,db),tier notin (back)").items]
    assert names == ["a", "c"]
    assert [p.metadata.name for p in core.list_pod_for_all_namespaces(
        field_selector="spec.nodeName=n1").items] == ["a", "b"]
    assert [p.metadata.name for p in core.list_namespaced_pod(
        namespace, field_selector="spec.nodeName=,metadata.name!=d").items] == ["c"]
    assert [p.metadata.name for p in core.list_namespaced_pod(
        namespace, field_selector="status.phase=Pending", label_selector="!app").items] == ["d"]
    with pytest.raises(ApiException) as err:
        core.list_namespaced_pod(namespace, label_selector="a in (b")
    assert err.value.status == 400
