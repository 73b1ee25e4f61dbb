"""Every command and YAML example in the docs says how it is tested, and that test exists.

The rules are in ``docs/testing.md`` ("The docs are tested"); ``scripts/docs_examples.py``
reads the blocks.  ``tests/e2e/test_docs_commands.py`` runs the ``run`` blocks; here the
rest is checked: a marker on every command block, covered-by tests that exist, YAML only
included from files a test applies.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ovnk_core.testing.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]


def _examples() -> ModuleType:
    return load_script(ROOT / "scripts" / "docs_examples.py")


ex = _examples()
PAGES = ex.all_pages()
BLOCKS = [block for page in PAGES for block in ex.command_blocks(page)]


def test_the_docs_have_command_blocks_of_every_kind() -> None:
    kinds = {block.kind for block in BLOCKS}
    assert {"run", "teardown", "covered-by", "illustrative"} <= kinds


def test_every_command_block_says_how_it_is_tested() -> None:
    unmarked = [block.where for block in BLOCKS if not block.kind]
    assert unmarked == [], ("put <!-- doc-test: run|teardown|covered-by TEST|illustrative: "
                            "REASON --> on the line before each block (docs/testing.md)")


def test_an_illustrative_block_gives_its_reason() -> None:
    assert [b.where for b in BLOCKS if b.kind == "illustrative" and not b.argument] == []


def _defined(path: Path, names: list[str]) -> bool:
    body: list[ast.stmt] = ast.parse(path.read_text(encoding="utf-8")).body
    for name in names:
        found = [node for node in body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                 and node.name == name]
        if not found:
            return False
        node = found[0]
        body = node.body if isinstance(node, ast.ClassDef) else []
    return True


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.kind == "covered-by"],
                         ids=lambda b: b.where)
def test_a_covered_block_names_a_test_that_exists(block: Any) -> None:
    path, _, names = block.argument.partition("::")
    assert names and (ROOT / path).is_file(), f"{block.where}: no test file {path}"
    assert _defined(ROOT / path, names.split("::")), f"{block.where}: no test {block.argument}"


def test_run_blocks_are_on_the_sites_pages_and_start_with_a_cluster() -> None:
    in_nav = set(ex.nav_pages())
    runnable = [b for b in BLOCKS if b.kind in ("run", "teardown")]
    assert [b.where for b in runnable if b.page not in in_nav] == []
    ordered = [b for page in ex.nav_pages() for b in ex.command_blocks(page)
               if b.kind == "run"]
    assert "ovnk local up" in ordered[0].text, "the first run block must start the cluster"
    teardowns = [b for b in BLOCKS if b.kind == "teardown"]
    assert len(teardowns) == 1 and "ovnk local down" in teardowns[0].text


def test_console_transcripts_parse_into_commands_and_outputs() -> None:
    for block in BLOCKS:
        if block.language == "console":
            steps = ex.console_steps(block.text)
            assert steps, f"{block.where}: a console block without a '$ ' command"


def test_console_steps_join_continued_lines_and_keep_outputs() -> None:
    steps = ex.console_steps("$ ovnk plugins \\\n    --flag\nA  \nB\n$ true\n")
    assert [(s.command, s.expected) for s in steps] == [
        ("ovnk plugins \\\n    --flag", "A\nB"), ("true", "")]


def test_yaml_in_the_docs_is_only_included_from_files() -> None:
    written = [f"{page.relative_to(ROOT)}:{block.line}" for page in PAGES
               for block in ex.read_blocks(page) if block.language in ("yaml", "yml")
               and not all(ex.SNIPPET.match(line) for line in block.text.splitlines()
                           if line.strip())]
    assert written == [], "include YAML from examples/ (--8<-- \"examples/...\")"


def test_every_included_example_is_applied_by_a_test_or_a_run_block() -> None:
    run_text = "\n".join(b.text for b in BLOCKS if b.kind == "run")
    tests_text = "\n".join(p.read_text(encoding="utf-8")
                           for p in (ROOT / "tests").rglob("test_*.py")
                           if p.name != Path(__file__).name)
    included = {path for page in PAGES for path in ex.snippets(page)
                if path.startswith("examples/")}
    assert included, "the pages include no example file"
    unused = sorted(path for path in included
                    if path not in run_text and Path(path).name not in tests_text)
    assert unused == []


def test_a_block_without_a_marker_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("text\n\n```sh\nls\n```\n\n<!-- doc-test: illustrative: why -->\n"
                    "```sh\nls -l\n```\n")
    blocks = ex.command_blocks(page)
    assert [(b.kind, b.argument, b.line) for b in blocks] == [
        ("", "", 3), ("illustrative", "why", 8)]
