"""Which OVN and OVS ovnk runs: the one place that resolves their programs and schemas.

ovnk runs OVN's and OVS's programs itself: ``ovnk local`` and the test fixtures start
ovsdb-server, ovn-northd, ovs-vswitchd and ovn-controller; ``ovnk reachability`` runs
``ovn-trace``; a node agent runs ``ovs-vsctl`` and ``ovs-ofctl``.  Every such command line
and every schema file comes from here, so that all of them are of one OVN and the OVS it
was built with.  An install is either

* the host's (``system``): programs on ``PATH``, schemas under ``/usr/share``; or
* a root: a directory holding another Debian suite (``scripts/ovn-root.sh`` makes the
  pinned one, OVN 26.03 with OVS 4.0, in the cache directory).  Its programs run on the
  host through the root's own loader with the root's libraries
  (``ROOT/lib64/ld-linux-x86-64.so.2 --library-path ROOT/usr/lib/<arch>:ROOT/lib/<arch>
  ROOT/usr/bin/ovn-northd ...``); nothing of that suite is installed on the host.

``OVNK_OVN`` selects it: ``system``; ``26.03`` (the pinned root, an error when it has not
been made); a root's directory.  Unset, ovnk's own components (a node agent on a real node)
run the host's, while development (``ovnk local``, the test tiers, the benchmarks: see
``use_development_default``) runs the pinned root, the OVN upstream runs.  A process that
starts others passes ``OvnInstall.environment()`` on, so a whole local cluster runs one
install.  ``python -m ovnk_core.ovn.install [SPEC]`` says which OVN a spec selects and what
it lacks (``make bootstrap`` ends with it).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import struct
import subprocess
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ovnk_core.errors import OvnkError

OVN_ENV = "OVNK_OVN"
CACHE_ENV = "OVNK_CACHE_DIR"
SYSTEM = "system"
PINNED_SERIES = "26.03"  # the OVN upstream OVN-Kubernetes builds and tests against
STAMP = ".ovnk-root"  # written by scripts/ovn-root.sh once the root is complete
SCHEMAS = {"ovn-nb": "usr/share/ovn/ovn-nb.ovsschema",
           "ovn-sb": "usr/share/ovn/ovn-sb.ovsschema",
           "vswitch": "usr/share/openvswitch/vswitch.ovsschema"}
PROGRAM_DIRS = ("usr/bin", "usr/sbin", "bin", "sbin")
_PT_INTERP = 3
_VERSION = re.compile(r"\s(\d+\.\d+\.\d+)\s*$")


class OvnInstallError(OvnkError):
    """The selected OVN cannot be used: its root was not made, or a program is missing."""


def cache_dir() -> Path:
    """ovnk's cache: ``$OVNK_CACHE_DIR``, else ``$XDG_CACHE_HOME/ovnk``, else ``~/.cache/ovnk``
    (shared by every checkout of one user)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ovnk"


def pinned_root() -> Path:
    """Where ``scripts/ovn-root.sh`` makes the root of the pinned OVN series."""
    return cache_dir() / f"ovn-{PINNED_SERIES}"


def resolve_in_root(root: Path, path: str) -> Path:
    """``path`` (absolute, as seen inside ``root``) with its symlinks followed as a chroot
    would: an absolute link target is taken inside ``root`` too (Debian's alternatives, e.g.
    ``/usr/sbin/ovs-vswitchd -> /etc/alternatives/ovs-vswitchd``, would otherwise lead to the
    host's own programs)."""
    parts = [p for p in path.split("/") if p]
    resolved: list[str] = []
    for _ in range(64):  # at most this many links followed
        while parts:
            part = parts.pop(0)
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            if part == ".":
                continue
            candidate = root.joinpath(*resolved, part)
            if candidate.is_symlink():
                target = os.readlink(candidate)
                if target.startswith("/"):
                    resolved = []
                parts = [p for p in target.split("/") if p] + parts
                break
            resolved.append(part)
        else:
            return root.joinpath(*resolved)
    raise OvnInstallError(f"too many symbolic links resolving {path} in {root}")


def elf_interpreter(program: Path) -> str | None:
    """The program's ELF interpreter (``PT_INTERP``: its loader's path), None if it has
    none (a script, a static binary)."""
    with open(program, "rb") as handle:
        header = handle.read(64)
        if header[:4] != b"\x7fELF" or header[4] != 2:  # 64-bit ELF only
            return None
        endian = "<" if header[5] == 1 else ">"
        phoff, = struct.unpack_from(endian + "Q", header, 32)
        phentsize, phnum = struct.unpack_from(endian + "HH", header, 54)
        for index in range(phnum):
            handle.seek(phoff + index * phentsize)
            p_type, _flags, offset, _vaddr, _paddr, size = struct.unpack(
                endian + "IIQQQQ", handle.read(40))
            if p_type == _PT_INTERP:
                handle.seek(offset)
                return handle.read(size).rstrip(b"\0").decode()
    return None


@dataclass(frozen=True)
class OvnInstall:
    """One OVN with its OVS: the host's (``root`` None) or a root's."""

    root: Path | None = None

    @property
    def spec(self) -> str:
        """What ``OVNK_OVN`` says to select this install again."""
        return SYSTEM if self.root is None else str(self.root)

    def environment(self) -> dict[str, str]:
        """The variables a child process needs to run this same install."""
        return {OVN_ENV: self.spec}

    def program(self, name: str) -> Path | None:
        """The program's file (symlinks followed inside the root), None when missing."""
        if self.root is None:
            found = shutil.which(name)
            return Path(found) if found else None
        for directory in PROGRAM_DIRS:
            path = resolve_in_root(self.root, f"/{directory}/{name}")
            if path.is_file():
                return path
        return None

    def missing(self, *names: str) -> list[str]:
        """Which of these programs this install lacks."""
        return [name for name in names if self.program(name) is None]

    @functools.cached_property
    def _library_path(self) -> str:
        assert self.root is not None
        arch = sysconfig.get_config_var("MULTIARCH") or f"{os.uname().machine}-linux-gnu"
        return ":".join(str(self.root / d / arch) for d in ("usr/lib", "lib"))

    def command(self, name: str, *args: str) -> list[str]:
        """The command line running program ``name`` with ``args``.

        :raises OvnInstallError: this install has no such program.
        """
        if self.root is None:
            return [name, *args]  # found on PATH when it runs, as always
        path = self.program(name)
        if path is None:
            raise OvnInstallError(f"{name} is not in the OVN root {self.root}")
        interpreter = elf_interpreter(path)
        if interpreter is None:
            return [str(path), *args]
        loader = resolve_in_root(self.root, interpreter)
        return [str(loader), "--library-path", self._library_path, str(path), *args]

    def schema(self, name: str) -> Path:
        """The schema file ``name`` (``ovn-nb``, ``ovn-sb``, ``vswitch``) of this install."""
        relative = SCHEMAS[name]
        if self.root is None:
            return Path("/") / relative
        return resolve_in_root(self.root, "/" + relative)

    @functools.cached_property
    def versions(self) -> dict[str, str]:
        """``{"ovn": ..., "ovs": ...}``: from the root's stamp, else asked of the programs."""
        if self.root is not None and (self.root / STAMP).is_file():
            stamp = dict(line.split(" ", 1) for line in
                         (self.root / STAMP).read_text().splitlines() if " " in line)
            if "ovn" in stamp and "ovs" in stamp:
                return {"ovn": stamp["ovn"], "ovs": stamp["ovs"]}
        return {"ovn": self._asked_version("ovn-nbctl"), "ovs": self._asked_version("ovs-vsctl")}

    def _asked_version(self, program: str) -> str:
        try:
            out = subprocess.run(self.command(program, "--version"), capture_output=True,
                                 text=True, timeout=30).stdout
        except (OSError, OvnInstallError, subprocess.TimeoutExpired):
            return "unknown"
        match = _VERSION.search(out.splitlines()[0]) if out else None
        return match.group(1) if match else "unknown"

    def describe(self) -> str:
        """``OVN 26.03.1 with OVS 4.0.0 (root DIR)`` or ``... (the host's)``."""
        where = "the host's" if self.root is None else f"root {self.root}"
        return f"OVN {self.versions['ovn']} with OVS {self.versions['ovs']} ({where})"


def program_name(argv: list[str]) -> str:
    """The program a command line runs, its loader aside (``OvnInstall.command``)."""
    if len(argv) > 3 and argv[1] == "--library-path":
        return os.path.basename(argv[3])
    return os.path.basename(argv[0]) if argv else ""


@functools.cache
def _install(spec: str) -> OvnInstall:
    if spec == SYSTEM:
        return OvnInstall()
    root = pinned_root() if spec == PINNED_SERIES else Path(spec).resolve()
    if spec == PINNED_SERIES and not (root / STAMP).is_file():
        raise OvnInstallError(
            f"OVN {PINNED_SERIES} has not been installed: no root at {root} (`make bootstrap` "
            f"makes it, see scripts/ovn-root.sh); {OVN_ENV}=system runs the host's OVN")
    if not root.is_dir():
        raise OvnInstallError(f"{OVN_ENV}={spec}: no such directory")
    return OvnInstall(root)


def select(spec: str | None) -> OvnInstall:
    """The install ``spec`` names (see the module's docstring; None or empty: the host's).

    :raises OvnInstallError: it names a root that does not exist.
    """
    return _install(spec or SYSTEM)


def use_development_default() -> None:
    """Make the pinned OVN (``PINNED_SERIES``) this process's and its children's, unless
    ``OVNK_OVN`` already names one: what ``ovnk local``, the test tiers and the benchmarks
    run by default."""
    os.environ.setdefault(OVN_ENV, PINNED_SERIES)


def selected() -> OvnInstall:
    """The install ``$OVNK_OVN`` selects."""
    return select(os.environ.get(OVN_ENV))


def command(name: str, *args: str) -> list[str]:
    """The command line running the selected install's program ``name`` with ``args``."""
    return selected().command(name, *args)


def schema(name: str) -> Path:
    """The selected install's schema file ``name`` (``ovn-nb``, ``ovn-sb``, ``vswitch``)."""
    return selected().schema(name)


REQUIRED_PROGRAMS = ("ovsdb-server", "ovsdb-tool", "ovsdb-client", "ovn-northd", "ovn-nbctl",
                     "ovn-sbctl", "ovn-trace", "ovn-controller", "ovs-vswitchd", "ovs-vsctl",
                     "ovs-ofctl", "ovs-appctl")


def problems(ovn: OvnInstall) -> list[str]:
    """What ``ovn`` lacks for ``ovnk local`` and the tests (empty: nothing): programs,
    schemas, and for the pinned root the series it was made for."""
    found = [f"missing {name}" for name in ovn.missing(*REQUIRED_PROGRAMS)]
    found += [f"missing the {name} schema {ovn.schema(name)}" for name in SCHEMAS
              if not ovn.schema(name).is_file()]
    if ovn.root == pinned_root().resolve() and \
            not ovn.versions["ovn"].startswith(PINNED_SERIES + "."):
        found.append(f"its OVN is {ovn.versions['ovn']}, not {PINNED_SERIES}.x "
                     f"(remove {ovn.root} and run make bootstrap again)")
    return found


def main(argv: list[str]) -> int:
    """``python -m ovnk_core.ovn.install [SPEC]``: which OVN ``SPEC`` (default: the
    development default) selects, and what it lacks; 1 when anything.
    ``python -m ovnk_core.ovn.install exec PROGRAM ARGS...``: run that OVN's program (a
    script's ``ovn-nbctl`` of a local cluster, with ``OVNK_OVN`` from its ``ovn-install``)."""
    if argv[:1] == ["exec"] and len(argv) > 1:
        try:
            argv = select(os.environ.get(OVN_ENV) or PINNED_SERIES).command(*argv[1:])
        except OvnInstallError as exc:
            print(f"ovnk: {exc}")
            return 1
        os.execv(argv[0], argv) if os.path.isabs(argv[0]) else os.execvp(argv[0], argv)
    spec = argv[0] if argv else os.environ.get(OVN_ENV) or PINNED_SERIES
    try:
        ovn = select(spec)
    except OvnInstallError as exc:
        print(f"ovnk: {exc}")
        return 1
    found = problems(ovn)
    print(f"ovnk: {OVN_ENV}={spec}: {ovn.describe()}")
    for problem in found:
        print(f"ovnk:   {problem}")
    return 1 if found else 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
