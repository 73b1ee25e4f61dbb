"""Third-party plugins, installed the way a user installs them, for the tests beside this file.

``dists/`` holds two distributions that are not part of ovnk and are never installed
into its virtualenv: ``ovnk-flat-demo`` (topology ``flat``, entry point in
``ovnk.topologies``) and ``ovnk-podset-demo`` (feature ``podset``, entry point in
``ovnk.features``).  ``third_party_sites`` copies each to a temporary directory and
pip-installs it there with ``--target`` (no network: no dependencies, no build
isolation), once per test run; a test then puts a site on ``sys.path`` (``on_sys_path``,
for components run in the test process) or on ``PYTHONPATH`` (for processes it starts).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from stevedore import ExtensionManager

from ovnk_core.testing.once_per_run import once_per_run

DISTS = Path(__file__).resolve().parent / "dists"
PACKAGES = {"flat": ("ovnk-flat-demo", "ovnk_flat_demo"),
            "podset": ("ovnk-podset-demo", "ovnk_podset_demo")}


@pytest.fixture(scope="session")
def third_party_sites(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"flat": DIR, "podset": DIR}``: each demo distribution installed alone in DIR, once
    per run (every pytest-xdist worker uses the same, ``once_per_run``)."""
    root = once_per_run(tmp_path_factory, "third-party-sites", _install)
    return {key: root / "site" / key for key in PACKAGES}


def _install(root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OVNK_", "PIP_"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    builds = {}
    for key, (dist, _module) in PACKAGES.items():
        source = root / "src" / dist
        shutil.copytree(DISTS / dist, source,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
        target = root / "site" / key
        command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                   "--no-cache-dir", "--no-build-isolation", "--target", str(target),
                   str(source)]
        builds[key] = (target, subprocess.Popen(command, stdout=subprocess.PIPE,
                                                stderr=subprocess.STDOUT, text=True, env=env))
    for key, (target, process) in builds.items():
        output, _ = process.communicate(timeout=180)
        assert process.returncode == 0, f"pip could not install {PACKAGES[key][0]}:\n{output}"
        assert (target / PACKAGES[key][1]).is_dir()


@pytest.fixture
def on_sys_path(third_party_sites: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """``on_sys_path("podset")``: that site is importable, and its entry points found, in
    this process until the test ends.  stevedore's entry-point caches (on disk, and per
    process by group) are kept apart: one filled earlier in this process would not know the
    site (a process of ovnk never changes its path once it loaded plugins)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(ExtensionManager, "ENTRY_POINT_CACHE", {})
    added: list[str] = []

    def add(key: str) -> Path:
        site = third_party_sites[key]
        monkeypatch.syspath_prepend(str(site))
        added.append(PACKAGES[key][1])
        return site

    yield add
    for module in [m for m in sys.modules if m.split(".")[0] in added]:
        del sys.modules[module]
