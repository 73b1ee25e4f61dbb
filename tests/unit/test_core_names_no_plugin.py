"""The core names no bundled plugin: which topologies and features run is configuration.

``ovnk_core`` must not branch on — nor describe itself in terms of — a topology or feature
that ships as a plugin.  Every ``ovnk_core/**/*.py`` is tokenized and each string literal
(docstrings and f-string text included), identifier (module, function, class, variable,
attribute, keyword-argument names) and comment is split into words and identifier parts
(``check_layer2`` → ``check``, ``layer2``; ``EndpointSliceMirror`` → ``Endpoint``,
``Slice``, ``Mirror``; ``'Layer2'`` inside a CEL expression → ``Layer2``).  A part equal, in
any case, to a bundled plugin's name is a hit, reported as ``file:line``.

Rules:

* ``ovnk_core/config/defaults.py`` is the one module that may name bundled plugins: the
  default configuration lists them.
* Docstrings and comments are held to the same rule as code: describe the contract
  ("networks whose topology asks for node subnets", "cluster-wide IPAM"), not a plugin.
* ``ALLOWED_TERMS`` are exact spellings (case-sensitive) of upstream's or OVN's own names that
  contain such a word but do not mean the plugin: they are cut out of a token before it is
  split.  ``ALLOWED_LINES`` pins the one line that defines a constant for an OVN word equal
  to a plugin's name; everything else uses the constant.  Each entry says why; an entry that
  no longer matches anything fails ``test_allowed_entries_are_used``.
* ``PENDING`` is temporary: modules another change is moving out of the core right now.
  Entries are removed when those moves land; the list only ever shrinks.
"""

from __future__ import annotations

import io
import re
import textwrap
import tokenize
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

CORE = Path(__file__).resolve().parents[2] / "ovnk_core"

BUNDLED = frozenset({"layer3", "layer2", "localnet", "mirror", "isolation", "dynamic"})

DEFAULTS = "config/defaults.py"

# Exact spelling -> why it is not the plugin.  Cut out of every token before splitting it.
ALLOWED_TERMS: dict[str, str] = {
    "enable-dynamic-udn-allocation":
        "upstream's [ovnkubernetesfeature] flag, kept under its name for compatibility; which "
        "plugins it enables is config/defaults.py's FEATURES_BY_FLAG",
    "enable_dynamic_udn_allocation":
        "the same upstream flag as its Config field and TOML key (the option table derives "
        "one from the other)",
    "Dynamic UDN Allocation":
        "upstream's name of the feature that flag switches, in the flag's prerequisite "
        "message (config/validation.py)",
    "dynamic_addresses":
        "OVN Northbound's Logical_Switch_Port column that ovn-northd writes (ovn-nb(5))",
    "LSP_TYPE_LOCALNET":
        "the constant (ovn/port_types.py) naming OVN's Logical_Switch_Port type 'localnet', "
        "a port onto a physical network (ovn-nb(5)) — OVN's word, not the topology plugin",
    "k8s.ovn.org/udn-layer2-node-gateway-router-lrp-tunnel-ids":
        "upstream's node annotation name, protected by the annotations admission plugin",
}

# (path relative to ovnk_core, exact stripped line text) -> why the word there is not the plugin.
ALLOWED_LINES: dict[tuple[str, str], str] = {
    ("ovn/port_types.py", 'LSP_TYPE_LOCALNET = "localnet"'):
        "defines LSP_TYPE_LOCALNET, OVN's Logical_Switch_Port type for a port onto a "
        "physical network (ovn-nb(5)); the core uses the constant, never the string",
}

# TEMPORARY — modules being moved out of the core by changes in flight.
# Remove each entry when its move lands; never add one for new code.
PENDING: tuple[str, ...] = ()

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_CHUNK = re.compile(r"[A-Za-z0-9]+")


def _parts(text: str) -> list[str]:
    """Words and identifier parts of ``text``, lower-cased."""
    return [part.lower() for chunk in _CHUNK.findall(text) for part in _CAMEL.split(chunk)]


def _hits(source: str, terms_used: set[str]) -> list[tuple[int, str, str]]:
    """``(line, plugin name, stripped line text)`` of every mention in one module's source;
    adds the ``ALLOWED_TERMS`` it cut out to ``terms_used``."""
    lines = source.splitlines()
    found = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type not in (tokenize.NAME, tokenize.STRING, tokenize.COMMENT):
            continue
        for offset, text_line in enumerate(tok.string.splitlines() or [""]):
            for term in ALLOWED_TERMS:
                if term in text_line:
                    terms_used.add(term)
                    text_line = text_line.replace(term, " ")
            for part in _parts(text_line):
                if part in BUNDLED:
                    lineno = tok.start[0] + offset
                    found.add((lineno, part, lines[lineno - 1].strip()))
    return sorted(found)


def _scan() -> tuple[list[str], set[object]]:
    problems, used = [], set()
    terms_used: set[str] = set()
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE).as_posix()
        if rel == DEFAULTS or any(rel == p or (p.endswith("/") and rel.startswith(p))
                                  for p in PENDING):
            continue
        for lineno, name, text in _hits(path.read_text(), terms_used):
            if (rel, text) in ALLOWED_LINES:
                used.add((rel, text))
                continue
            problems.append(f"ovnk_core/{rel}:{lineno}: {name!r}: {text}")
    return problems, used | terms_used


def test_core_names_no_bundled_plugin() -> None:
    problems, _ = _scan()
    assert not problems, (
        "ovnk_core names a bundled plugin (only ovnk_core/config/defaults.py may; describe "
        "the contract instead, e.g. 'networks whose topology asks for node subnets'):\n"
        + "\n".join(problems))


def test_allowed_entries_are_used() -> None:
    """A whitelist entry nothing needs any more would wait to let a new mention through."""
    _, used = _scan()
    assert [term for term in ALLOWED_TERMS if term not in used] == []
    assert [line for line in ALLOWED_LINES if line not in used] == []


def test_pending_paths_exist() -> None:
    """A PENDING entry whose module has moved out is done: remove it."""
    gone = [p for p in PENDING if not (CORE / p).exists()]
    assert gone == [], f"remove these from PENDING, their move landed: {gone}"


def test_scanner_finds_each_spelling() -> None:
    sample = textwrap.dedent('''\
        check_layer2 = LOCALNET
        x = "self.topology == 'Layer2' ? has(self.layer3) : true"
        EndpointSliceMirror.isDynamic  # the isolation rules
        """A docstring about
          Localnet networks."""
        mirrored = dynamically = layer = 3
        f = "--enable-dynamic-udn-allocation"
        ''')
    used: set[str] = set()
    assert [(line, name) for line, name, _ in _hits(sample, used)] == [
        (1, "layer2"), (1, "localnet"), (2, "layer2"), (2, "layer3"),
        (3, "dynamic"), (3, "isolation"), (3, "mirror"), (5, "localnet")]
    assert used == {"enable-dynamic-udn-allocation"}
