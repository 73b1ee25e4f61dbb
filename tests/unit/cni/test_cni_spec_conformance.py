"""``ovn-k8s-cni-overlay`` against the CNI spec 1.1: every command and every bad input, run
as a runtime runs it (the installed console script, env and stdin) against a real node
agent's socket and the local API server.  A bad call gets the spec's code and message on
stdout with exit status 1 and changes nothing (no ovs-vsctl write, no OVS port)."""

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
from ovnk_core.kube.resources import NAMESPACES
from ovnk_core.node.agent import NodeAgent

pytestmark = pytest.mark.unit

NODE = "ovn-worker"
PLUGIN = shutil.which("ovn-k8s-cni-overlay", path=str(Path(sys.executable).parent))


class RecordingVsctl:
    """No OVS: records calls; the startup sync and DEL's lookup find no pod port."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, *args: str) -> str:
        self.calls.append(args)
        if args[:2] == ("--format=json", "--columns=name,external_ids"):
            return '{"data": []}'
        raise AssertionError(f"unexpected ovs-vsctl {args}")


@pytest.fixture
def client(kube_apiserver: ServerHandle) -> KubeClient:
    api = KubeClient(client_for(kube_apiserver))
    api.create(NAMESPACES, {"metadata": {"name": "blue"}})
    return api


@pytest.fixture
def agent(client: KubeClient, tmp_path: Path) -> Iterator[tuple[NodeAgent, RecordingVsctl]]:
    vsctl = RecordingVsctl()
    running = NodeAgent(client, NODE, vsctl, "ovnktest-", tmp_path / "cni" / f"{NODE}.sock")
    running.start()
    yield running, vsctl
    running.stop()


def netconf(socket: Path, version: str = "1.1.0", **extra: Any) -> bytes:
    return json.dumps({"cniVersion": version, "name": "ovn-kubernetes",
                       "type": "ovn-k8s-cni-overlay", "server-socket": str(socket),
                       **extra}).encode()


def call(env: dict[str, str], stdin: bytes) -> tuple[int, dict[str, Any] | None]:
    assert PLUGIN is not None, "the console script ovn-k8s-cni-overlay is not installed"
    result = subprocess.run([PLUGIN], input=stdin, capture_output=True, timeout=60,
                            env={"PATH": os.environ["PATH"], **env})
    out = result.stdout.decode().strip()
    return result.returncode, json.loads(out) if out else None


def base_env(command: str, netns: str = "/proc/self/ns/net") -> dict[str, str]:
    return {"CNI_COMMAND": command, "CNI_CONTAINERID": "c0ffee", "CNI_NETNS": netns,
            "CNI_IFNAME": "eth0", "CNI_PATH": "/opt/cni/bin",
            "CNI_ARGS": "IgnoreUnknown=1;K8S_POD_NAMESPACE=blue;K8S_POD_NAME=web;"
                        "K8S_POD_UID=u-1"}


def without(env: dict[str, str], name: str) -> dict[str, str]:
    return {k: v for k, v in env.items() if k != name}


def test_version_answers_the_supported_versions() -> None:
    code, out = call({"CNI_COMMAND": "VERSION"}, b'{"cniVersion": "1.0.0"}')
    assert code == 0
    assert out == {"cniVersion": "1.0.0",
                   "supportedVersions": ["0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0"]}


BAD_CALLS = [
    # (what, env change, stdin change, code, msg)
    ("no CNI_COMMAND", lambda e: without(e, "CNI_COMMAND"), None, 4,
     "required env variables [CNI_COMMAND] missing"),
    ("unknown command", lambda e: e | {"CNI_COMMAND": "FROB"}, None, 4,
     "unknown CNI_COMMAND: FROB"),
    ("ADD without CNI_NETNS", lambda e: without(e, "CNI_NETNS"), None, 4,
     "required env variables [CNI_NETNS] missing"),
    ("ADD without CNI_CONTAINERID and CNI_IFNAME",
     lambda e: without(without(e, "CNI_CONTAINERID"), "CNI_IFNAME"), None, 4,
     "required env variables [CNI_CONTAINERID,CNI_IFNAME] missing"),
    ("CHECK without CNI_PATH", lambda e: without(e | {"CNI_COMMAND": "CHECK"}, "CNI_PATH"),
     None, 4, "required env variables [CNI_PATH] missing"),
    ("a bad container ID", lambda e: e | {"CNI_CONTAINERID": "-x y"}, None, 4,
     "invalid characters in containerID"),
    ("an interface name too long", lambda e: e | {"CNI_IFNAME": "eth0123456789abc"}, None, 4,
     "interface name is too long"),
    ("an interface name with a slash", lambda e: e | {"CNI_IFNAME": "a/b"}, None, 4,
     "interface name contains / or : or whitespace characters"),
    ("CNI_ARGS without the pod", lambda e: e | {"CNI_ARGS": "K8S_POD_NAMESPACE=blue"}, None, 4,
     "required CNI_ARGS [K8S_POD_NAME] missing"),
    ("CNI_ARGS not K=V", lambda e: e | {"CNI_ARGS": "K8S_POD_NAME"}, None, 4,
     "ARGS: invalid pair"),
    ("netconf not JSON", None, b"{not json", 6, None),
    ("netconf not an object", None, b"[1]", 6,
     "error unmarshall network config: a JSON object is expected, not list"),
    ("unsupported cniVersion", None, "2.0.0", 1, "incompatible CNI versions"),
    ("no cniVersion", None, b'{"name": "n", "type": "t"}', 1, "incompatible CNI versions"),
    ("no network name", None, b'{"cniVersion": "1.1.0", "type": "t"}', 7,
     "missing network name"),
    ("STATUS on a 1.0.0 config", lambda e: e | {"CNI_COMMAND": "STATUS"}, "1.0.0", 1,
     "config version does not allow STATUS"),
    ("GC on a 0.4.0 config", lambda e: e | {"CNI_COMMAND": "GC"}, "0.4.0", 1,
     "config version does not allow GC"),
    ("CHECK on a 0.3.1 config", lambda e: e | {"CNI_COMMAND": "CHECK"}, "0.3.1", 1,
     "config version does not allow CHECK"),
    ("a netns that does not exist", lambda e: e | {"CNI_NETNS": "/var/run/netns/ovnk-none"},
     None, 4, "the network namespace in CNI_NETNS does not exist"),
    ("a pod the API does not know", None, None, 3, "the pod does not exist"),
]


@pytest.mark.parametrize(("what", "env_change", "stdin_change", "code", "msg"), BAD_CALLS,
                         ids=[case[0] for case in BAD_CALLS])
def test_a_bad_call_gets_the_spec_error_and_changes_nothing(
        agent: tuple[NodeAgent, RecordingVsctl], what: str, env_change: Any,
        stdin_change: bytes | str | None, code: int, msg: str | None) -> None:
    running, vsctl = agent
    before = list(vsctl.calls)
    env = base_env("ADD")
    if env_change is not None:
        env = env_change(env)
    stdin = netconf(running.cni.socket_path)
    if isinstance(stdin_change, str):
        stdin = netconf(running.cni.socket_path, version=stdin_change)
    elif stdin_change is not None:
        stdin = stdin_change
    status, out = call(env, stdin)
    assert status == 1, out
    assert out is not None and out["code"] == code, out
    if msg is not None:
        assert out["msg"] == msg, out
    else:
        assert out["msg"].startswith("error unmarshall network config:"), out
    assert set(out) <= {"cniVersion", "code", "msg", "details"}
    assert vsctl.calls == before  # nothing changed


def test_the_agent_checks_what_reaches_its_socket_too(
        agent: tuple[NodeAgent, RecordingVsctl]) -> None:
    """A client that skips the plugin's checks still gets the spec error from the agent."""
    from ovnk_cni.shim import forward

    running, _ = agent
    status, body = forward(str(running.cni.socket_path), {"CNI_COMMAND": "ADD"},
                           netconf(running.cni.socket_path))
    assert status == 400
    assert body == {"cniVersion": "1.1.0", "code": 4, "msg": (
        "required env variables [CNI_CONTAINERID,CNI_NETNS,CNI_IFNAME,CNI_PATH] missing")}


def test_del_of_a_pod_that_is_gone_succeeds_twice(
        agent: tuple[NodeAgent, RecordingVsctl]) -> None:
    running, vsctl = agent
    env = without(base_env("DEL", "/var/run/netns/ovnk-gone"), "CNI_NETNS")
    for _ in range(2):
        assert call(env, netconf(running.cni.socket_path)) == (0, None)
    # DEL looked for the pod's ports and found none: nothing was removed
    assert all(c[0] == "--format=json" for c in vsctl.calls)


def test_status_and_gc_of_a_serving_agent_succeed(
        agent: tuple[NodeAgent, RecordingVsctl]) -> None:
    running, _ = agent
    for command in ("STATUS", "GC"):
        env = {"CNI_COMMAND": command, "CNI_PATH": "/opt/cni/bin"}
        assert call(env, netconf(running.cni.socket_path,
                                 **{"cni.dev/valid-attachments": []})) == (0, None)


def test_an_agent_that_is_down_is_try_again_later_and_status_not_available(
        tmp_path: Path) -> None:
    socket = tmp_path / "absent.sock"
    code, out = call(base_env("ADD"), netconf(socket))
    assert code == 1 and out is not None
    assert (out["code"], out["msg"]) == (spec.TRY_AGAIN_LATER,
                                         "the ovnk node agent cannot be reached")
    code, out = call({"CNI_COMMAND": "STATUS", "CNI_PATH": "/x"}, netconf(socket))
    assert code == 1 and out is not None and out["code"] == spec.PLUGIN_NOT_AVAILABLE


def test_an_error_answers_in_the_configs_version(tmp_path: Path) -> None:
    code, out = call(base_env("ADD"), netconf(tmp_path / "absent.sock", version="0.4.0"))
    assert code == 1 and out is not None and out["cniVersion"] == "0.4.0"


def test_the_result_has_the_requested_versions_shape() -> None:
    interfaces = [spec.ResultInterface("eth0", "0a:58:0a:f4:00:03",
                                       ("10.244.0.3/24", "fd00:10:244::3/64"),
                                       ("10.244.0.1", "fd00:10:244::1"),
                                       (("10.96.0.0/16", "10.244.0.1"),))]
    result = spec.build_result("1.1.0", "/var/run/netns/p", interfaces)
    assert result == {
        "cniVersion": "1.1.0",
        "interfaces": [{"name": "eth0", "sandbox": "/var/run/netns/p",
                        "mac": "0a:58:0a:f4:00:03"}],
        "ips": [{"address": "10.244.0.3/24", "interface": 0, "gateway": "10.244.0.1"},
                {"address": "fd00:10:244::3/64", "interface": 0, "gateway": "fd00:10:244::1"}],
        "routes": [{"dst": "0.0.0.0/0", "gw": "10.244.0.1"}, {"dst": "::/0",
                                                              "gw": "fd00:10:244::1"},
                   {"dst": "10.96.0.0/16", "gw": "10.244.0.1"}],
        "dns": {}}
    legacy = spec.build_result("0.3.1", "/p", interfaces)
    assert [ip["version"] for ip in legacy["ips"]] == ["4", "6"]


def test_the_plugin_imports_only_the_standard_library() -> None:
    """The runtime executes it for every pod: it must not pay for ``ovnk_core``'s imports."""
    probe = ("import sys; import ovnk_cni.shim; "
             "print(sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)"
             " - {'ovnk_cni', '__main__'} - {m for m in sys.modules if m.startswith('_')}))")
    result = subprocess.run([sys.executable, "-S", "-c", probe], capture_output=True,
                            text=True, timeout=30, check=True,
                            env={"PYTHONPATH": str(Path(__file__).resolve().parents[3])})
    assert result.stdout.strip() == "[]", result.stdout
