"""Fixtures that run real OVN databases for tests.

One NB ovsdb-server per test session (started in a temp dir, stopped at the
end); each test that asks for ``ovn_nb`` gets an empty database and a fresh
connected ``NbClient`` (the IDL reader), and ``nb_writer`` a started
``NbWriter`` (the zone controller's writer) on the same empty database.
``ovn_stack`` (for e2e) adds an SB database and ovn-northd.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ovnk_core.ovn.install import command, schema
from ovnk_core.ovn.nb import NbClient
from ovnk_core.ovn.processes import Northd, OvsdbServer
from ovnk_core.ovn.writer import NbWriter


def nbctl(remote: str, *args: str, timeout: float = 30) -> str:
    """``ovn-nbctl --db=<remote> ARGS``'s output, stripped (fails the caller on an error)."""
    return subprocess.run(command("ovn-nbctl", f"--db={remote}", *args), check=True,
                          capture_output=True, text=True, timeout=timeout).stdout.strip()


def read_rows(remote: str, table: str) -> list[Any]:
    """The rows of ``table`` as NB has them now (a fresh IDL copy, so every committed write
    of any client is in it)."""
    with NbClient([remote]).start() as reader:
        return reader.row_list(table)


@pytest.fixture(scope="session")
def ovsdb_workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ovsdb")


@pytest.fixture(scope="session")
def nb_server(ovsdb_workdir: Path) -> Iterator[OvsdbServer]:
    """A session-wide NB ovsdb-server (unix socket + TCP on 127.0.0.1)."""
    server = OvsdbServer("nb", ovsdb_workdir / "nb", schema("ovn-nb"), tcp=True).start()
    yield server
    server.stop()


@pytest.fixture
def ovn_nb(nb_server: OvsdbServer) -> Iterator[NbClient]:
    """A connected NB client on an empty database."""
    nb_server.wipe()
    client = NbClient([nb_server.remote], timeout=30).start()
    yield client
    client.stop()


@pytest.fixture
def nb_writer(ovn_nb: NbClient, nb_server: OvsdbServer) -> Iterator[NbWriter]:
    """A started NB writer on the (already emptied) database of ``ovn_nb``."""
    writer = NbWriter([nb_server.remote], timeout=30).start()
    yield writer
    writer.stop()


@dataclass
class OvnStack:
    nb: OvsdbServer
    sb: OvsdbServer
    northd: Northd


@pytest.fixture
def ovn_stack(tmp_path: Path) -> Iterator[OvnStack]:
    """NB + SB ovsdb-servers and ovn-northd, fresh for one test."""
    nb = OvsdbServer("nb", tmp_path / "ovn", schema("ovn-nb")).start()
    sb = OvsdbServer("sb", tmp_path / "ovn", schema("ovn-sb")).start()
    northd = Northd(tmp_path / "ovn", nb.remote, sb.remote).start()
    try:
        yield OvnStack(nb, sb, northd)
    finally:
        northd.stop()
        sb.stop()
        nb.stop()
