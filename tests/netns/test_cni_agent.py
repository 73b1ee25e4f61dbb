"""The node agent serving ``ovn-k8s-cni-overlay`` with a real OVS: ADD plumbs the namespace
the runtime made (it creates none), answers "try again later" until ovn-controller bound
the port, then the spec result; CHECK compares the namespace with it; DEL removes the port
and veth but leaves the runtime's namespace, and succeeds again when all is gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import client_for

from ovnk_cni import spec
from ovnk_core.kube.client import KubeClient
from ovnk_core.kube.resources import NAMESPACES, PODS
from ovnk_core.node import netlink, pod_network
from ovnk_core.node.agent import NodeAgent
from ovnk_core.node.netns import NETNS_DIR
from ovnk_core.node.pod_network import Vsctl
from ovnk_core.testing.netns_fixtures import make_netns, remove_netns

pytestmark = pytest.mark.netns

NODE = "ovn-worker"
PLUGIN = shutil.which("ovn-k8s-cni-overlay", path=str(Path(sys.executable).parent))
MAC = "0a:58:0a:f4:00:05"


@pytest.fixture
def runtime_netns() -> Iterator[str]:
    name = make_netns()
    yield name
    remove_netns(name)


@pytest.fixture
def agent(kube_apiserver: ServerHandle, ovs: Vsctl, netns: str,
          tmp_path: Path) -> Iterator[NodeAgent]:
    client = KubeClient(client_for(kube_apiserver))
    client.create(NAMESPACES, {"metadata": {"name": "blue"}})
    running = NodeAgent(client, NODE, ovs, "ovnkt-none-", tmp_path / "cni.sock",
                        node_netns=netns)
    running.bind_wait = 0.3
    running.start()
    yield running
    running.stop()


def create_pod(client: KubeClient) -> dict[str, Any]:
    networks = {"default": {"ip_addresses": ["10.244.0.5/24"], "mac_address": MAC,
                            "gateway_ips": ["10.244.0.1"], "role": "primary"}}
    return client.create(PODS, {
        "metadata": {"name": "web", "namespace": "blue",
                     "annotations": {"k8s.ovn.org/pod-networks": json.dumps(networks)}},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "pause"}]}})


def call(agent: NodeAgent, command: str, netns: str, uid: str,
         prev: dict[str, Any] | None = None, container: str = "",
         extra: dict[str, Any] | None = None) -> tuple[int, dict[str, Any] | None]:
    assert PLUGIN is not None
    conf: dict[str, Any] = {"cniVersion": "1.1.0", "name": "ovn-kubernetes",
                            "type": "ovn-k8s-cni-overlay",
                            "server-socket": str(agent.cni.socket_path), **(extra or {})}
    if prev is not None:
        conf["prevResult"] = prev
    env = {"PATH": os.environ["PATH"], "CNI_COMMAND": command,
           "CNI_CONTAINERID": container or uid,
           "CNI_NETNS": str(NETNS_DIR / netns), "CNI_IFNAME": "eth0", "CNI_PATH": "/x",
           "CNI_ARGS": f"K8S_POD_NAMESPACE=blue;K8S_POD_NAME=web;K8S_POD_UID={uid}"}
    result = subprocess.run([PLUGIN], input=json.dumps(conf).encode(), env=env,
                            capture_output=True, timeout=60)
    out = result.stdout.decode().strip()
    return result.returncode, json.loads(out) if out else None


def test_add_check_del_in_the_runtimes_namespace(agent: NodeAgent, ovs: Vsctl, netns: str,
                                                runtime_netns: str) -> None:
    uid = create_pod(agent.client)["metadata"]["uid"]
    code, out = call(agent, "ADD", runtime_netns, uid)
    assert code == 1 and out is not None and out["code"] == spec.TRY_AGAIN_LATER, out
    assert "waiting for ovn-controller to bind eth0" in out["details"]
    ports = pod_network.pod_ports(ovs)["blue/web"]
    assert len(ports) == 1
    ovs("set", "interface", ports[0], "external_ids:ovn-installed=true")  # as ovn-controller

    code, result = call(agent, "ADD", runtime_netns, uid)
    assert code == 0, result
    assert result == {
        "cniVersion": "1.1.0", "dns": {},
        "interfaces": [{"name": "eth0", "sandbox": str(NETNS_DIR / runtime_netns),
                        "mac": MAC}],
        "ips": [{"address": "10.244.0.5/24", "interface": 0, "gateway": "10.244.0.1"}],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.244.0.1"}]}
    assert netlink.list_addresses("eth0", netns=runtime_netns) == ["10.244.0.5/24"]
    assert not list(NETNS_DIR.glob("ovnkt-none-*")), "the agent made a namespace of its own"

    assert call(agent, "CHECK", runtime_netns, uid, prev=result) == (0, None)
    netlink.delete_address("eth0", "10.244.0.5/24", netns=runtime_netns)
    code, out = call(agent, "CHECK", runtime_netns, uid, prev=result)
    assert code == 1 and out is not None
    assert (out["code"], out["details"]) == (spec.CHECK_FAILED,
                                             "interface eth0 lacks address 10.244.0.5/24")

    for _ in range(2):
        assert call(agent, "DEL", runtime_netns, uid, prev=result) == (0, None)
        assert pod_network.pod_ports(ovs).get("blue/web") is None
        assert netlink.link_index(ports[0], netns=netns) is None
        assert netlink.link_index("eth0", netns=runtime_netns) is None
        assert (NETNS_DIR / runtime_netns).exists()  # the runtime's to delete


def test_add_into_a_namespace_that_is_gone_changes_nothing(agent: NodeAgent, ovs: Vsctl
                                                           ) -> None:
    uid = create_pod(agent.client)["metadata"]["uid"]
    code, out = call(agent, "ADD", "ovnkt-gone", uid)
    assert code == 1 and out is not None
    assert (out["code"], out["msg"]) == (spec.INVALID_ENVIRONMENT,
                                         "the network namespace in CNI_NETNS does not exist")
    assert pod_network.pod_ports(ovs) == {}


def test_del_of_another_sandbox_leaves_the_ports_and_gc_removes_unlisted_ones(
        agent: NodeAgent, ovs: Vsctl, runtime_netns: str) -> None:
    uid = create_pod(agent.client)["metadata"]["uid"]
    call(agent, "ADD", runtime_netns, uid)  # try again later: the port is there, unbound
    [port] = pod_network.pod_ports(ovs)["blue/web"]
    assert ovs("get", "interface", port, "external_ids:sandbox").strip('"') == uid
    # an old sandbox of a namesake pod: its DEL does not unplug this one
    assert call(agent, "DEL", runtime_netns, uid, container="old-sandbox") == (0, None)
    assert pod_network.pod_ports(ovs)["blue/web"] == [port]
    valid = {"cni.dev/valid-attachments": [{"containerID": uid, "ifname": "eth0"}]}
    assert call(agent, "GC", runtime_netns, uid, extra=valid) == (0, None)
    assert pod_network.pod_ports(ovs)["blue/web"] == [port]
    assert call(agent, "GC", runtime_netns, uid,
                extra={"cni.dev/valid-attachments": []}) == (0, None)
    assert pod_network.pod_ports(ovs) == {}
