"""Which OVN runs: programs and schemas of the host's or of a root, run through its loader."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ovnk_core.ovn import install
from ovnk_core.ovn.install import (
    OvnInstall,
    OvnInstallError,
    elf_interpreter,
    program_name,
    resolve_in_root,
)

pytestmark = pytest.mark.unit
HOST_ELF = Path(shutil.which("true") or "/bin/true")


def fake_root(tmp_path: Path) -> Path:
    """A root with an ELF ``ovn-northd`` and, as Debian's alternatives do, ``ovs-vswitchd``
    reached through an absolute link into ``/etc/alternatives``."""
    root = tmp_path / "root"
    for directory in ("usr/bin", "usr/sbin", "usr/lib/openvswitch-switch", "etc/alternatives",
                      "lib64", "usr/share/ovn"):
        (root / directory).mkdir(parents=True)
    shutil.copy(HOST_ELF, root / "usr/bin/ovn-northd")
    shutil.copy(HOST_ELF, root / "usr/lib/openvswitch-switch/ovs-vswitchd")
    os.symlink("/usr/lib/openvswitch-switch/ovs-vswitchd", root / "etc/alternatives/ovs-vswitchd")
    os.symlink("/etc/alternatives/ovs-vswitchd", root / "usr/sbin/ovs-vswitchd")
    interpreter = elf_interpreter(HOST_ELF)
    assert interpreter is not None
    loader = root / interpreter.lstrip("/")
    loader.parent.mkdir(parents=True, exist_ok=True)
    loader.write_bytes(b"")
    (root / "usr/share/ovn/ovn-nb.ovsschema").write_text("{}")
    return root


def test_links_are_followed_inside_the_root_never_to_the_hosts_programs(tmp_path: Path
                                                                        ) -> None:
    root = fake_root(tmp_path)
    assert resolve_in_root(root, "/usr/sbin/ovs-vswitchd") == \
        root / "usr/lib/openvswitch-switch/ovs-vswitchd"
    assert OvnInstall(root).program("ovs-vswitchd") == \
        root / "usr/lib/openvswitch-switch/ovs-vswitchd"
    assert OvnInstall(root).missing("ovn-northd", "ovn-trace") == ["ovn-trace"]


def test_a_roots_program_runs_through_the_roots_loader_with_its_libraries(tmp_path: Path
                                                                          ) -> None:
    root = fake_root(tmp_path)
    interpreter = elf_interpreter(HOST_ELF)
    assert interpreter is not None and interpreter.startswith("/")
    argv = OvnInstall(root).command("ovn-northd", "--version")
    assert argv[0] == str(root / interpreter.lstrip("/"))
    assert argv[1] == "--library-path"
    assert all(part.startswith(str(root)) for part in argv[2].split(":"))
    assert argv[3:] == [str(root / "usr/bin/ovn-northd"), "--version"]
    assert program_name(argv) == "ovn-northd"
    assert OvnInstall(root).schema("ovn-nb") == root / "usr/share/ovn/ovn-nb.ovsschema"
    with pytest.raises(OvnInstallError, match="ovn-trace is not in the OVN root"):
        OvnInstall(root).command("ovn-trace")


def test_the_hosts_programs_run_as_named(tmp_path: Path) -> None:
    assert OvnInstall().command("ovn-nbctl", "show") == ["ovn-nbctl", "show"]
    assert OvnInstall().schema("vswitch") == Path("/usr/share/openvswitch/vswitch.ovsschema")
    assert elf_interpreter(Path(__file__)) is None  # not a program


def test_an_unmade_root_is_a_clear_error_and_unset_means_the_hosts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(install.CACHE_ENV, str(tmp_path / "cache"))
    install._install.cache_clear()
    try:
        with pytest.raises(OvnInstallError, match="make bootstrap"):
            install.select(install.PINNED_SERIES)
        with pytest.raises(OvnInstallError, match="no such directory"):
            install.select(str(tmp_path / "nowhere"))
        assert install.select(None).root is None and install.select("").root is None
        assert install.main([str(tmp_path / "nowhere")]) == 1
    finally:
        install._install.cache_clear()


def test_development_runs_the_pinned_ovn_unless_told_otherwise(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(install.OVN_ENV, raising=False)
    install.use_development_default()
    assert os.environ[install.OVN_ENV] == install.PINNED_SERIES
    monkeypatch.setenv(install.OVN_ENV, install.SYSTEM)
    install.use_development_default()
    assert os.environ[install.OVN_ENV] == install.SYSTEM
