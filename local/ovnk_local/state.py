"""The local cluster's state file ``DIR/cluster.json``: its records, a lock, atomic writes.

Several processes change the file: ``ovnk local up``, ``restart`` and ``down``,
and the supervisor (``ovnk local supervise``) that restarts what died.  Every
change is a read-modify-write under an exclusive ``flock`` on
``cluster.json.lock`` (``StateFile.update``), and every write goes to a fresh
temporary file in the same directory that is fsynced and renamed over
``cluster.json``, so concurrent callers never lose each other's changes and a
reader (``status``) never sees a half-written file.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ovnk_core.atomic_file import replace_file
from ovnk_core.errors import OvnkError


class StateFileError(OvnkError):
    """``cluster.json`` cannot be read as a local cluster's state."""


@dataclass
class ProcessRecord:
    name: str
    role: str  # "infra" (API server, OVN), "supervisor", "component" or "node" (a node's)
    args: list[str]
    log: str
    pid: int = 0  # 0: not started yet (a supervised record the supervisor will start)
    started: float = 0.0
    log_offset: int = 0  # the log's size when this run started: its own output follows
    netns: str = ""  # run inside this named network namespace
    env: dict[str, str] = field(default_factory=dict)  # added to the inherited environment
    # a container's: its environment is ``env`` alone (nothing inherited), and it runs in its
    # own mount namespace with each [source, target, "ro"|"rw"] bind-mounted (mount_ns)
    container: bool = False
    mounts: list[list[str]] = field(default_factory=list)
    # -- supervision (everything but the API server) -----------------------------------------
    supervised: bool = False  # the supervisor starts it, and restarts it when it dies
    ready_file: str = ""  # written by the process once ready; removed when it dies
    ready_socket: str = ""  # a unix socket that accepts connections once it serves ({pid})
    requires: list[str] = field(default_factory=list)  # ready before it is (re)started
    bound_to: list[str] = field(default_factory=list)  # restarted when one of them restarts
    wanted: bool = True  # False once 'down' stops it on purpose: never restarted then
    restart_requested: bool = False  # 'ovnk local restart' asks the supervisor for one
    restarts: int = 0  # times the supervisor started it again after it died
    failures: int = 0  # deaths in a row after short runs: the backoff's exponent
    next_start: float = 0.0  # when the supervisor starts it again (0: not dead / not yet seen)
    last_exit: str = ""  # "exit code 1", "killed by signal 9 (SIGKILL)", ...
    last_exit_at: float = 0.0
    last_exit_log: list[str] = field(default_factory=list)  # its log's last lines then

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> ProcessRecord:
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in raw.items() if key in known})


@dataclass
class ClusterState:
    api_port: int = 0
    nodes: list[str] = field(default_factory=list)
    processes: dict[str, ProcessRecord] = field(default_factory=dict)
    dataplane: bool = False
    # the ovnk components' options given to 'up' (ovnk_local.settings): the flags on their
    # command lines, and the user's config file merged into DIR/ovnk.toml ("" for none)
    component_flags: list[str] = field(default_factory=list)
    config_source: str = ""
    # physical networks for Localnet (ovnk_local.physical_networks), with a real dataplane
    physical_networks: list[str] = field(default_factory=list)
    # IP versions of the cluster (its cluster subnets'), the primary first: the nodes'
    # underlay addresses (ovnk local up --ip-family)
    ip_families: list[int] = field(default_factory=lambda: [4])
    # ovnk local up --from-manifests DIR: the kustomize directory its components run from
    manifests: str = ""
    # the OVN every process runs (ovnk_core.ovn.install: "system" or a root's directory;
    # "" for a state written before it was recorded: the default)
    ovn: str = ""
    # "single": one OVN zone for every node; "per-node": one per node (ovnk_local.zones)
    zones: str = "single"

    @classmethod
    def load(cls, path: Path) -> ClusterState:
        if not path.exists():
            return cls()
        try:
            raw = json.loads(path.read_text())
            return cls(api_port=int(raw.get("api_port", 0)), nodes=list(raw.get("nodes", [])),
                       dataplane=bool(raw.get("dataplane", False)),
                       processes={name: ProcessRecord.from_json(record)
                                  for name, record in raw.get("processes", {}).items()},
                       component_flags=[str(flag) for flag in raw.get("component_flags", [])],
                       config_source=str(raw.get("config_source", "")),
                       physical_networks=[str(n) for n in raw.get("physical_networks", [])],
                       ip_families=[int(v) for v in raw.get("ip_families", [4])],
                       ovn=str(raw.get("ovn", "")), zones=str(raw.get("zones", "single")),
                       manifests=str(raw.get("manifests", "")))
        except (ValueError, TypeError, AttributeError) as exc:
            raise StateFileError(f"{path} is not a local cluster's state ({exc}); stop what "
                                 "it started by hand and remove it") from None

    def to_json(self) -> dict[str, Any]:
        return {"api_port": self.api_port, "nodes": self.nodes, "dataplane": self.dataplane,
                "component_flags": self.component_flags, "config_source": self.config_source,
                "physical_networks": self.physical_networks, "ip_families": self.ip_families,
                "ovn": self.ovn, "zones": self.zones, "manifests": self.manifests,
                "processes": {name: asdict(record) for name, record in self.processes.items()}}


class StateFile:
    """``cluster.json`` with its lock: ``read()`` any time, ``update()`` to change it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.with_name(path.name + ".lock")

    def read(self) -> ClusterState:
        return ClusterState.load(self.path)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the exclusive lock (released when the block ends, or the process dies)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextmanager
    def update(self) -> Iterator[ClusterState]:
        """Read the state under the lock, let the block change it, write it back atomically
        (not written when the block raises)."""
        with self.locked():
            state = self.read()
            yield state
            self.write(state)

    def write(self, state: ClusterState) -> None:
        """Replace the file atomically; call it with the lock held."""
        replace_file(self.path, json.dumps(state.to_json(), indent=2))
