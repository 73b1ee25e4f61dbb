"""Real ``kubectl`` against the local API server: tables, apply, validation errors, label,
annotate, patch (three types), delete, ``get -w``, ``wait --for=condition`` and
``api-resources`` with the project's CRDs.  Every subprocess is bounded by a timeout."""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from ovnk_local.apiserver.server import ServerHandle, ServerOptions
from ovnk_local.testing import apiserver_fixtures
from ovnk_local.testing.apiserver_fixtures import client_for

import ovnk_core
from ovnk_core.udn import admission as udn_admission

kube_apiserver_factory = apiserver_fixtures.kube_apiserver_factory


@pytest.fixture
def kube_apiserver(kube_apiserver_factory: apiserver_fixtures.ServerFactory) -> ServerHandle:
    """A server with the namespace-label rule (the core's ``ovnk.admission`` hook)."""
    return kube_apiserver_factory(ServerOptions(
        bookmark_interval=1.0, admission_modules=("ovnk_core.udn.namespace_label",)))

KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
CRD_DIR = Path(ovnk_core.__file__).resolve().parent / "manifests" / "crds"
Kubectl = Callable[..., subprocess.CompletedProcess[str]]

WIDGET_CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Topology, type: string, jsonPath: .spec.topology}
    - {name: Ready, type: string, jsonPath: '.status.conditions[?(@.type=="Ready")].status'}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [topology]
            properties:
              topology: {type: string, enum: [Layer2, Layer3]}
              mtu: {type: integer, minimum: 576}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"""
NAMESPACE = """
apiVersion: v1
kind: Namespace
metadata:
  name: blue
  labels: {k8s.ovn.org/primary-user-defined-network: ""}
"""


def widget(mtu: int, topology: str = "Layer2", extra: str = "") -> str:
    return (f"apiVersion: example.org/v1\nkind: Widget\nmetadata: {{name: w1, namespace: blue}}\n"
            f"spec: {{topology: {topology}, mtu: {mtu}{extra}}}\n")


@pytest.fixture
def kubectl(kube_apiserver: ServerHandle, tmp_path: Path) -> Kubectl:
    """Run kubectl against the server: ``kubectl("get", "ns", stdin=..., check=True)``."""
    if not Path(KUBECTL).exists():
        pytest.fail("these tests drive the real kubectl, which is not installed", pytrace=False)
    kubeconfig = kube_apiserver.write_kubeconfig(tmp_path / "kubeconfig")
    cache = tmp_path / "kube-cache"

    def run(*args: str, stdin: str | None = None, check: bool = True,
            timeout: float = 30, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [KUBECTL, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}",
             "--request-timeout=20s", *args],
            input=stdin, capture_output=True, text=True, timeout=timeout,
            env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", **(env or {})})
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}): "
                                 f"{result.stderr}")
        return result

    return run


@pytest.fixture
def api(kube_apiserver: ServerHandle) -> Iterator[client.ApiClient]:
    api_client = client_for(kube_apiserver)
    yield api_client
    api_client.close()


def rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.strip().splitlines()]


def test_get_tables(kubectl: Kubectl) -> None:
    kubectl("create", "-f", "-", stdin=json.dumps({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "ovn-worker", "labels": {"node-role.kubernetes.io/worker": ""}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}],
                   "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}],
                   "nodeInfo": {"kubeletVersion": "v1.32.0"}}}))
    nodes = rows(kubectl("get", "nodes").stdout)
    assert nodes[0] == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert nodes[1][:3] == ["ovn-worker", "Ready", "worker"] and nodes[1][4] == "v1.32.0"
    wide = kubectl("get", "nodes", "-o", "wide").stdout
    assert "INTERNAL-IP" in wide and "172.18.0.2" in wide
    namespaces = rows(kubectl("get", "namespaces").stdout)
    assert namespaces[0] == ["NAME", "STATUS", "AGE"]
    assert namespaces[1][:2] == ["default", "Active"]
    assert json.loads(kubectl("get", "ns", "default", "-o", "json").stdout)["kind"] == (
        "Namespace")


def test_apply_create_then_update(kubectl: Kubectl, api: client.ApiClient) -> None:
    assert "namespace/blue created" in kubectl("apply", "-f", "-", stdin=NAMESPACE).stdout
    assert "created" in kubectl("apply", "-f", "-", stdin=WIDGET_CRD).stdout
    kubectl("wait", "--for=condition=Established", "crd/widgets.example.org", "--timeout=10s")
    assert "widget.example.org/w1 created" in kubectl("apply", "-f", "-",
                                                      stdin=widget(1400)).stdout
    assert "widget.example.org/w1 configured" in kubectl("apply", "-f", "-",
                                                         stdin=widget(1500)).stdout
    assert "unchanged" in kubectl("apply", "-f", "-", stdin=widget(1500)).stdout
    stored = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "example.org", "v1", "blue", "widgets", "w1")
    assert stored["spec"] == {"topology": "Layer2", "mtu": 1500}
    assert stored["metadata"]["generation"] == 2
    as_yaml = yaml.safe_load(kubectl("get", "wd", "w1", "-n", "blue", "-o", "yaml").stdout)
    assert as_yaml["spec"]["mtu"] == 1500
    table = rows(kubectl("get", "widgets", "-n", "blue").stdout)
    assert table[0] == ["NAME", "TOPOLOGY", "READY", "AGE"]
    assert table[1][:2] == ["w1", "Layer2"]
    namespace = NAMESPACE.replace('labels: {k8s.ovn.org/primary-user-defined-network: ""}',
                                  'labels: {k8s.ovn.org/primary-user-defined-network: "", '
                                  "team: a}")
    assert "namespace/blue configured" in kubectl("apply", "-f", "-", stdin=namespace).stdout
    labels = client.CoreV1Api(api).read_namespace("blue").metadata.labels
    assert labels["team"] == "a"


def test_apply_of_invalid_objects_fails_clearly(kubectl: Kubectl) -> None:
    kubectl("apply", "-f", "-", stdin=NAMESPACE)
    kubectl("apply", "-f", "-", stdin=WIDGET_CRD)
    bad = kubectl("apply", "-f", "-", stdin=widget(100, "Foo"), check=False)
    assert bad.returncode != 0
    assert 'The Widget "w1" is invalid' in bad.stderr
    assert 'spec.topology: Unsupported value: "Foo": supported values: "Layer2", "Layer3"' \
        in bad.stderr
    assert "spec.mtu: Invalid value: 100: spec.mtu in body should be greater than or equal " \
           "to 576" in bad.stderr
    unknown = kubectl("apply", "-f", "-", stdin=widget(1400, extra=", colour: red"),
                      check=False)
    assert unknown.returncode != 0
    assert 'strict decoding error: unknown field "spec.colour"' in unknown.stderr


def udn_yaml(layer3: str) -> str:
    return ("apiVersion: k8s.ovn.org/v1\nkind: UserDefinedNetwork\n"
            "metadata: {name: bad, namespace: blue}\n"
            f"spec: {{topology: Layer3, layer3: {layer3}}}\n")


def test_invalid_udns_get_the_lines_a_real_cluster_prints(kubectl: Kubectl,
                                                          kube_apiserver: ServerHandle) -> None:
    """A failed CEL rule prints a scalar's value (none for an object or array); a failed schema
    keyword the value or count."""
    udn_admission.register(kube_apiserver.admission)
    kubectl("apply", "-f", "-", stdin=NAMESPACE)
    kubectl("apply", "-k", str(CRD_DIR))
    deadline = time.monotonic() + 20
    while kubectl("get", "udn", "-n", "blue", check=False).returncode != 0:
        assert time.monotonic() < deadline, "the UDN kind was never served"
        time.sleep(0.2)
    bad_cidr = kubectl("apply", "-f", "-", check=False, stdin=udn_yaml(
        '{role: Primary, subnets: [{cidr: "300.0.0.0/24"}]}'))
    assert bad_cidr.returncode != 0
    assert bad_cidr.stderr.strip().endswith(
        'The UserDefinedNetwork "bad" is invalid: spec.layer3.subnets[0].cidr: Invalid value: '
        '"300.0.0.0/24": CIDR is invalid'), bad_cidr.stderr
    no_subnets = kubectl("apply", "-f", "-", check=False, stdin=udn_yaml(
        "{role: Primary, subnets: []}"))
    assert no_subnets.returncode != 0
    assert no_subnets.stderr.strip().endswith(
        'The UserDefinedNetwork "bad" is invalid: spec.layer3.subnets: Invalid value: 0: '
        "spec.layer3.subnets in body should have at least 1 items"), no_subnets.stderr
    low_mtu = kubectl("apply", "-f", "-", check=False, stdin=udn_yaml(
        '{role: Primary, mtu: 500, subnets: [{cidr: "10.0.0.0/16"}]}'))
    assert low_mtu.stderr.strip().endswith(
        "spec.layer3.mtu: Invalid value: 500: spec.layer3.mtu in body should be greater than "
        "or equal to 576"), low_mtu.stderr
    assert kubectl("get", "udn", "-n", "blue", "-o", "name").stdout == ""


def test_label_annotate_patch_delete(kubectl: Kubectl, api: client.ApiClient) -> None:
    kubectl("apply", "-f", "-", stdin=NAMESPACE)
    kubectl("label", "namespace", "blue", "team=a")
    kubectl("annotate", "namespace", "blue", "note=hello")
    ns = client.CoreV1Api(api).read_namespace("blue")
    assert ns.metadata.labels["team"] == "a" and ns.metadata.annotations["note"] == "hello"
    removed = kubectl("label", "namespace", "blue", "k8s.ovn.org/primary-user-defined-network-",
                      check=False)
    assert removed.returncode != 0
    assert ("The 'k8s.ovn.org/primary-user-defined-network' label cannot be added/removed "
            "after the namespace was created") in removed.stderr
    kubectl("apply", "-f", "-", stdin="apiVersion: v1\nkind: Pod\nmetadata: {name: p, "
                                      "namespace: blue}\nspec:\n  containers:\n  - {name: a, "
                                      "image: nginx}\n")
    kubectl("patch", "pod", "p", "-n", "blue", "-p",
            '{"spec":{"containers":[{"name":"a","image":"nginx:2"}]}}')
    kubectl("patch", "pod", "p", "-n", "blue", "--type", "merge", "-p",
            '{"metadata":{"labels":{"merged":"yes"}}}')
    kubectl("patch", "pod", "p", "-n", "blue", "--type", "json", "-p",
            '[{"op":"add","path":"/metadata/annotations/json","value":"yes"}]')
    pod = client.CoreV1Api(api).read_namespaced_pod("p", "blue")
    assert pod.spec.containers[0].image == "nginx:2" and len(pod.spec.containers) == 1
    assert pod.metadata.labels["merged"] == "yes"
    assert pod.metadata.annotations["json"] == "yes"
    assert [r[0] for r in rows(kubectl("get", "pods", "-n", "blue", "-l", "merged=yes")
                                       .stdout)] == ["NAME", "p"]
    assert 'pod "p" deleted' in kubectl("delete", "pod", "p", "-n", "blue").stdout
    assert "No resources found" in kubectl("get", "pods", "-n", "blue").stderr
    assert 'namespace "blue" deleted' in kubectl("delete", "namespace", "blue").stdout


def test_create_generators_send_protobuf(kubectl: Kubectl, api: client.ApiClient) -> None:
    assert "namespace/red created" in kubectl("create", "namespace", "red").stdout
    kubectl("create", "configmap", "settings", "-n", "red", "--from-literal=mtu=1400")
    kubectl("create", "service", "clusterip", "web", "-n", "red", "--tcp=80:8080")
    core = client.CoreV1Api(api)
    assert core.read_namespaced_config_map("settings", "red").data == {"mtu": "1400"}
    service = core.read_namespaced_service("web", "red")
    assert service.spec.cluster_ip.startswith("10.96.")
    assert (service.spec.ports[0].port, service.spec.ports[0].target_port) == (80, 8080)
    assert service.spec.selector == {"app": "web"}


def test_kubectl_reads_protobuf_replies(kubectl: Kubectl, api: client.ApiClient) -> None:
    """kubectl's generators send protobuf and accept it first: the replies it decodes and
    prints are the objects the server holds."""
    kubectl("create", "namespace", "red")
    printed = json.loads(kubectl("create", "service", "nodeport", "web", "-n", "red",
                                 "--tcp=80:8080", "--node-port=30080", "-o", "json").stdout)
    stored = client.CoreV1Api(api).read_namespaced_service("web", "red")
    assert printed["metadata"]["uid"] == stored.metadata.uid
    assert printed["spec"]["clusterIP"] == stored.spec.cluster_ip
    assert printed["spec"]["ports"] == [{"name": "80-8080", "protocol": "TCP", "port": 80,
                                         "targetPort": 8080, "nodePort": 30080}]
    kubectl("create", "serviceaccount", "alice", "-n", "red")
    token = kubectl("create", "token", "alice", "-n", "red").stdout.strip()
    assert token.count(".") == 2
    role = json.loads(kubectl("create", "role", "reader", "-n", "red", "--verb=get,list",
                              "--resource=pods", "-o", "json").stdout)
    assert role["rules"] == [{"verbs": ["get", "list"], "apiGroups": [""],
                              "resources": ["pods"]}]


def test_kubectl_wait_with_watch_list(kubectl: Kubectl, api: client.ApiClient) -> None:
    """client-go's WatchList (here switched on in kubectl 1.32 by its feature variable):
    the informer syncs only on the initial-events-end bookmark."""
    kubectl("create", "namespace", "red")
    core = client.CoreV1Api(api)
    core.create_namespaced_config_map("red", {"metadata": {"name": "late"}})
    timer = threading.Timer(1.0, lambda: core.patch_namespaced_config_map(
        "late", "red", {"data": {"a": "b"}}))
    timer.start()
    try:
        waited = kubectl("wait", "--for=jsonpath={.data.a}=b", "configmap/late", "-n", "red",
                         "--timeout=20s", env={"KUBE_FEATURE_WatchListClient": "true"},
                         check=False)
    finally:
        timer.join()
    assert waited.returncode == 0, waited.stderr
    assert "configmap/late condition met" in waited.stdout


def _lines(process: subprocess.Popen[str]) -> queue.Queue[str]:
    lines: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line.rstrip("\n"))

    threading.Thread(target=pump, daemon=True).start()
    return lines


def _next(lines: queue.Queue[str], timeout: float = 10) -> str:
    return lines.get(timeout=timeout)


def test_get_watch_streams_changes(kubectl: Kubectl, kube_apiserver: ServerHandle,
                                   tmp_path: Path, api: client.ApiClient) -> None:
    kubectl("apply", "-f", "-", stdin=NAMESPACE)
    kubectl("apply", "-f", "-", stdin=WIDGET_CRD)
    kubectl("apply", "-f", "-", stdin=widget(1400))
    process = subprocess.Popen(
        [KUBECTL, f"--kubeconfig={tmp_path / 'kubeconfig'}",
         f"--cache-dir={tmp_path / 'kube-cache'}", "get", "wd", "-n", "blue", "-w"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    try:
        lines = _lines(process)
        assert _next(lines).split()[:2] == ["NAME", "TOPOLOGY"]
        assert _next(lines).split()[:2] == ["w1", "Layer2"]
        time.sleep(0.5)
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            "example.org", "v1", "blue", "widgets", "w1", {"spec": {"topology": "Layer3"}})
        assert _next(lines).split()[:2] == ["w1", "Layer3"]
        client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
            "example.org", "v1", "blue", "widgets", "w1",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
        assert _next(lines).split()[:3] == ["w1", "Layer3", "True"]
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_wait_for_condition_written_later(kubectl: Kubectl, api: client.ApiClient) -> None:
    kubectl("apply", "-f", "-", stdin=NAMESPACE)
    kubectl("apply", "-f", "-", stdin=WIDGET_CRD)
    kubectl("apply", "-f", "-", stdin=widget(1400))

    def make_ready() -> None:
        time.sleep(1.0)
        client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
            "example.org", "v1", "blue", "widgets", "w1",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})

    writer = threading.Thread(target=make_ready)
    writer.start()
    started = time.monotonic()
    result = kubectl("wait", "--for=condition=Ready", "widget/w1", "-n", "blue",
                     "--timeout=15s")
    writer.join()
    assert "widget.example.org/w1 condition met" in result.stdout
    assert 0.8 < time.monotonic() - started < 15
    timed_out = kubectl("wait", "--for=condition=Gone", "widget/w1", "-n", "blue",
                        "--timeout=1s", check=False)
    assert timed_out.returncode != 0


def test_api_resources_lists_project_crds(kubectl: Kubectl) -> None:
    assert CRD_DIR.is_dir(), f"the project's CRD manifests are expected in {CRD_DIR}"
    kubectl("apply", "-k", str(CRD_DIR))
    listing: dict[str, Any] = {}
    for row in rows(kubectl("api-resources").stdout)[1:]:
        listing[row[0]] = row
    assert listing["userdefinednetworks"][1] == "udn"
    assert listing["clusteruserdefinednetworks"][1] == "cudn"
    assert listing["network-attachment-definitions"][1] == "net-attach-def"
    assert listing["pods"][1] == "po" and listing["namespaces"][1] == "ns"
    assert "udn" in kubectl("api-resources", "--api-group=k8s.ovn.org").stdout
