"""The docs' commands, run as a reader runs them: every ``<!-- doc-test: run -->`` block.

The blocks of the site's pages are joined, in the order of its navigation, into one ``bash``
script with ``set -e`` (a variable one block sets is there in the next, as in a reader's
terminal), run from a fresh directory holding ``examples/`` and the virtualenv: the first
block starts the cluster (``ovnk local up``), the ``teardown`` block takes it down at the end
whatever happened.  A ``console`` block is a transcript: each command's output must be the
lines the page shows.  While the cluster still runs, the checked-in topology pictures
(``docs/img/``) are compared with what it renders for the same examples, and the matrix
picture with the one the reader's block drew (``scripts/docs_pictures.py`` draws them).
The rules: ``docs/testing.md``.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ovnk_core.testing.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 900  # seconds for every block together; they wait on conditions, not sleeps


def _load(name: str) -> ModuleType:
    return load_script(ROOT / "scripts" / f"{name}.py")


ex = _load("docs_examples")
pictures = _load("docs_pictures")


@dataclass
class Run:
    workdir: Path
    result: subprocess.CompletedProcess[str]
    expected: list[tuple[str, Any]]  # (where, Step) of each console step, by number


@pytest.fixture(scope="module")
def docs_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    workdir = tmp_path_factory.mktemp("docs")
    ex.prepare_workdir(workdir)
    steps = workdir / ".doc-steps"
    steps.mkdir()
    blocks, teardown = ex.runnable_blocks()
    text, expected = ex.run_script(blocks, steps)
    (workdir / "docs-run.sh").write_text(text)
    env = ex.reader_environment(dict(os.environ))
    try:
        result = subprocess.run(["bash", "docs-run.sh"], cwd=workdir, env=env, text=True,
                                capture_output=True, timeout=TIMEOUT)
        (workdir / "docs-run.log").write_text(result.stdout + result.stderr)
        yield Run(workdir, result, expected)
    finally:
        subprocess.run(["bash", "-c", ex.teardown_script(teardown)], cwd=workdir, env=env,
                       capture_output=True, timeout=120)


def test_every_run_block_succeeds(docs_run: Run) -> None:
    result = docs_run.result
    last = [line for line in result.stdout.splitlines() if line.startswith("### ")]
    assert result.returncode == 0, (
        f"the block {last[-1][4:] if last else '?'} failed (exit {result.returncode})\n"
        f"--- stdout (tail)\n{result.stdout[-3000:]}\n--- stderr (tail)\n"
        f"{result.stderr[-3000:]}")


def test_console_transcripts_show_what_the_commands_print(docs_run: Run) -> None:
    assert docs_run.expected, "the docs show no console transcript"
    wrong = []
    for number, (where, step) in enumerate(docs_run.expected):
        out = docs_run.workdir / ".doc-steps" / str(number)
        got = "\n".join(line.rstrip() for line in out.read_text().splitlines()).rstrip("\n") \
            if out.exists() else "(not run)"
        if got != step.expected:
            wrong.append(f"{where}: $ {step.command}\n--- shown\n{step.expected}\n"
                         f"--- printed\n{got}")
    assert wrong == [], "\n\n".join(wrong)


@pytest.mark.parametrize("picture", pictures.TOPOLOGIES, ids=lambda p: p.name)
def test_the_topology_pictures_are_what_the_cluster_renders(docs_run: Run,
                                                            picture: Any) -> None:
    kubeconfig = docs_run.workdir / ".ovnk" / "kubeconfig"
    dot = pictures.ovnk(kubeconfig, "show", "network", picture.network, "--format", "dot")
    checked_in = (ROOT / "docs" / "img" / f"{picture.name}.dot").read_text()
    assert pictures.shape_of(dot) == pictures.shape_of(checked_in), (
        f"docs/img/{picture.name}.dot is stale: run scripts/docs_pictures.py")


def test_the_reachability_picture_is_the_one_the_reader_draws(docs_run: Run) -> None:
    """The Looking-at-what-was-rendered block writes ``reachability.svg`` for the workshop's
    six pods; ovnk draws names and verdicts only, so it must be the checked-in picture."""
    drawn = docs_run.workdir / "reachability.svg"
    assert drawn.is_file(), "the docs' ovnk reachability --output block wrote nothing"
    assert drawn.read_text() == (ROOT / "docs" / "img" / "reachability.svg").read_text(), (
        "docs/img/reachability.svg is stale: run scripts/docs_pictures.py")
