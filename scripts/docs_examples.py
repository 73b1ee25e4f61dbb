"""The docs' command examples, read out of the pages so tests can check and run them.

Every fenced ``sh``/``console`` block under ``docs/`` (and in ``bench/README.md``, which the
Benchmarks page includes) is preceded by a marker comment saying how it is tested:

* ``<!-- doc-test: run -->``: run by ``tests/e2e/test_docs_commands.py`` (in one ``bash``,
  in the order of the site's navigation);
* ``<!-- doc-test: teardown -->``: run last, after the others, even when one failed;
* ``<!-- doc-test: covered-by tests/PATH.py::TEST -->``: a test runs the same;
* ``<!-- doc-test: illustrative: REASON -->``: not run, for the reason given.

A ``console`` block is a transcript: ``$ `` lines are commands (a line ending in ``\\``
continues), the lines after each are its expected output.  Loaded by path from the tests
(``scripts/`` is not a package); standard library only, plus PyYAML for ``mkdocs.yml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
# Pages outside docs/ whose blocks the site shows (included with pymdownx.snippets).
INCLUDED_PAGES = (ROOT / "bench" / "README.md",)

MARKER = re.compile(r"^<!-- doc-test: (run|teardown|covered-by|illustrative)(?:[: ]\s*(.*?))? -->$")
FENCE = re.compile(r"^(`{3,})(\w*)\s*$")
COMMAND_LANGUAGES = ("sh", "bash", "console", "shell")
SNIPPET = re.compile(r'^\s*--8<-- "([^"]+)"')


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    text: str
    kind: str  # "run", "teardown", "covered-by", "illustrative" or "" (no marker)
    argument: str  # the covered-by test, the illustrative reason

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def read_blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page`` with the marker on the line before it (if any)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        fence = FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        start, ticks, language = i, fence.group(1), fence.group(2)
        i += 1
        while i < len(lines) and lines[i].rstrip() != ticks:
            i += 1
        previous = lines[start - 1].strip() if start > 0 else ""
        marker = MARKER.match(previous)
        blocks.append(Block(page, start + 1, language, "\n".join(lines[start + 1:i]) + "\n",
                            marker.group(1) if marker else "",
                            (marker.group(2) or "").strip() if marker else ""))
        i += 1
    return blocks


def command_blocks(page: Path) -> list[Block]:
    return [b for b in read_blocks(page) if b.language in COMMAND_LANGUAGES]


def nav_pages() -> list[Path]:
    """The site's pages in the order of ``mkdocs.yml``'s nav."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    pages: list[Path] = []

    def walk(entry: Any) -> None:
        if isinstance(entry, str):
            pages.append(DOCS / entry)
        elif isinstance(entry, list):
            for item in entry:
                walk(item)
        elif isinstance(entry, dict):
            for value in entry.values():
                walk(value)

    walk(config["nav"])
    return pages


def all_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md")) + list(INCLUDED_PAGES)


def snippets(page: Path) -> list[str]:
    """The files a page includes (``--8<-- "path"``, paths from the repository root)."""
    found = []
    for line in page.read_text(encoding="utf-8").splitlines():
        match = SNIPPET.match(line)
        if match:
            found.append(match.group(1).split(":", 1)[0])
    return found


@dataclass(frozen=True)
class Step:
    command: str
    expected: str  # the lines shown after the command, each without trailing blanks


def console_steps(text: str) -> list[Step]:
    """A ``console`` transcript as commands and the output shown after each."""
    steps: list[tuple[list[str], list[str]]] = []
    continuing = False
    for line in text.splitlines():
        if continuing:
            steps[-1][0].append(line)
            continuing = line.endswith("\\")
        elif line.startswith("$ "):
            steps.append(([line[2:]], []))
            continuing = line.endswith("\\")
        elif steps:
            steps[-1][1].append(line.rstrip())
        elif line.strip():
            raise ValueError(f"console block output before any '$ ' command: {line!r}")
    return [Step("\n".join(cmd), "\n".join(out).rstrip("\n")) for cmd, out in steps]


def run_script(blocks: list[Block], steps: Path) -> tuple[str, list[tuple[str, Step]]]:
    """One ``bash`` script of the ``run`` blocks, as a reader runs them one after the other.

    ``set -e``: the first failing command stops it; ``### page:line at Ns`` is echoed before
    each block (N: seconds since the start) so the failing one is named.  Each console step's
    output goes to ``steps/N`` (its exit status is not checked: a transcript may show a
    refusal); the returned list says which step and where each ``N`` is.
    """
    lines = ["set -e"]
    expected: list[tuple[str, Step]] = []
    for block in blocks:
        lines.append(f"echo \"### {block.where} at ${{SECONDS}}s\"")
        if block.language != "console":
            lines.append(block.text)
            continue
        for step in console_steps(block.text):
            out = steps / str(len(expected))
            expected.append((block.where, step))
            lines.append(f"{{ {step.command}\n}} > '{out}' 2>&1 || true")
    return "\n".join(lines) + "\n", expected


def prepare_workdir(workdir: Path) -> None:
    """A reader's checkout as the blocks expect it: ``examples/`` and ``.venv`` here."""
    workdir.mkdir(parents=True, exist_ok=True)
    for name in ("examples", ".venv"):
        link = workdir / name
        if not link.is_symlink():
            link.symlink_to(ROOT / name)


def reader_environment(environ: dict[str, str]) -> dict[str, str]:
    """The caller's environment without what would point the blocks at another cluster."""
    env = {k: v for k, v in environ.items()
           if k not in ("KUBECONFIG", "OVNK_CONFIG", "VIRTUAL_ENV")}
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    return env


def runnable_blocks() -> tuple[list[Block], list[Block]]:
    """The ``run`` blocks and the ``teardown`` blocks, in the order of the site's nav."""
    blocks = [b for page in nav_pages() for b in command_blocks(page)]
    return ([b for b in blocks if b.kind == "run"], [b for b in blocks if b.kind == "teardown"])


def teardown_script(teardown: list[Block]) -> str:
    return "source .venv/bin/activate\n" + "".join(b.text for b in teardown)
