"""Real kubectl against ``ovnk local``: nobody gets in where they don't belong.

No credentials are refused as kubectl shows it against a real cluster; a
service-account token bound to a narrow Role works inside it and is Forbidden
outside; ``kubectl auth can-i`` (``--list``, ``--as``) answers from RBAC; every
ovnk process runs as its own identity and none of them may exec into pods or
delete namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import stat
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from ovnk_local.cluster import LocalCluster

from ovnk_core.identities import CLUSTER_MANAGER_USER, CONTROLLER_USER, NODES_GROUP
from ovnk_core.kube.client import KubeClient, api_client_from_kubeconfig
from ovnk_core.kube.errors import ApiError
from ovnk_core.kube.resources import NODES
from ovnk_core.testing.waiting import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster(shared_control_plane: LocalCluster) -> LocalCluster:
    """The shared 2-node cluster without a dataplane (``tests/e2e/conftest.py``); what this
    module makes is deleted after it."""
    return shared_control_plane


def kubectl(kubeconfig: Path, *args: str, stdin: str = ""
            ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), *args], input=stdin,
                          capture_output=True, text=True, timeout=60, env=env)


def admin(cluster: LocalCluster, *args: str) -> str:
    result = kubectl(cluster.kubeconfig, *args)
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def without_credentials(cluster: LocalCluster, path: Path, token: str | None = None) -> Path:
    """The admin kubeconfig with its user replaced by nothing, or by a bearer token."""
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    config["users"][0]["user"] = {"token": token} if token else {}
    path.write_text(yaml.safe_dump(config))
    return path


def test_kubeconfigs_and_keys_are_private_and_pin_the_ca(cluster: LocalCluster) -> None:
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    assert config["clusters"][0]["cluster"]["server"].startswith("https://127.0.0.1:")
    assert config["clusters"][0]["cluster"]["certificate-authority-data"]
    for path in [cluster.kubeconfig, *cluster.dir.glob("kubeconfigs/*"),
                 *cluster.dir.glob("pki/*.key")]:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert "Username    kubernetes-admin" in admin(cluster, "auth", "whoami")


def test_no_credentials_is_unauthorized(cluster: LocalCluster, tmp_path: Path) -> None:
    # a user name and password (basic auth, which a kube-apiserver does not accept either;
    # kubectl asks for them when a kubeconfig has no credentials) or a made-up token
    basic = without_credentials(cluster, tmp_path / "basic")
    config = yaml.safe_load(basic.read_text())
    config["users"][0]["user"] = {"username": "me", "password": "pw"}
    basic.write_text(yaml.safe_dump(config))
    # kubectl 1.32 prints what it prints against a real kube-apiserver's 401
    for kubeconfig in (basic, without_credentials(cluster, tmp_path / "bad", "nope")):
        result = kubectl(kubeconfig, "get", "pods")
        assert result.returncode != 0
        assert ("error: You must be logged in to the server (the server has asked for the "
                "client to provide credentials)") in result.stderr
    # a request with no credentials at all: the 401 Status body of a kube-apiserver
    server = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    context = ssl.create_default_context(cafile=str(cluster.pki_dir / "ca.crt"))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{server}/api/v1/pods", context=context, timeout=10)
    assert refused.value.code == 401
    assert json.loads(refused.value.read()) == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401}


def test_a_token_bound_to_a_narrow_role(cluster: LocalCluster, tmp_path: Path) -> None:
    admin(cluster, "create", "namespace", "blue")
    admin(cluster, "create", "serviceaccount", "alice", "-n", "blue")
    admin(cluster, "create", "role", "pod-reader", "--verb=get,list,watch",
          "--resource=pods", "-n", "blue")
    admin(cluster, "create", "rolebinding", "alice-reads-pods", "--role=pod-reader",
          "--serviceaccount=blue:alice", "-n", "blue")
    token = admin(cluster, "create", "token", "alice", "-n", "blue").strip()
    alice = without_credentials(cluster, tmp_path / "alice", token=token)

    inside = kubectl(alice, "get", "pods", "-n", "blue")
    assert inside.returncode == 0, inside.stderr
    outside = kubectl(alice, "get", "pods", "-n", "default")
    assert outside.returncode != 0
    assert ('Error from server (Forbidden): pods is forbidden: User '
            '"system:serviceaccount:blue:alice" cannot list resource "pods" in API group "" '
            'in the namespace "default"') in outside.stderr
    nodes = kubectl(alice, "get", "nodes")
    assert 'cannot list resource "nodes" in API group "" at the cluster scope' in nodes.stderr

    listing = kubectl(alice, "auth", "can-i", "--list", "-n", "blue")
    assert listing.returncode == 0, listing.stderr
    pods_line = next(line for line in listing.stdout.splitlines() if line.startswith("pods "))
    assert "[get list watch]" in pods_line
    assert kubectl(alice, "auth", "can-i", "delete", "pods", "-n", "blue").stdout.strip() == "no"
    assert kubectl(alice, "auth", "can-i", "list", "pods", "-n", "blue").stdout.strip() == "yes"
    as_alice = ["--as", "system:serviceaccount:blue:alice"]
    assert admin(cluster, "auth", "can-i", "list", "pods", "-n", "blue", *as_alice
                 ).strip() == "yes"
    denied = kubectl(cluster.kubeconfig, "auth", "can-i", "create", "pods", "-n", "blue",
                     *as_alice)
    assert denied.stdout.strip() == "no" and denied.returncode == 1
    # alice may not impersonate anyone
    forbidden = kubectl(alice, "get", "pods", "-n", "blue", "--as", "kubernetes-admin")
    assert ('users "kubernetes-admin" is forbidden: User "system:serviceaccount:blue:alice" '
            'cannot impersonate resource "users" in API group "" at the cluster scope'
            ) in forbidden.stderr
    # deleting the service account revokes its tokens
    admin(cluster, "delete", "serviceaccount", "alice", "-n", "blue")
    revoked = kubectl(alice, "get", "pods", "-n", "blue")
    assert "error: You must be logged in to the server" in revoked.stderr


COMPONENTS = [
    ("cluster-manager", [], CLUSTER_MANAGER_USER, ()),
    ("controller", [], CONTROLLER_USER, ()),
    ("node-agent-ovn-worker", ["--as-group", NODES_GROUP], "system:ovn-node:ovn-worker",
     (NODES_GROUP,)),
    ("scheduler", [], "system:kube-scheduler", ()),
    ("kubelet", [], "system:ovnk-local:kubelet", ()),
    ("endpointslice-controller", [],
     "system:kube-controller-manager:endpointslice-controller", ()),
]


@pytest.mark.parametrize(("component", "as_group", "user", "groups"), COMPONENTS,
                         ids=[c[0] for c in COMPONENTS])
def test_every_component_has_its_own_identity_and_no_exec(
        cluster: LocalCluster, component: str, as_group: list[str], user: str,
        groups: tuple[str, ...]) -> None:
    kubeconfig = cluster.component_kubeconfig(component)
    who = kubectl(kubeconfig, "auth", "whoami", "-o", "yaml")
    assert who.returncode == 0, who.stderr
    info = yaml.safe_load(who.stdout)["status"]["userInfo"]
    assert info["username"] == user
    assert set(groups) <= set(info["groups"])
    assert "system:masters" not in info["groups"]
    # (``kubectl auth can-i VERB pods/exec`` would ask about a pod named "exec")
    for verb, resource, subresource in (
            ("create", "pods", "exec"), ("get", "pods", "exec"), ("delete", "namespaces", ""),
            ("create", "clusterrolebindings", ""), ("create", "serviceaccounts", "token"),
            ("impersonate", "users", "")):
        query = [verb, resource, "-A", *(["--subresource", subresource] if subresource
                                        else [])]
        own = kubectl(kubeconfig, "auth", "can-i", *query)
        assert own.stdout.strip() == "no", (component, query, own.stdout)
        impersonated = kubectl(cluster.kubeconfig, "auth", "can-i", *query, "--as", user,
                               *as_group)
        assert impersonated.stdout.strip() == "no", (component, query)


def test_the_components_ran_without_a_refused_request(cluster: LocalCluster) -> None:
    """Every permission the code needs is in its role: the API server refused nothing."""
    log = (cluster.log_dir / "apiserver.log").read_text()
    refused = [line for line in log.splitlines() if " forbidden: " in line
               and "kubernetes-admin" not in line and "blue:alice" not in line]
    assert refused == []


def test_pod_editors_cannot_forge_the_pod_networks_annotation(cluster: LocalCluster) -> None:
    admin(cluster, "create", "namespace", "green")
    admin(cluster, "create", "serviceaccount", "dev", "-n", "green")
    admin(cluster, "create", "rolebinding", "dev-edits", "--clusterrole=edit",
          "--serviceaccount=green:dev", "-n", "green")
    dev = ["--as", "system:serviceaccount:green:dev"]
    admin(cluster, "run", "web", "-n", "green", "--image=agnhost", *dev)
    forged = '{"default":{"ip_addresses":["10.244.0.5/24"],"mac_address":"0a:58:0a:f4:00:05"}}'
    refused = kubectl(cluster.kubeconfig, "annotate", "pod", "web", "-n", "green",
                      f"k8s.ovn.org/pod-networks={forged}", "--overwrite", *dev)
    assert refused.returncode != 0
    assert ('Error from server (Forbidden): admission webhook '
            '"ovn-kubernetes-admission-webhook-pod.k8s.io" denied the request: user '
            '"system:serviceaccount:green:dev" is not allowed to set the following '
            'annotations on pod: "web": [k8s.ovn.org/pod-networks]') in refused.stderr
    # nor at creation; other annotations are theirs to set
    at_create = kubectl(cluster.kubeconfig, "run", "sneaky", "-n", "green", "--image=agnhost",
                        f"--annotations=k8s.ovn.org/pod-networks={forged}", *dev)
    assert "is not allowed to set the following annotations on pod" in at_create.stderr
    admin(cluster, "annotate", "pod", "web", "-n", "green", "team=dev", *dev)
    assert kubectl(cluster.kubeconfig, "get", "pod", "sneaky", "-n", "green").returncode != 0


def test_a_node_agent_cannot_forge_another_nodes_annotations_through_the_webhook(
        cluster: LocalCluster) -> None:
    """The annotation rules run in ``ovnk webhook``, called over HTTPS through the
    ValidatingWebhookConfigurations ``ovnk local`` creates: a node agent (its own client
    certificate) that writes another node's annotations is refused in the webhook's words,
    and the node is left as it was."""
    configurations = json.loads(admin(cluster, "get", "validatingwebhookconfigurations",
                                      "-o", "json"))["items"]
    hooks = {hook["name"]: hook for item in configurations for hook in item["webhooks"]}
    node_hook = hooks["ovn-kubernetes-admission-webhook-node.k8s.io"]
    assert node_hook["clientConfig"]["url"].startswith("https://localhost:")
    assert node_hook["clientConfig"]["caBundle"] and node_hook["failurePolicy"] == "Fail"
    agent = KubeClient(api_client_from_kubeconfig(
        str(cluster.component_kubeconfig("node-agent-ovn-worker2"))))
    before = json.loads(admin(cluster, "get", "node", "ovn-worker", "-o", "json"))
    with pytest.raises(ApiError) as refused:
        agent.patch_status(NODES, "ovn-worker", {"metadata": {"annotations": {
            "k8s.ovn.org/host-cidrs": '["172.18.0.99/16"]'}}})
    assert (refused.value.code, refused.value.reason) == (403, "Forbidden")
    assert str(refused.value) == (
        'admission webhook "ovn-kubernetes-admission-webhook-node.k8s.io" denied the '
        'request: ovnkube-node on node: "ovn-worker2" is not allowed to modify nodes '
        '"ovn-worker" annotations')
    after = json.loads(admin(cluster, "get", "node", "ovn-worker", "-o", "json"))
    assert after["metadata"]["annotations"] == before["metadata"]["annotations"]
    # the webhook process decided it, from the identity in the review's userInfo
    log = (cluster.log_dir / "webhook.log").read_text()
    assert "UPDATE nodes/status ovn-worker by system:ovn-node:ovn-worker2 denied" in log


def test_the_webhook_is_supervised(cluster: LocalCluster) -> None:
    """Killed, ``ovnk webhook`` is started again by the supervisor on its port, and the
    configurations reach it again."""
    before = {s.name: s for s in cluster.status()}["webhook"]
    record = cluster.state().processes["webhook"]
    os.kill(record.pid, signal.SIGKILL)
    back = wait_until(lambda: (lambda s: s if s.restarts == before.restarts + 1 and s.ready
                               else None)({s.name: s for s in cluster.status()}["webhook"]),
                      timeout=60, what="the webhook restarted and ready")
    assert back.last_exit == "killed by signal 9 (SIGKILL)"
    forged = '{"default":{"ip_addresses":["10.244.0.9/24"],"mac_address":"0a:58:0a:f4:00:09"}}'
    admin(cluster, "create", "namespace", "teal")
    admin(cluster, "create", "rolebinding", "bob-edits", "--clusterrole=edit", "--user=bob",
          "-n", "teal")
    admin(cluster, "run", "web", "-n", "teal", "--image=agnhost")
    refused = kubectl(cluster.kubeconfig, "annotate", "pod", "web", "-n", "teal",
                      f"k8s.ovn.org/pod-networks={forged}", "--overwrite", "--as", "bob")
    assert 'admission webhook "ovn-kubernetes-admission-webhook-pod.k8s.io" denied the ' \
           'request: user "bob" is not allowed' in refused.stderr


def test_without_a_dataplane_pods_run_once_annotated(cluster: LocalCluster) -> None:
    """No node agents, no CNI: the kubelet stand-in reports a pod Running as soon as ovnk
    annotated it, instead of waiting for a CNI server that never comes."""
    admin(cluster, "run", "plain", "-n", "default", "--image=agnhost")
    admin(cluster, "wait", "--for=condition=Ready", "pod/plain", "-n", "default",
          "--timeout=30s")
    pod = yaml.safe_load(admin(cluster, "get", "pod", "plain", "-n", "default", "-o", "yaml"))
    assert "k8s.ovn.org/pod-networks" in pod["metadata"]["annotations"]
    assert pod["status"]["phase"] == "Running" and pod["status"]["podIP"]
