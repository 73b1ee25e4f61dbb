"""A production install of ovnk-core carries no development distribution.

The local API server and ``ovnk local`` are the ``ovnk-local`` distribution
(``local/ovnk_local``): no ``ovnk_core`` module may import it, directly, lazily inside a
function, or for type checking only, nor name one of its modules for a run-time import
(``importlib``, ``python -m``).  The core reaches it only through entry points it does
not name: ``ovnk local`` is an ``ovnk.cli`` entry point of ovnk-local; the admission rules
the local API server runs are the core's ``ovnk.admission`` entry points, written against
``ovnk_core.admission.contract``.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "ovnk_core"
LOCAL_MODULE = re.compile(r"^ovnk_local(\.|:|$)")


def _offences(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line: module`` for every reference to an ovnk_local module in ``path``."""
    tree = ast.parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names = [word for word in node.value.split() if LOCAL_MODULE.match(word)]
        line = getattr(node, "lineno", 0)
        found += [(line, f"{path.relative_to(root)}:{line}: {name}")
                  for name in names if LOCAL_MODULE.match(name)]
    return [text for _line, text in sorted(found)]


def test_no_core_module_imports_ovnk_local() -> None:
    offences = [offence for path in sorted(CORE.rglob("*.py")) for offence in _offences(path)]
    assert offences == [], "ovnk_core must not import the development distribution:\n" + \
        "\n".join(offences)


def test_the_scan_sees_every_kind_of_reference(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\n"
        "import ovnk_local.cluster\n"
        "if TYPE_CHECKING:\n"
        "    from ovnk_local.apiserver.server import ServerHandle\n"
        "def f():\n"
        "    import importlib\n"
        "    return importlib.import_module('ovnk_local.cli')\n"
        "ARGS = ['-m', 'ovnk_local.apiserver']\n"
        "DOC = 'the ovnk-local distribution'\n")
    assert [line.split(": ")[1] for line in _offences(sample, tmp_path)] == [
        "ovnk_local.cluster", "ovnk_local.apiserver.server", "ovnk_local.cli",
        "ovnk_local.apiserver"]


BLOCKED = """
import importlib, importlib.abc, json, pkgutil, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "ovnk_local" or name.startswith("ovnk_local."):
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None

sys.meta_path.insert(0, NotInstalled())
import ovnk_core
modules = [m.name for m in pkgutil.walk_packages(ovnk_core.__path__, "ovnk_core.")]
for name in modules:
    importlib.import_module(name)
from ovnk_core.cli.main import build_parser
parser = build_parser()
choices = [a for a in parser._actions if hasattr(a, "choices") and a.choices][0].choices
print(json.dumps({"modules": len(modules), "commands": sorted(choices)}))
"""


def test_every_core_module_imports_without_ovnk_local() -> None:
    """With ovnk_local unimportable, every ovnk_core module still imports (no lazy import
    hides in a function run at import time) and the CLI builds without ``local``."""
    result = subprocess.run([sys.executable, "-c", BLOCKED], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["modules"] > 100
    assert "local" not in report["commands"] and "config" in report["commands"]
    assert "subcommand 'local' (ovnk_local.cli, entry point group ovnk.cli) cannot be loaded" \
        in result.stderr


def test_the_core_distribution_declares_no_local_package() -> None:
    """ovnk-core's pyproject ships only ``ovnk_core`` and the CNI plugin ``ovnk_cni`` (the
    development distribution is ``local/pyproject.toml``, ``ovnk-local``)."""
    import tomllib

    core = tomllib.loads((ROOT / "pyproject.toml").read_text())
    local = tomllib.loads((ROOT / "local" / "pyproject.toml").read_text())
    assert core["tool"]["setuptools"]["packages"]["find"]["include"] == ["ovnk_core*",
                                                                         "ovnk_cni*"]
    assert "ovnk.cli" not in core["project"].get("entry-points", {})
    assert local["project"]["name"] == "ovnk-local"
    assert "ovnk-core" in local["project"]["dependencies"]
    assert local["project"]["entry-points"]["ovnk.cli"] == {"local": "ovnk_local.cli"}
