"""``unix_socket_accepts``: what the supervisor and the test servers call ready."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from ovnk_core.ovn.processes import SUN_PATH_MAX, unix_socket_accepts
from ovnk_core.testing.waiting import wait_until

# binds argv[1] from its own directory (a relative name fits sun_path, as OVS does it)
SERVER = ("import os, socket, sys, time; os.chdir(os.path.dirname(sys.argv[1])); "
          "s = socket.socket(socket.AF_UNIX); s.bind(os.path.basename(sys.argv[1])); "
          "s.listen(); time.sleep(60)")


def test_a_listening_socket_accepts_and_a_stale_file_does_not(tmp_path: Path) -> None:
    path = tmp_path / "db.sock"
    assert not unix_socket_accepts(path)  # no file
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))  # bound, not listening: a server between bind and listen
    assert not unix_socket_accepts(path)
    stale.close()  # and then gone: its file stays behind
    assert path.exists() and not unix_socket_accepts(path)


def test_a_socket_deeper_than_sun_path_is_reached_through_its_directory(
        tmp_path: Path) -> None:
    """A local cluster under a deep test directory: ovs-vswitchd's control socket there is
    longer than sun_path holds, and OVS serves it anyway."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    path = deep / "ovs-vswitchd.ctl"
    assert len(str(path).encode()) > SUN_PATH_MAX
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(path)])
    try:
        wait_until(lambda: unix_socket_accepts(path), timeout=30)
    finally:
        server.kill()
        server.wait()
    assert not unix_socket_accepts(path)
