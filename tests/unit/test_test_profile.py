"""The test profile (``ovnk_core.testing.profile``, ``make test-profile``) counts what a run
did: a small suite with known start-ups, fixtures, sleeps, polls and programs is run under it
(in this process, by ``pytester``) and its numbers must be exactly those."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ovnk_core.testing.profile import program_name

pytest_plugins = ["pytester"]

PYPROJECT = """
[tool.pytest.ini_options]
ovnk_profile_startups = [
    "engine = profiled_engine:Engine.start",
    "helper = profiled_engine:launch",
]
ovnk_profile_polls = ["profiled_engine:poll"]
"""

ENGINE = """
import time


class Engine:
    def start(self):
        time.sleep(0.01)
        return self


def launch():
    time.sleep(0.01)


def poll(condition):
    while not condition():
        time.sleep(0.05)
"""

SUITE = """
import subprocess
import time

import pytest

import profiled_engine


@pytest.fixture(scope="module")
def shared_engine():
    engine = profiled_engine.Engine().start()
    time.sleep(0.3)
    yield engine
    time.sleep(0.2)


def test_starts_two(shared_engine):
    profiled_engine.Engine().start()
    profiled_engine.Engine().start()


def test_launches_and_runs(shared_engine):
    profiled_engine.launch()
    subprocess.run(["true"], check=True)
    subprocess.run(["true"], check=True)
    subprocess.run("true", shell=True, check=True)


def test_sleeps_fixed():
    time.sleep(0.25)


def test_polls():
    calls = []
    profiled_engine.poll(lambda: calls.append(1) or len(calls) > 4)


@pytest.mark.e2e
def test_in_another_tier():
    pass
"""


def profile_of_suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
                     ) -> dict[str, object]:
    """The profile's numbers of the small suite (which passes)."""
    pytester.makepyprojecttoml(PYPROJECT)
    pytester.makepyfile(profiled_engine=ENGINE, test_profiled=SUITE)
    pytester.syspathinsert()
    out = pytester.path / "profile.json"
    # (the e2e test's tier requirements are not the point here: a machine without them
    # skips it, in CI too: pytester's HOME has no OVN root, and whether this process has
    # already found the real one depends on the tests it ran before)
    monkeypatch.delenv("CI", raising=False)
    result = pytester.runpytest_inprocess("-p", "ovnk_core.testing.profile",
                                          f"--profile-json={out}", "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) + outcomes.get("skipped", 0) == 5, result.stdout.str()
    result.stdout.fnmatch_lines(["*ovnk test profile*", "*start-ups:*", "*programs run:*"])
    loaded: dict[str, object] = json.loads(Path(out).read_text())
    return loaded


def check_counts_startups_per_test_and_fixture(profiled: dict[str, object]) -> None:
    startups = profiled["startups"]
    assert isinstance(startups, dict)
    engine, helper = startups["engine"], startups["helper"]
    assert engine["count"] == 3
    assert engine["by_test"] == {"test_profiled.py::test_starts_two": 3}  # fixture's in it
    assert engine["seconds"] >= 0.03
    assert helper["count"] == 1
    assert helper["by_test"] == {"test_profiled.py::test_launches_and_runs": 1}


def check_fixture_setup_and_teardown_once_each(profiled: dict[str, object]) -> None:
    fixtures, teardowns = profiled["fixtures"], profiled["fixture_teardowns"]
    assert isinstance(fixtures, dict) and isinstance(teardowns, dict)
    setup, = fixtures["shared_engine (module)"]
    teardown, = teardowns["shared_engine (module)"]
    assert 0.3 <= setup < 2.0
    assert 0.2 <= teardown < 2.0


def check_fixed_sleeps_apart_from_polls(profiled: dict[str, object]) -> None:
    fixed = profiled["fixed_sleeps"]
    assert isinstance(fixed, dict)
    by_line = {where.rsplit(":", 1)[1]: spent for where, spent in fixed.items()
               if where.startswith("test_profiled.py:")}
    lines = SUITE.strip().splitlines()  # as pytester writes it
    sleep_line = str(lines.index("    time.sleep(0.25)") + 1)
    assert by_line[sleep_line] == pytest.approx(0.25)
    # the fixture's sleeps are fixed ones too; the engine's poll is not
    assert sum(by_line.values()) == pytest.approx(0.25 + 0.3 + 0.2)
    assert not any(where.startswith("profiled_engine.py:") and "poll" in where
                   for where in fixed)
    assert profiled["polls"] == pytest.approx(4 * 0.05)
    # the engine's own start-up sleeps (not polls) are fixed sleeps where they are
    engine_lines = {where for where in fixed if where.startswith("profiled_engine.py:")}
    assert len(engine_lines) == 2


def check_tiers_and_phases(profiled: dict[str, object]) -> None:
    tests = profiled["tests"]
    assert isinstance(tests, dict)
    tiers = {nodeid.split("::")[1]: entry["tier"] for nodeid, entry in tests.items()}
    assert tiers == {"test_starts_two": "unit", "test_launches_and_runs": "unit",
                     "test_sleeps_fixed": "unit", "test_polls": "unit",
                     "test_in_another_tier": "e2e"}
    first = tests["test_profiled.py::test_starts_two"]["phases"]
    assert first["setup"] >= 0.3  # the module's fixture is set up with its first test
    last = tests["test_profiled.py::test_in_another_tier"]["phases"]
    assert last["teardown"] >= 0.2  # and torn down with the module's last test
    assert tests["test_profiled.py::test_sleeps_fixed"]["phases"]["call"] >= 0.25


def check_counts_programs(profiled: dict[str, object]) -> None:
    programs = profiled["programs"]
    assert isinstance(programs, dict)
    assert programs["true"] == 3  # a shell command counts as its first word


def test_profile_counts_what_a_suite_did(pytester: pytest.Pytester,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # one run of the suite (pytester's runs are slow), every count checked
    profiled = profile_of_suite(pytester, monkeypatch)
    check_counts_startups_per_test_and_fixture(profiled)
    check_fixture_setup_and_teardown_once_each(profiled)
    check_fixed_sleeps_apart_from_polls(profiled)
    check_tiers_and_phases(profiled)
    check_counts_programs(profiled)


@pytest.mark.parametrize(("args", "name"), [
    (["ip", "netns", "exec", "ovnk-n1", "ovs-vsctl", "show"], "ovs-vsctl"),
    (["/usr/bin/kubectl", "get", "pods"], "kubectl"),
    ("ovn-nbctl --db=unix:x show", "ovn-nbctl"),
    (Path("/usr/sbin/nft"), "nft"),
    (["ip", "link"], "ip"),
    ([], "?"),
])
def test_program_name(args: object, name: str) -> None:
    assert program_name(args) == name
