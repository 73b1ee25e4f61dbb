"""Build a test input once per test run, even when pytest-xdist runs the tests in several
workers.

A session fixture is set up once per worker: under ``make test-fast`` (4 workers) the
third-party tests' ``pip install`` of their demo distributions ran four times at once, 110 s
of setup each at load 30 (``xdist_group`` marks, which would have kept them on one worker, do
nothing under pytest 9.2 with pytest-xdist 3.8).  :func:`once_per_run` builds into a
directory of the run's base temporary directory, which every worker of the run shares, under
an exclusive lock: the first worker builds it, the others wait and reuse it.  What is built
must not be changed by the tests that use it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

DONE = ".built"  # written last: a directory without it is a failed or interrupted build


def run_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base temporary directory of the whole run: the parent of a worker's own
    (pytest-xdist gives each worker ``<run basetemp>/<worker id>``), or this process's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def once_per_run(tmp_path_factory: pytest.TempPathFactory, name: str,
                 build: Callable[[Path], None]) -> Path:
    """``<run directory>/<name>``, filled by ``build(directory)`` by the first process of
    the run that asks; a failed build is redone by the next that asks (and fails it the
    same way)."""
    root = run_directory(tmp_path_factory)
    target = root / name
    with (root / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / DONE).exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            build(target)
            (target / DONE).touch()
    return target


__all__ = ["once_per_run", "run_directory"]
