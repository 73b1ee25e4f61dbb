"""Pod annotations ovnk cannot use are reported on the pod, with a message the API server
accepts (issue 30, items 3 and 5): the cluster manager on the local API server.

* ``k8s.ovn.org/pod-networks: {"default": {}}`` (an admin's): the entry has no MAC, so no
  reader can wire it, yet the pod IPAM took it for an allocation and the zone skipped it:
  the pod stayed Pending with no event.  Upstream's reader refuses an entry without a MAC;
  so does ovnk's now, and the pod gets a Warning.
* a lone UTF-16 surrogate spelled inside a pod's JSON annotations (a NAD name in
  ``k8s.v1.cni.cncf.io/networks``, a key of ``pod-networks``) was decoded into text no event
  could carry: the Warning naming it was refused by the API server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ovnk_core.clustermanager.app import ClusterManager
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import EVENTS, NAMESPACES, PODS
from ovnk_core.testing.waiting import wait_until

POD_NETWORKS = "k8s.ovn.org/pod-networks"
SELECTIONS = "k8s.v1.cni.cncf.io/networks"


def pod(client: KubeClient, name: str, annotations: dict[str, str]) -> None:
    client.create(PODS, {"metadata": {"name": name, "namespace": "tenant",
                                      "annotations": annotations},
                         "spec": {"nodeName": "ovn-worker",
                                  "containers": [{"name": "c", "image": "agnhost"}]}})


def warnings_on(client: KubeClient, name: str) -> list[tuple[str, str]]:
    return [(e["reason"], e["message"]) for e in client.list(EVENTS, "tenant")["items"]
            if e.get("type") == "Warning" and e["involvedObject"].get("name") == name]


def annotated(client: KubeClient, name: str) -> dict[str, str]:
    found: dict[str, str] = client.get(PODS, name, "tenant")["metadata"].get(
        "annotations") or {}
    return found


@pytest.fixture
def manager(client: KubeClient, start_manager: Callable[[], ClusterManager]) -> ClusterManager:
    client.create(NAMESPACES, {"metadata": {"name": "tenant"}})
    return start_manager()


def test_an_entry_without_a_mac_is_reported_not_left_pending(client: KubeClient,
                                                            manager: ClusterManager) -> None:
    pod(client, "empty", {POD_NETWORKS: '{"default": {}}'})
    pod(client, "fine", {})
    assert wait_until(lambda: POD_NETWORKS in annotated(client, "fine"))
    assert wait_until(lambda: warnings_on(client, "empty")) == [
        ("ErrorReconcilingPod", "invalid pod network entry {}: failed to parse pod MAC ''")]
    assert annotated(client, "empty")[POD_NETWORKS] == '{"default": {}}'  # never rewritten


@pytest.mark.parametrize(("annotations", "reason", "expected"), [
    ({SELECTIONS: '[{"name": "\\ud800"}]'}, "ErrorAllocatingPod",
     "failed to get all NetworkSelectionElements for pod tenant/lone: "
     "parsePodNetworkAnnotation: failed to parse pod Network Attachment Selection Annotation "
     "JSON format: invalid Unicode at [0].name: unpaired UTF-16 surrogate \\ud800 (a "
     "character outside the Basic Multilingual Plane must be a surrogate pair)"),
    ({POD_NETWORKS: '{"tenant/\\udfff": {"mac_address": "0a:58:0a:f4:01:05"}}'},
     "ErrorReconcilingPod",
     "k8s.ovn.org/pod-networks is not valid JSON: invalid Unicode at (a key): unpaired UTF-16 "
     "surrogate \\udfff (a character outside the Basic Multilingual Plane must be a surrogate "
     "pair)"),
], ids=["selection", "pod-networks-key"])
def test_a_lone_surrogate_in_a_pod_annotation_is_reported_with_a_valid_message(
        client: KubeClient, manager: ClusterManager, annotations: dict[str, Any],
        reason: str, expected: str) -> None:
    pod(client, "lone", annotations)
    assert wait_until(lambda: warnings_on(client, "lone")) == [(reason, expected)]
