"""nftables through libnftables: owned tables replaced atomically, sets edited in place.

A feature that needs host rules owns one table (``inet ovnk-<feature>``) and
describes all of it with ``NftTable``; ``apply_table`` replaces exactly that
table in one nftables transaction (create if missing, delete, define), so
readers never see a half-written ruleset and other tables are never touched.
Rules and elements are written as nft text, which expresses everything
(libnftables 1.0.6's JSON input rejects ``socket cgroupv2`` and ``typeof``,
and reads a string element such as ``10.0.0.0/24`` as a host name); state is
read back through the JSON API, whose structured form suits comparison.

Each call opens its own libnftables context inside the target network
namespace (``node.netns``); contexts are never shared across namespaces.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ovnk_core.errors import CapabilityError, OvnkError
from ovnk_core.node.netns import run_in_netns

log = logging.getLogger(__name__)


class NftError(OvnkError):
    """nft refused a command; the message carries nft's own error text."""


@dataclass(frozen=True)
class NftChain:
    name: str
    type: str | None = None  # filter, nat, route (base chains only)
    hook: str | None = None
    priority: int | str | None = None
    policy: str | None = None
    comment: str = ""

    def render(self) -> str:
        comment = f'\t\tcomment "{self.comment}";\n' if self.comment else ""
        if self.type is None:
            return f"\tchain {self.name} {{\n{comment}\t}}\n"
        policy = f" policy {self.policy};" if self.policy else ""
        return (f"\tchain {self.name} {{\n{comment}\t\ttype {self.type} hook {self.hook} "
                f"priority {self.priority};{policy}\n\t}}\n")


@dataclass(frozen=True)
class NftSet:
    name: str
    type: str  # "ipv4_addr", "ipv4_addr . inet_proto . inet_service", or "typeof ..."
    flags: tuple[str, ...] = ()
    elements: tuple[str, ...] = ()  # in nft syntax: "10.0.0.1", "10.0.0.0/24", "a . tcp . 80"
    comment: str = ""

    def render(self) -> str:
        kind = self.type if self.type.startswith("typeof ") else f"type {self.type}"
        lines = [f"\tset {self.name} {{", f"\t\t{kind};"]
        if self.flags:
            lines.append(f"\t\tflags {', '.join(self.flags)};")
        if self.comment:
            lines.append(f'\t\tcomment "{self.comment}";')
        if self.elements:
            lines.append(f"\t\telements = {{ {', '.join(self.elements)} }};")
        lines.append("\t}")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class NftRule:
    chain: str
    rule: str  # nft syntax, e.g. 'ip daddr @blocked counter drop'
    comment: str = ""

    def render(self, family: str, table: str) -> str:
        comment = f' comment "{self.comment}"' if self.comment else ""
        return f"add rule {family} {table} {self.chain} {self.rule}{comment}\n"


@dataclass(frozen=True)
class NftTable:
    family: str
    name: str
    chains: tuple[NftChain, ...] = ()
    sets: tuple[NftSet, ...] = ()
    rules: tuple[NftRule, ...] = field(default_factory=tuple)


def build_table_script(table: NftTable) -> str:
    """The nft script replacing ``table`` as a whole (one atomic transaction)."""
    body = "".join(s.render() for s in table.sets) + "".join(c.render() for c in table.chains)
    script = (f"add table {table.family} {table.name}\n"
              f"delete table {table.family} {table.name}\n"
              f"table {table.family} {table.name} {{\n{body}}}\n")
    return script + "".join(rule.render(table.family, table.name) for rule in table.rules)


def _new_context() -> Any:
    try:
        import nftables
    except ImportError as exc:
        raise CapabilityError("nftables", f"libnftables Python binding missing: {exc}") from None
    nft = nftables.Nftables()
    nft.set_json_output(True)
    nft.set_handle_output(False)
    return nft


def _run_text(script: str, what: str) -> None:
    nft = _new_context()
    rc, _out, err = nft.cmd(script)
    if rc != 0:
        raise NftError(f"nft {what} failed: {err.strip()}")


def _run_json(commands: list[dict[str, Any]], what: str) -> Any:
    nft = _new_context()
    rc, out, err = nft.json_cmd({"nftables": commands})
    if rc != 0:
        raise NftError(f"nft {what} failed: {str(err).strip()}")
    return out


def apply_table(table: NftTable, netns: str | None = None) -> None:
    """Replace ``table`` (only it) atomically in ``netns``."""
    script = build_table_script(table)
    run_in_netns(netns, lambda: _run_text(script, f"apply table {table.family} {table.name}"))
    log.debug("nft table %s %s applied in %s", table.family, table.name, netns or "host")


def delete_table(family: str, name: str, netns: str | None = None) -> None:
    """Delete the table; absent is fine."""
    script = f"add table {family} {name}\ndelete table {family} {name}\n"
    run_in_netns(netns, lambda: _run_text(script, f"delete table {family} {name}"))


def list_table(family: str, name: str, netns: str | None = None) -> list[dict[str, Any]]:
    """The table's objects as nft JSON (``[{"table": ...}, {"chain": ...}, ...]``)."""
    def list_it() -> list[dict[str, Any]]:
        out = _run_json([{"list": {"table": {"family": family, "name": name}}}],
                        f"list table {family} {name}")
        items: list[dict[str, Any]] = [item for item in out.get("nftables", [])
                                       if "metainfo" not in item]
        return items
    return run_in_netns(netns, list_it)


def list_table_text(family: str, name: str, netns: str | None = None,
                    terse: bool = True) -> str | None:
    """The table as ``nft list table`` prints it (``terse``: without set elements), or
    ``None`` when it does not exist.  Unlike the JSON listing this text is complete
    (chain comments, ``socket cgroupv2 level``), so it suits "is it already as wanted?"
    checks against the text ``nft`` would print for the wanted table."""
    def list_it() -> str | None:
        nft = _new_context()
        nft.set_json_output(False)
        nft.set_terse_output(terse)
        rc, out, err = nft.cmd(f"list table {family} {name}")
        if rc != 0:
            if "No such file or directory" in err:
                return None
            raise NftError(f"nft list table {family} {name} failed: {err.strip()}")
        return str(out)
    return run_in_netns(netns, list_it)


def list_tables(netns: str | None = None) -> list[tuple[str, str]]:
    def list_them() -> list[tuple[str, str]]:
        out = _run_json([{"list": {"tables": None}}], "list tables")
        return [(t["table"]["family"], t["table"]["name"]) for t in out.get("nftables", [])
                if "table" in t]
    return run_in_netns(netns, list_them)


def _element_text(element: Any) -> str:
    """nft text of one element as listed in nft JSON (for comparing with what we write)."""
    if isinstance(element, dict):
        if "elem" in element:
            return _element_text(element["elem"]["val"])
        if "concat" in element:
            return " . ".join(_element_text(part) for part in element["concat"])
        if "prefix" in element:
            return f"{element['prefix']['addr']}/{element['prefix']['len']}"
        if "range" in element:
            low, high = element["range"]
            return f"{_element_text(low)}-{_element_text(high)}"
    return str(element)


def set_elements(family: str, table: str, set_name: str,
                 netns: str | None = None) -> list[str]:
    """Current elements of a set, in nft text form (``10.0.0.0/24``, ``a . tcp . 80``)."""
    def read() -> list[str]:
        out = _run_json([{"list": {"set": {"family": family, "table": table,
                                           "name": set_name}}}], f"list set {set_name}")
        for item in out.get("nftables", []):
            if "set" in item:
                return [_element_text(e) for e in item["set"].get("elem", [])]
        return []
    return run_in_netns(netns, read)


def add_elements(family: str, table: str, set_name: str, elements: Iterable[str],
                 netns: str | None = None) -> None:
    """Add elements given in nft syntax; elements already present are kept."""
    items = list(elements)
    if items:
        script = f"add element {family} {table} {set_name} {{ {', '.join(items)} }}\n"
        run_in_netns(netns, lambda: _run_text(script, f"add to set {set_name}"))


def delete_elements(family: str, table: str, set_name: str, elements: Iterable[str],
                    netns: str | None = None) -> None:
    """Remove the given elements that are present (absent ones are ignored), atomically."""
    wanted = list(elements)

    def delete() -> None:
        out = _run_json([{"list": {"set": {"family": family, "table": table,
                                           "name": set_name}}}], f"list set {set_name}")
        current: set[str] = set()
        for item in out.get("nftables", []):
            if "set" in item:
                current = {_element_text(e) for e in item["set"].get("elem", [])}
        present = [e for e in wanted if e in current]
        if present:
            _run_text(f"delete element {family} {table} {set_name} {{ {', '.join(present)} }}\n",
                      f"delete from set {set_name}")
    run_in_netns(netns, delete)


def update_elements(family: str, table: str,
                    changes: Mapping[str, tuple[Iterable[str], Iterable[str]]],
                    netns: str | None = None) -> None:
    """Add and delete elements of several sets of one table in one transaction
    (``changes``: set name → (elements to add, elements to delete), in nft syntax).

    Adding a present element is a no-op; deleting an absent one makes nft refuse the
    whole transaction, so on refusal the sets are read and only present elements are
    deleted (the common case costs one nft command)."""
    def script(deletes: Mapping[str, list[str]]) -> str:
        lines = [f"delete element {family} {table} {name} {{ {', '.join(items)} }}\n"
                 for name, items in deletes.items() if items]
        lines += [f"add element {family} {table} {name} {{ {', '.join(sorted(add))} }}\n"
                  for name, (add, _delete) in changes.items() if add]
        return "".join(lines)

    wanted = {name: sorted(delete) for name, (_add, delete) in changes.items()}
    text = script(wanted)
    if not text:
        return

    def update() -> None:
        try:
            _run_text(text, f"update sets of {family} {table}")
            return
        except NftError:
            if not any(wanted.values()):
                raise
        present = {}
        for name, items in wanted.items():
            if items:
                out = _run_json([{"list": {"set": {"family": family, "table": table,
                                                   "name": name}}}], f"list set {name}")
                current = {_element_text(e) for item in out.get("nftables", [])
                           if "set" in item for e in item["set"].get("elem", [])}
                present[name] = [e for e in items if e in current]
        retry = script(present)
        if retry:
            _run_text(retry, f"update sets of {family} {table}")
    run_in_netns(netns, update)


PROC_MOUNTS = Path("/proc/self/mounts")


def cgroup2_root(mounts: Path = PROC_MOUNTS) -> Path | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` or a hybrid host's
    unified one), from ``mounts`` (``/proc/self/mounts`` format); None when it is not."""
    try:
        lines = mounts.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None


def probe_socket_cgroupv2(netns: str | None = None) -> bool:
    """Whether rules matching ``socket cgroupv2`` work here (kernel + mounted cgroup2)."""
    try:
        require_socket_cgroupv2(netns)
    except CapabilityError:
        return False
    return True


def cgroup2_rule_path(cgroup: Path) -> str:
    """The path nft expects for ``socket cgroupv2``: relative to /sys/fs/cgroup."""
    return str(cgroup.relative_to("/sys/fs/cgroup"))


def require_socket_cgroupv2(netns: str | None = None) -> None:
    """Raise ``CapabilityError('socket-cgroupv2', ...)`` unless such rules can be added."""
    root = cgroup2_root()
    if root is None:
        raise CapabilityError("socket-cgroupv2", "no cgroup2 hierarchy is mounted")
    try:
        cgroup2_rule_path(root)  # must lie under /sys/fs/cgroup for nft to resolve it
    except ValueError:
        raise CapabilityError("socket-cgroupv2",
                              f"cgroup2 is mounted at {root}, outside /sys/fs/cgroup") from None
    child = root / f"ovnk-probe-{os.getpid()}"
    try:
        child.mkdir(exist_ok=True)
    except OSError as exc:
        raise CapabilityError("socket-cgroupv2", f"cannot create a probe cgroup in {root}: "
                                                 f"{exc.strerror}") from None
    probe = NftTable("inet", "ovnk-probe-cgroupv2", chains=(NftChain("probe"),), rules=(
        NftRule("probe", f'socket cgroupv2 level 1 "{cgroup2_rule_path(child)}" accept'),))
    try:
        apply_table(probe, netns)
    except NftError as exc:
        raise CapabilityError("socket-cgroupv2", str(exc)) from None
    finally:
        try:
            delete_table("inet", probe.name, netns)
        except NftError:
            log.warning("could not remove the nft probe table in %s", netns or "host")
        try:
            child.rmdir()
        except OSError:
            log.warning("could not remove the probe cgroup %s", child)


def ruleset_json(netns: str | None = None) -> dict[str, Any]:
    """The whole ruleset as nft JSON (for diagnostics and tests)."""
    def read() -> dict[str, Any]:
        out: dict[str, Any] = _run_json([{"list": {"ruleset": None}}], "list ruleset")
        return out
    return run_in_netns(netns, read)

