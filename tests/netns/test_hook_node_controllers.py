"""Hook ``ovnk_node_controllers``: when the node agent calls it, with what, and what a
``ConfigError`` from it does (the agent never starts: one line, exit code 2)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ovnk_local.apiserver.security import SecurityOptions, admin_kubeconfig
from ovnk_local.apiserver.server import ServerHandle
from ovnk_local.testing.apiserver_fixtures import component_client
from ovnk_local.testing.control_plane import cluster_with_nodes

from ovnk_core import hookimpl
from ovnk_core.contexts import NodeContext, feature_table_name
from ovnk_core.identities import NODES_GROUP, node_agent_user
from ovnk_core.kube.controller import Controller
from ovnk_core.kube.events import EventRecorder
from ovnk_core.kube.factory import InformerFactory
from ovnk_core.kube.resources import NODES
from ovnk_core.node import nft
from ovnk_core.node.feature_controllers import NodeFeatureControllers
from ovnk_core.plugins import PluginHost
from ovnk_core.testing.configs import udn_config
from ovnk_core.testing.waiting import wait_until

REFUSAL = "podset needs nftables 1.0 on the node"
GONE = ("inet", feature_table_name("gone"))

# ``ovnk node`` in a fresh interpreter, with a plugin registered by every PluginHost.load of
# the process (argv[1]: "record" or "refuse", argv[2]: the refusal) and the agent's own part
# (NodeAgent: CNI server, gateway, management ports) replaced by a stand-in that says when it
# starts and stops; the process stops itself (SIGTERM) once it is ready.
OVNK_NODE = """
import os, signal, sys, threading, time
from pathlib import Path
from ovnk_core import ConfigError, hookimpl
from ovnk_core.cli import node_cmd
from ovnk_core.cli.main import main
from ovnk_core.kube.controller import Controller
from ovnk_core.plugins import PluginHost

mode, refusal, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
ready = Path(argv[argv.index("--ready-file") + 1])

def say(text):
    print(text, flush=True)

class Agent:
    def __init__(self, *args, **kwargs):
        say("agent built")
    def start(self):
        say("agent started")
    def stop(self):
        say("agent stopped")

class Contributed(Controller):
    def __init__(self):
        super().__init__("contributed", lambda key: None,
                         initial_sync=lambda: say("plugin controller started"))
    def stop(self):
        say("plugin controller stopped")
        super().stop()

class Plugin:
    @hookimpl
    def ovnk_node_controllers(self, context):
        if mode == "refuse":
            raise ConfigError(refusal)
        say(f"hook called: {type(context).__name__} node={context.node} "
            f"netns={context.node_netns} table={context.nft_table('x')}")
        return [Contributed()]

load = PluginHost.load.__func__

def load_with_plugin(cls, config):
    host = load(cls, config)
    host.manager.register(Plugin())
    return host

PluginHost.load = classmethod(load_with_plugin)
node_cmd.NodeAgent = Agent

def stop_when_ready():
    while not ready.exists():
        time.sleep(0.05)
    say("ready")
    os.kill(os.getpid(), signal.SIGTERM)

threading.Thread(target=stop_when_ready, daemon=True).start()
sys.exit(main(argv))
"""


def ovnk_node(mode: str, kubeconfig: Path, netns: str, tmp_path: Path
              ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OVNK_")}
    return subprocess.run(
        [sys.executable, "-c", OVNK_NODE, mode, REFUSAL, "node", "--node-name", "ovn-worker",
         "--k8s-kubeconfig", str(kubeconfig), "--ovs-db", str(tmp_path / "db.sock"),
         "--cni-socket", str(tmp_path / "cni.sock"), "--pod-netns-prefix", "t-",
         "--node-netns", netns, "--no-gateway", "--ready-file", str(tmp_path / "ready")],
        capture_output=True, text=True, timeout=60, env=env, check=False)


def test_hook_ovnk_node_controllers(kube_apiserver: ServerHandle, cluster_pki: SecurityOptions,
                                    netns: str, tmp_path: Path) -> None:
    cluster_with_nodes(kube_apiserver)
    client = component_client(kube_apiserver, node_agent_user("ovn-worker"), (NODES_GROUP,))
    calls: list[NodeContext] = []
    log: list[str] = []

    class Contributor:
        @hookimpl
        def ovnk_node_controllers(self, context: NodeContext) -> list[Controller]:
            calls.append(context)
            controller = Controller(
                "contributed", lambda key: log.append(f"reconcile {key}"),
                initial_sync=lambda: log.append(
                    f"started; table of disabled feature present: "
                    f"{GONE in nft.list_tables(context.node_netns)}"))
            controller.watch(context.informers.get(NODES))
            return [controller]

    # A table left by a feature that is not enabled any more.
    nft.apply_table(nft.NftTable(*GONE, chains=(nft.NftChain("c"),)), netns)
    # the bundled isolation feature's node controller left out: only this contract's own
    config = udn_config(disabled_features="isolation")
    host = PluginHost.load(config)
    host.manager.register(Contributor())
    informers = InformerFactory(client)
    recorder = EventRecorder(client, "ovnkube-node", "ovn-worker")
    features = NodeFeatureControllers(host, NodeContext(config, client, informers, recorder,
                                                        "ovn-worker", netns))
    # Called once, while the agent is built, with the node's parts; nothing runs yet.
    [context] = calls
    assert (context.config, context.client, context.informers, context.recorder,
            context.node, context.node_netns) == (config, client, informers, recorder,
                                                  "ovn-worker", netns)
    assert context.nft_table("podset") == "ovnk-feature-podset"
    assert len(features.controllers) == 1 and log == []
    informers.start()
    try:
        informers.wait_for_sync(30)
        features.start()
        # The disabled feature's table went before the contributed controllers started.
        assert log[0] == "started; table of disabled feature present: False"
        wait_until(lambda: {"reconcile ovn-worker", "reconcile ovn-worker2"} <= set(log))
    finally:
        features.stop()
        informers.stop()
    assert len(calls) == 1

    # In the ``ovnk node`` process: after the agent's own parts start, stopped before them.
    kubeconfig = admin_kubeconfig(cluster_pki.client_ca_file.parent, kube_apiserver.url,
                                  tmp_path / "kubeconfig")
    result = ovnk_node("record", kubeconfig, netns, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "agent built",
        f"hook called: NodeContext node=ovn-worker netns={netns} table=ovnk-feature-x",
        "agent started", "plugin controller started", "ready",
        "plugin controller stopped", "agent stopped"]

    # A ConfigError from the hook: the agent is not started, with the plugin's message.
    result = ovnk_node("refuse", kubeconfig, netns, tmp_path)
    assert result.returncode == 2, result.stderr
    assert result.stdout.splitlines() == ["agent built"]
    # the operator sees which plugin refused
    assert result.stderr.splitlines()[-1] == f"ovnk node: plugin Plugin: {REFUSAL}"
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "ready").exists()
