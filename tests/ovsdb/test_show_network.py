"""``ovnk show network``: the tree and dot views of a network read back from NB."""

from __future__ import annotations

import ipaddress
import logging
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ovnk_layer3.desired import build_network, build_node, build_pod

from ovnk_core.cli.main import main
from ovnk_core.config.values import ClusterSubnet
from ovnk_core.errors import OvnkError
from ovnk_core.inspect.network_view import build_view, render_dot, render_tree, resolve_network_name
from ovnk_core.networks.addressing import mac_from_ip
from ovnk_core.networks.netinfo import NetInfo
from ovnk_core.ovn.declarative import apply
from ovnk_core.ovn.install import command
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.writer import NbWriter
from ovnk_core.render_state import GatewayConfig, NetworkState, NodeState, PodAttachment
from ovnk_core.zone.owners import network_owner, node_owner, pod_owner

pytestmark = pytest.mark.ovsdb
net = ipaddress.ip_network


@pytest.fixture
def blue_nb(nb_writer: NbWriter) -> Iterator[NbClient]:
    """NB with the blue network rendered, read by a client connected afterwards."""
    render_blue(nb_writer)
    with NbClient([nb_writer.remote]).start() as reader:
        yield reader


def render_blue(nb: NbWriter) -> None:
    netinfo = NetInfo(name="blue_blue-network", topology="layer3", role="primary", mtu=1400,
                      subnets=(ClusterSubnet(net("103.103.0.0/16"), 24),),
                      join_subnets=(net("100.65.0.0/16"),))
    state = NetworkState(netinfo, 1, (net("169.254.0.0/17"),), ())
    node = NodeState("ovn-worker", (net("103.103.0.0/24"),), 2, "chassis-1",
                     GatewayConfig("shared", "breth0", "0a:58:ac:12:00:02", ("172.18.0.2/16",),
                                   ("172.18.0.1",)))
    pod = PodAttachment("blue", "blue", "uid", "ovn-worker", "blue/blue-network",
                        mac_from_ip("103.103.0.3"), ("103.103.0.3/24",))
    apply(nb, network_owner(netinfo), build_network(state))
    apply(nb, node_owner(netinfo, "ovn-worker"), build_node(state, node))
    apply(nb, pod_owner(netinfo, "blue", "blue"), build_pod(state, pod))


def test_tree_shows_routers_switches_ports_routes_and_nat(blue_nb: NbClient) -> None:
    view = build_view(blue_nb, resolve_network_name(blue_nb, "blue/blue-network"))
    text = render_tree(view)
    lines = text.splitlines()
    assert lines[0] == "network blue_blue-network (layer3, primary)"
    assert lines[1] == "   rendered on nodes: ovn-worker"  # the nodes owning rows of it
    assert lines[2] == "├─ router blue_blue.network_ovn_cluster_router  [distributed router]"
    assert "│  ├─ port rtos-blue_blue.network_ovn-worker  0a:58:67:67:00:01 103.103.0.1/24  " \
           "↔ blue_blue.network_ovn-worker" in lines
    assert "│  ├─ port blue.blue.network_blue_blue  pod blue/blue: 0a:58:67:67:00:03 " \
           "103.103.0.3" in lines
    assert any(line.endswith("─ nat snat 103.103.0.0/16 → 169.254.0.11") for line in lines)
    assert "│  ├─ route 103.103.0.0/24 via 100.65.0.2 (src-ip)" in lines
    assert lines[-1].startswith("   └─ port ") and "localnet to physnet" in lines[-2] + lines[-1]


def test_dot_is_a_graph_of_routers_and_switches(blue_nb: NbClient) -> None:
    dot = render_dot(build_view(blue_nb, "blue_blue-network"))
    assert dot.startswith('graph "blue_blue-network" {') and dot.rstrip().endswith("}")
    assert '"blue_blue.network_ovn_cluster_router" [shape=box];' in dot
    assert '"blue_blue.network_join" -- "blue_blue.network_ovn_cluster_router";' in dot
    assert '"GR_blue_blue.network_ovn-worker" -- "ext_blue_blue.network_ovn-worker";' in dot


def test_routers_peered_directly_are_linked(nb_writer: NbWriter) -> None:
    # as a primary Layer2 network's transit router and gateway routers are where OVN
    # peers them (no switch between)
    render_blue(nb_writer)
    nbctl = command("ovn-nbctl", f"--db={nb_writer.remote}")
    subprocess.run([*nbctl, "lrp-add", "blue_blue.network_ovn_cluster_router", "rtotr-x",
                    "0a:58:64:58:00:01", "100.88.0.1/16", "peer=trtor-x", "--", "lrp-add",
                    "GR_blue_blue.network_ovn-worker", "trtor-x", "0a:58:64:58:00:02",
                    "100.88.0.2/16", "peer=rtotr-x"], check=True)
    with NbClient([nb_writer.remote]).start() as reader:
        view = build_view(reader, "blue_blue-network")
    dot = render_dot(view)
    assert ('"GR_blue_blue.network_ovn-worker" -- "blue_blue.network_ovn_cluster_router";'
            in dot)
    assert "│  ├─ port rtotr-x  0a:58:64:58:00:01 100.88.0.1/16  ↔ " \
           "GR_blue_blue.network_ovn-worker" in render_tree(view).splitlines()


def test_unknown_network_lists_the_rendered_ones(blue_nb: NbClient) -> None:
    with pytest.raises(OvnkError, match=r"no network 'red' is rendered in OVN Northbound "
                                        r"\(rendered: blue_blue-network\)"):
        resolve_network_name(blue_nb, "red")


def test_the_cli_finds_a_local_clusters_northbound_from_its_kubeconfig(
        nb_writer: NbWriter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """KUBECONFIG=DIR/kubeconfig, DIR/ovnk.toml naming NB (as ovnk local writes them): no
    --nb-address or --config needed."""
    render_blue(nb_writer)
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\n")
    (tmp_path / "ovnk.toml").write_text(f'nb-address = "{nb_writer.remote}"\n')
    for name in [n for n in os.environ if n.startswith("OVNK_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        assert main(["show", "network", "blue/blue-network"]) == 0
    finally:  # main sets up the CLI's logging; give pytest its handlers back
        root.handlers[:] = handlers
        root.setLevel(level)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "network blue_blue-network (layer3, primary)"
