"""``once_per_run``: what several pytest-xdist workers ask for at once is built once, in the
directory they share; a failed build is not taken for a finished one."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ovnk_core.testing.once_per_run import once_per_run, run_directory

pytest_plugins = ["pytester"]


class Factory:
    """A TempPathFactory's ``getbasetemp`` (what ``once_per_run`` uses of it)."""

    def __init__(self, base: Path) -> None:
        self.base = base

    def getbasetemp(self) -> Path:
        return self.base


def test_workers_share_the_runs_directory(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert run_directory(Factory(tmp_path / "gw1")) == tmp_path  # type: ignore[arg-type]
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert run_directory(Factory(tmp_path)) == tmp_path  # type: ignore[arg-type]


def test_concurrent_askers_build_once_and_all_see_it(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    builds: list[Path] = []

    def build(directory: Path) -> None:
        builds.append(directory)
        time.sleep(0.2)  # the others ask while this one builds
        (directory / "site").write_text("built")

    got: list[Path] = []
    askers = [threading.Thread(target=lambda: got.append(once_per_run(
        Factory(tmp_path), "sites", build))) for _ in range(4)]  # type: ignore[arg-type]
    for asker in askers:
        asker.start()
    for asker in askers:
        asker.join()
    assert builds == [tmp_path / "sites"]
    assert got == [tmp_path / "sites"] * 4
    assert (tmp_path / "sites" / "site").read_text() == "built"


def test_a_failed_build_is_redone_from_an_empty_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)

    def broken(directory: Path) -> None:
        (directory / "half").write_text("")
        raise AssertionError("pip failed")

    with pytest.raises(AssertionError, match="pip failed"):
        once_per_run(Factory(tmp_path), "sites", broken)  # type: ignore[arg-type]
    seen: list[list[str]] = []
    once_per_run(Factory(tmp_path), "sites",  # type: ignore[arg-type]
                 lambda directory: seen.append(sorted(p.name for p in directory.iterdir())))
    assert seen == [[]]


def test_two_xdist_workers_build_once(pytester: pytest.Pytester,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A real ``pytest -n 2`` run: tests on both workers ask, one build serves them."""
    pytester.makepyfile(test_ask="""
        import os, time
        import pytest
        from ovnk_core.testing.once_per_run import once_per_run

        def build(directory):
            with open(os.environ["BUILDS"], "a") as builds:
                builds.write(str(directory) + "\\n")
            time.sleep(0.5)

        @pytest.mark.parametrize("n", range(4))
        def test_ask(tmp_path_factory, worker_id, n):
            once_per_run(tmp_path_factory, "site", build)
            with open(os.environ["WORKERS"], "a") as workers:
                workers.write(worker_id + "\\n")
            time.sleep(0.3)
    """)
    builds, workers = pytester.path / "builds.txt", pytester.path / "workers.txt"
    monkeypatch.setenv("BUILDS", str(builds))
    monkeypatch.setenv("WORKERS", str(workers))
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider", "-p", "no:ovnk")
    result.assert_outcomes(passed=4)
    assert len(set(workers.read_text().split())) == 2  # both workers asked
    assert len(builds.read_text().splitlines()) == 1
