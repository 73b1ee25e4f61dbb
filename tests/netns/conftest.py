"""An Open vSwitch of its own for netns tests: ovsdb-server and ovs-vswitchd (userspace
``netdev`` datapath, no kernel module) serving one throwaway network namespace."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ovnk_core.cli.node_cmd import vsctl_for
from ovnk_core.node.pod_network import Vsctl
from ovnk_core.ovn.install import command, schema
from ovnk_core.ovn.processes import ensure_database
from ovnk_core.testing.waiting import wait_until


@dataclass(frozen=True)
class Ovs:
    """A running OVS: ``vsctl`` against its database, ``rundir`` where its bridges'
    OpenFlow sockets are (``<rundir>/<bridge>.mgmt``)."""

    vsctl: Vsctl
    rundir: Path

    def add_bridge(self, name: str) -> None:
        self.vsctl("--may-exist", "add-br", name, "--", "set", "bridge", name,
                   "datapath_type=netdev")


@pytest.fixture
def ovs_daemons(netns: str, tmp_path: Path) -> Iterator[Ovs]:
    """ovsdb-server and ovs-vswitchd (userspace datapath) serving ``netns``, no bridge."""
    run = tmp_path / "ovs"
    run.mkdir()
    env = {**os.environ, **{key: str(run) for key in ("OVS_RUNDIR", "OVS_LOGDIR",
                                                      "OVS_DBDIR")}}
    ensure_database(run / "conf.db", schema("vswitch"))
    socket = run / "db.sock"
    daemons = [subprocess.Popen(
        ["ip", "netns", "exec", netns, *command(program, *args, "--no-chdir", "-vconsole:off",
                                                f"--log-file={run}/{program}.log",
                                                f"--unixctl={run}/{program}.ctl")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for program, *args in (
            ("ovsdb-server", str(run / "conf.db"), f"--remote=punix:{socket}"),
            ("ovs-vswitchd", f"unix:{socket}"))]
    try:
        wait_until(socket.exists, timeout=10, what="ovsdb-server's socket")
        vsctl = vsctl_for(str(socket))
        vsctl("init")
        yield Ovs(vsctl, run)
    finally:
        for daemon in reversed(daemons):
            daemon.terminate()
            daemon.wait(timeout=10)


@pytest.fixture
def ovs(ovs_daemons: Ovs) -> Vsctl:
    """``ovs_daemons`` with ``br-int``; its ``vsctl``."""
    ovs_daemons.add_bridge("br-int")
    return ovs_daemons.vsctl
