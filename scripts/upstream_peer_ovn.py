"""The OVN half of ``upstream_peer.py``: the root's OVN binaries, run on this host through the
root's own loader, and one OVN zone (NB, SB, northd) per node for upstream's zone controller."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

OVN_TOOLS = ("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-northd", "ovn-nbctl",
             "ovn-sbctl", "ovn-appctl", "ovs-appctl", "ovs-vsctl", "ovn-trace")
SOCKET_PATH_MAX = 107


class PeerError(Exception):
    """A step that cannot go on; its message says why."""


@dataclass
class Upstream:
    """``ovnkube`` and the root whose OVN binaries run on this host through its own loader."""

    root: Path
    ovnkube: Path

    def check(self) -> None:
        if not os.access(self.ovnkube, os.X_OK):
            raise PeerError(f"{self.ovnkube}: not an executable (build ovnkube first)")
        for tool in OVN_TOOLS:
            if self.binary(tool) is None:
                raise PeerError(f"{self.root}: has no {tool} (install ovn-central, ovn-host and "
                                "openvswitch-switch in it)")
        if self.root != Path("/") and not self.loader.exists():
            raise PeerError(f"{self.root}: has no {self.loader.relative_to(self.root)}")

    @property
    def loader(self) -> Path:
        return self.root / "lib64" / "ld-linux-x86-64.so.2"

    def binary(self, tool: str) -> Path | None:
        for where in ("usr/bin", "usr/sbin"):
            path = self.root / where / tool
            if path.exists():
                return path
        return None

    def command(self, tool: str) -> list[str]:
        """How to run one of the root's tools on this host."""
        binary = self.binary(tool)
        assert binary is not None
        if self.root == Path("/"):
            return [str(binary)]
        libs = f"{self.root}/usr/lib/x86_64-linux-gnu:{self.root}/lib/x86_64-linux-gnu"
        return [str(self.loader), "--library-path", libs, str(binary)]

    def write_wrappers(self, bin_dir: Path) -> None:
        """Scripts named as the tools, for upstream, which runs a bare ``ovn-nbctl``."""
        bin_dir.mkdir(parents=True, exist_ok=True)
        for tool in OVN_TOOLS:
            wrapper = bin_dir / tool
            wrapper.write_text("#!/bin/sh\nexec " + " ".join(self.command(tool)) + ' "$@"\n')
            wrapper.chmod(0o755)

    def schema(self, database: str) -> Path:
        return self.root / "usr" / "share" / "ovn" / f"ovn-{database}.ovsschema"

    def versions(self) -> str:
        ovnkube = run([str(self.ovnkube), "--version"]).splitlines()
        ovn = run([*self.command("ovn-nbctl"), "--version"]).splitlines()
        return f"ovnkube {ovnkube[0].split(':', 1)[-1].strip()}, {ovn[0]}"


def run(args: list[str], env: dict[str, str] | None = None, check: bool = True) -> str:
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    if check and done.returncode != 0:
        raise PeerError(f"{' '.join(args[:6])}...: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


@dataclass
class Zone:
    """One node's OVN: NB, SB and northd, sockets where ``--nb-run-dir`` points upstream."""

    node: str
    dir: Path

    @property
    def nb(self) -> str:
        return f"unix:{self.dir}/ovnnb_db.sock"

    @property
    def pidfiles(self) -> list[str]:
        return [f"{self.dir}/{name}.pid" for name in ("nb", "sb", "northd")]

    def start(self, upstream: Upstream) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        if len(str(self.dir / "ovnnb_db.sock")) > SOCKET_PATH_MAX:
            raise PeerError(f"{self.dir}: too long for a unix socket path; use a shorter --dir")
        for db, schema in (("nb", "OVN_Northbound"), ("sb", "OVN_Southbound")):
            run([*upstream.command("ovsdb-tool"), "create", f"{self.dir}/{db}.db",
                 str(upstream.schema(db))])
            run([*upstream.command("ovsdb-server"), "--detach", "--no-chdir",
                 f"--pidfile={self.dir}/{db}.pid", f"--unixctl={self.dir}/{db}.ctl",
                 f"--log-file={self.dir}/{db}.log", f"--remote=punix:{self.dir}/ovn{db}_db.sock",
                 f"--remote=db:{schema},{'NB' if db == 'nb' else 'SB'}_Global,connections",
                 f"{self.dir}/{db}.db"])
        run([*upstream.command("ovn-northd"), "--detach", "--no-chdir",
             f"--pidfile={self.dir}/northd.pid", f"--log-file={self.dir}/northd.log",
             f"--unixctl={self.dir}/northd.ctl", f"--ovnnb-db={self.nb}",
             f"--ovnsb-db=unix:{self.dir}/ovnsb_db.sock"])
        run([*upstream.command("ovn-nbctl"), f"--db={self.nb}", "--wait=sb", "init"])

    def ports(self, upstream: Upstream) -> list[str]:
        """Every logical switch port's addresses (``"<mac> <ip>..."``)."""
        out = json.loads(run([*upstream.command("ovn-nbctl"), f"--db={self.nb}",
                              "--format=json", "--columns=addresses", "list",
                              "Logical_Switch_Port"]))
        addresses = []
        for (cell,) in out["data"]:
            values = cell[1] if isinstance(cell, list) and cell[0] == "set" else [cell]
            addresses += [value for value in values if isinstance(value, str)]
        return addresses

    def rows(self, upstream: Upstream, table: str) -> list[str]:
        out = json.loads(run([*upstream.command("ovn-nbctl"), f"--db={self.nb}",
                              "--format=json", "--columns=name", "list", table]))
        return [str(name) for (name,) in out["data"]]
