"""Running OVN's own daemons (ovsdb-server for NB/SB, ovn-northd) as child processes.

Tests and the local cluster need real OVN databases.  Daemons run in the
foreground as children (not ``--detach``): the parent owns their lifetime,
``stop()`` terminates and reaps them, and nothing is left behind.  Each gets
its own run directory, so the system paths under /var/run are never used.
Programs and schemas are the selected OVN's (``ovnk_core.ovn.install``).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ovnk_core.errors import OvnkError
from ovnk_core.ovn.install import command

_PORT_LINE = re.compile(r"listening on port (\d+)")


class ProcessError(OvnkError):
    """A daemon failed to start or exited early; the message quotes its log."""


def _wait_for(predicate: object, timeout: float, what: str, proc: subprocess.Popen[bytes],
              log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return
        if proc.poll() is not None:
            raise ProcessError(f"{what} exited with {proc.returncode}: {_tail(log)}")
        time.sleep(0.01)
    raise ProcessError(f"{what} not ready after {timeout:.0f}s: {_tail(log)}")


SUN_PATH_MAX = 107  # bytes of a unix socket's path (sun_path, its NUL aside)


def unix_socket_accepts(path: Path | str, timeout: float = 1.0) -> bool:
    """Whether a server accepts connections on a unix socket: its file appears at ``bind``,
    before the server listens, and stays behind when a server dies.  A path too long for
    ``sun_path`` (a deep test directory) is reached through its directory's descriptor,
    as OVS reaches it (``/proc/self/fd/N/NAME``)."""
    address, directory = str(path), None
    if len(address.encode()) > SUN_PATH_MAX:
        try:
            directory = os.open(os.path.dirname(address) or ".", os.O_PATH | os.O_DIRECTORY)
        except OSError:
            return False
        address = f"/proc/self/fd/{directory}/{os.path.basename(address)}"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            try:
                sock.connect(address)
            except OSError:
                return False
        return True
    finally:
        if directory is not None:
            os.close(directory)


def stop_child(proc: subprocess.Popen[bytes] | None, grace: float = 10.0) -> None:
    """TERM a child daemon, KILL it after ``grace`` seconds, and reap it."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _tail(log: Path, lines: int = 5) -> str:
    try:
        return " | ".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class OvsdbServer:
    """One ovsdb-server serving one database file over a unix socket (and optionally TCP).

    :ivar name: short name used for file names (``nb``, ``sb``).
    :ivar workdir: directory for the db file, socket, control socket and log.
    :ivar schema: schema file the database is created from (when it does not exist yet).
    """

    name: str
    workdir: Path
    schema: Path
    tcp: bool = False
    raft_local: str = ""  # tcp:IP:PORT of this member when the database is a RAFT cluster
    raft_join: tuple[str, ...] = ()  # members to join; empty with raft_local = create it
    new_session: bool = False  # outlive the parent (local cluster), instead of dying with it
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    tcp_port: int | None = None

    @property
    def db_path(self) -> Path:
        return self.workdir / f"{self.name}.db"

    @property
    def socket(self) -> Path:
        return self.workdir / f"{self.name}.sock"

    @property
    def ctl(self) -> Path:
        return self.workdir / f"{self.name}.ctl"

    @property
    def log(self) -> Path:
        return self.workdir / f"{self.name}.log"

    @property
    def remote(self) -> str:
        return f"unix:{self.socket}"

    @property
    def tcp_remote(self) -> str:
        if self.tcp_port is None:
            raise ProcessError(f"ovsdb-server {self.name} has no TCP listener")
        return f"tcp:127.0.0.1:{self.tcp_port}"

    @property
    def schema_name(self) -> str:
        return str(json.loads(self.schema.read_text())["name"])

    def start(self, timeout: float = 10.0) -> OvsdbServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        if not self.raft_local:
            ensure_database(self.db_path, self.schema)
        elif not self.db_path.exists():
            if not self.raft_join:
                create = command("ovsdb-tool", "create-cluster", str(self.db_path),
                                 str(self.schema), self.raft_local)
            else:
                create = command("ovsdb-tool", "join-cluster", str(self.db_path),
                                 self.schema_name, self.raft_local, *self.raft_join)
            subprocess.run(create, check=True, capture_output=True)
        for stale in (self.socket, self.ctl):
            stale.unlink(missing_ok=True)
        args = command("ovsdb-server", str(self.db_path), f"--remote=punix:{self.socket}",
                       f"--unixctl={self.ctl}", f"--log-file={self.log}", "--no-chdir",
                       "-vconsole:off", "-vfile:info")
        if self.tcp:
            args.append("--remote=ptcp:0:127.0.0.1")
        self.log.write_text("")
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL,
                                     start_new_session=self.new_session)
        _wait_for(lambda: unix_socket_accepts(self.socket), timeout,
                  f"ovsdb-server {self.name}", self.proc, self.log)
        if self.tcp:
            _wait_for(lambda: _PORT_LINE.search(self.log.read_text()) is not None, timeout,
                      f"ovsdb-server {self.name} TCP listener", self.proc, self.log)
            match = _PORT_LINE.search(self.log.read_text())
            assert match is not None
            self.tcp_port = int(match.group(1))
        return self

    def stop(self) -> None:
        stop_child(self.proc)
        self.proc = None

    def transact(self, operations: list[object]) -> object:
        """Run a raw OVSDB transaction with ovsdb-client (used to wipe or seed databases)."""
        document = json.dumps([self.schema_name, *operations])
        out = subprocess.run(command("ovsdb-client", "transact", self.remote, document),
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out)

    def root_tables(self) -> list[str]:
        tables = json.loads(self.schema.read_text())["tables"]
        return sorted(name for name, table in tables.items() if table.get("isRoot"))

    def wipe(self) -> None:
        """Delete every row of every root table (non-root rows go with them)."""
        self.transact([{"op": "delete", "table": table, "where": []}
                       for table in self.root_tables()])


def ensure_database(path: Path, schema: Path) -> bool:
    """Create a standalone database file from ``schema``, or convert one made from another
    version of it (another OVN's: a database kept across an OVN upgrade or downgrade), as
    ``ovn-ctl`` does at start.  True when it was created or converted.

    :raises ProcessError: ``ovsdb-tool`` refused (the message is its own).
    """
    if path.exists():
        needs = _ovsdb_tool("needs-conversion", str(path), str(schema)).strip()
        if needs != "yes":
            return False
        _ovsdb_tool("convert", str(path), str(schema))
        return True
    path.parent.mkdir(parents=True, exist_ok=True)
    _ovsdb_tool("create", str(path), str(schema))
    return True


def _ovsdb_tool(*args: str) -> str:
    result = subprocess.run(command("ovsdb-tool", *args), capture_output=True, text=True)
    if result.returncode != 0:
        raise ProcessError(f"ovsdb-tool {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def free_tcp_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_raft_cluster(name: str, workdir: Path, schema: Path, size: int = 3) -> list[OvsdbServer]:
    """Start a ``size``-member RAFT cluster of one database on 127.0.0.1."""
    addresses = [f"tcp:127.0.0.1:{free_tcp_port()}" for _ in range(size)]
    members = []
    for index, address in enumerate(addresses):
        member = OvsdbServer(f"{name}{index}", workdir, schema, raft_local=address,
                             raft_join=tuple(addresses[:1]) if index else ())
        members.append(member.start())
    return members


def cluster_status(server: OvsdbServer) -> str:
    """``cluster/status`` of a RAFT member (its role: leader or follower, and more)."""
    return subprocess.run(
        command("ovs-appctl", "-t", str(server.ctl), "cluster/status", server.schema_name),
        check=True, capture_output=True, text=True).stdout


def raft_leader(members: list[OvsdbServer]) -> OvsdbServer:
    """The member that is the RAFT leader now.

    :raises ProcessError: none of them is.
    """
    for member in members:
        if re.search(r"^Role: leader", cluster_status(member), re.M):
            return member
    raise ProcessError("no RAFT leader among " + ", ".join(m.name for m in members))


@dataclass
class Northd:
    """ovn-northd translating one NB database into one SB database."""

    workdir: Path
    nb_remote: str
    sb_remote: str
    new_session: bool = False
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def log(self) -> Path:
        return self.workdir / "northd.log"

    def start(self, timeout: float = 10.0) -> Northd:
        self.workdir.mkdir(parents=True, exist_ok=True)
        ctl = self.workdir / "northd.ctl"
        ctl.unlink(missing_ok=True)
        env = dict(os.environ, OVN_RUNDIR=str(self.workdir), OVS_RUNDIR=str(self.workdir))
        self.log.write_text("")
        self.proc = subprocess.Popen(
            command("ovn-northd", f"--ovnnb-db={self.nb_remote}", f"--ovnsb-db={self.sb_remote}",
                    f"--unixctl={ctl}", f"--log-file={self.log}", "--no-chdir", "-vconsole:off"),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=env, start_new_session=self.new_session,
        )
        _wait_for(ctl.exists, timeout, "ovn-northd", self.proc, self.log)
        return self

    def stop(self) -> None:
        stop_child(self.proc)
        self.proc = None
