"""Where a test run's time goes: ``pytest -p ovnk_core.testing.profile`` (``make test-profile``).

A slow suite is made faster by knowing what costs, so this measures a run as it happens and
prints, at its end:

- per tier: tests, wall time (setup + call + teardown) and CPU time (this process's threads
  plus the children it reaped: daemons a test started and stopped);
- the slowest tests, with their setup, call and teardown apart;
- per test module (where clusters are shared): tests and wall time;
- the slowest fixtures by scope, setup and teardown apart (a cluster shared by a module is
  set up once; its cost shows here, not in any one test's call);
- start-ups of what is expensive to start: the callables named in the ini option
  ``ovnk_profile_startups`` (``LABEL = module:Class.method`` or ``module:function``), counted
  with their total time and the tests that caused them;
- time the test thread slept: between polls of a condition (in the functions named in the
  ini option ``ovnk_profile_polls``, ``module:function``, e.g. ``wait_until``), versus fixed
  ``time.sleep`` calls, by where they are;
- external programs the tests ran (``kubectl``, ``ovn-nbctl``, ...), counted.

``--profile-json=PATH`` also writes the raw numbers (to compare two runs).  Under
pytest-xdist (``-n``) only the tests' tiers and phases reach it (from the workers' reports):
profile a run without ``-n`` to see everything.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import resource
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ovnk_core.testing import capabilities

STARTUPS_INI = "ovnk_profile_startups"
POLLS_INI = "ovnk_profile_polls"
TOP = 25


def _cpu() -> float:
    """CPU seconds of this process (every thread) and of its reaped children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


@dataclass
class TestTimes:
    tier: str
    phases: dict[str, float] = field(default_factory=dict)
    cpu: float = 0.0
    outcome: str = "passed"

    @property
    def wall(self) -> float:
        return sum(self.phases.values())


@dataclass
class Startups:
    count: int = 0
    seconds: float = 0.0
    by_test: Counter[str] = field(default_factory=Counter)


class Profile:
    """The numbers of one run (a pytest plugin object: its hooks fill them in)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tests: dict[str, TestTimes] = {}
        self.fixtures: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.fixture_teardowns: dict[tuple[str, str], list[float]] = defaultdict(list)
        self._teardown_began: dict[int, float] = {}
        self.startups: dict[str, Startups] = defaultdict(Startups)
        self.polls = 0.0
        self.fixed_sleeps: dict[str, float] = defaultdict(float)
        self.programs: Counter[str] = Counter()
        self.current = ""
        self.started = time.monotonic()
        self.cpu_started = _cpu()
        self._main = threading.main_thread()
        self._undo: list[Callable[[], None]] = []

    # -- instrumentation -------------------------------------------------------------------
    def install(self) -> None:
        for line in self.config.getini(STARTUPS_INI):
            label, _, target = (part.strip() for part in line.partition("="))
            if target:
                self._count_calls(label, target)
        polls = set()
        for target in self.config.getini(POLLS_INI):
            function = _resolve(target.strip())
            if function is not None:
                polls.add(function.__code__)
        self._watch_sleep(frozenset(polls))
        self._watch_programs()

    def uninstall(self) -> None:
        for undo in reversed(self._undo):
            undo()

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, replacement)
        self._undo.append(lambda: setattr(owner, name, original))

    def _count_calls(self, label: str, target: str) -> None:
        found = _owner_and_name(target)
        if found is None:
            return  # a distribution this run does not have
        owner, name = found
        original = getattr(owner, name)
        record = self.startups[label]

        @functools.wraps(original)
        def counted(*args: Any, **kwargs: Any) -> Any:
            began = time.monotonic()
            try:
                return original(*args, **kwargs)
            finally:
                record.count += 1
                record.seconds += time.monotonic() - began
                record.by_test[self.current] += 1

        self._patch(owner, name, counted)

    def _watch_sleep(self, polls: frozenset[Any]) -> None:
        original = time.sleep

        def sleep(seconds: float) -> None:
            if threading.current_thread() is self._main:
                caller = sys._getframe(1)
                # the library's own waits (subprocess's) count where the project called them
                while caller.f_back is not None and _is_library(caller.f_code.co_filename):
                    caller = caller.f_back
                if caller.f_code in polls:
                    self.polls += seconds
                else:
                    where = f"{_short(caller.f_code.co_filename)}:{caller.f_lineno}"
                    self.fixed_sleeps[where] += seconds
            original(seconds)

        self._patch(time, "sleep", sleep)

    def _watch_programs(self) -> None:
        original = subprocess.Popen.__init__

        def init(popen: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
            self.programs[program_name(args)] += 1
            original(popen, args, *rest, **kwargs)

        self._patch(subprocess.Popen, "__init__", init)

    # -- hooks -----------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        self.current = item.nodeid
        # the heaviest tier it is marked with (an e2e test may also need netns)
        tier = next((t for t in reversed(capabilities.TIERS) if item.get_closest_marker(t)),
                    "unit")
        times = self.tests.setdefault(item.nodeid, TestTimes(tier))
        before = _cpu()
        yield
        times.cpu = _cpu() - before
        self.current = ""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any]
                             ) -> Generator[None, None, None]:
        began = time.monotonic()
        yield
        key = (fixturedef.argname, fixturedef.scope)
        self.fixtures[key].append(time.monotonic() - began)
        # finalizers run last-added first: this one just before the fixture's own teardown
        # (those of the fixtures that use it, added later, run before it)
        fixturedef.addfinalizer(
            lambda: self._teardown_began.__setitem__(id(fixturedef), time.monotonic()))

    def pytest_fixture_post_finalizer(self, fixturedef: pytest.FixtureDef[Any]) -> None:
        began = self._teardown_began.pop(id(fixturedef), None)
        if began is not None:
            self.fixture_teardowns[(fixturedef.argname, fixturedef.scope)].append(
                time.monotonic() - began)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        times = self.tests.get(report.nodeid)
        if times is None:  # run by another process (pytest-xdist): its report only
            tier = next((t for t in reversed(capabilities.TIERS) if t in report.keywords),
                        "unit")
            times = self.tests.setdefault(report.nodeid, TestTimes(tier))
        times.phases[report.when] = report.duration
        if report.outcome != "passed" and (report.when == "call" or report.outcome == "failed"):
            times.outcome = report.outcome

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        write = terminalreporter.write_line
        for line in self.report_lines():
            write(line)
        path = self.config.getoption("profile_json")
        if path:
            Path(path).write_text(json.dumps(self.as_dict(), indent=1))
            write(f"profile written to {path}")

    # -- the report ------------------------------------------------------------------------
    def report_lines(self) -> list[str]:
        wall, cpu = time.monotonic() - self.started, _cpu() - self.cpu_started
        lines = ["", "=" * 30 + " ovnk test profile " + "=" * 30,
                 f"run: {wall:.1f} s wall, {cpu:.1f} s CPU (this process + reaped children), "
                 f"load average now {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
                 "", f"{'tier':<8}{'tests':>7}{'wall s':>10}{'CPU s':>10}{'setup':>9}"
                 f"{'call':>9}{'teardown':>10}"]
        for tier in capabilities.TIERS:
            tests = [t for t in self.tests.values() if t.tier == tier]
            if not tests:
                continue
            phase = {p: sum(t.phases.get(p, 0.0) for t in tests)
                     for p in ("setup", "call", "teardown")}
            lines.append(f"{tier:<8}{len(tests):>7}{sum(t.wall for t in tests):>10.1f}"
                         f"{sum(t.cpu for t in tests):>10.1f}{phase['setup']:>9.1f}"
                         f"{phase['call']:>9.1f}{phase['teardown']:>10.1f}")
        lines += ["", f"slowest {TOP} tests (setup/call/teardown s):"]
        for nodeid, times in sorted(self.tests.items(), key=lambda kv: -kv[1].wall)[:TOP]:
            p = times.phases
            lines.append(f"  {times.wall:7.1f} ({p.get('setup', 0):.1f}/{p.get('call', 0):.1f}/"
                         f"{p.get('teardown', 0):.1f}) {nodeid}")
        modules: dict[str, list[TestTimes]] = defaultdict(list)
        for nodeid, times in self.tests.items():
            modules[nodeid.partition("::")[0]].append(times)
        lines += ["", f"slowest {TOP} modules (tests, wall s):"]
        for module, tests in sorted(modules.items(),
                                    key=lambda kv: -sum(t.wall for t in kv[1]))[:TOP]:
            lines.append(f"  {sum(t.wall for t in tests):7.1f} {len(tests):5d}  {module}")
        lines += ["", f"slowest {TOP} fixtures (own setup + own teardown s, without the "
                      "fixtures they use):"]
        def total(key: tuple[str, str]) -> float:
            return sum(self.fixtures.get(key, ())) + sum(self.fixture_teardowns.get(key, ()))
        for name, scope in sorted(self.fixtures, key=lambda key: -total(key))[:TOP]:
            setups = self.fixtures[(name, scope)]
            teardown = sum(self.fixture_teardowns.get((name, scope), ()))
            lines.append(f"  {total((name, scope)):7.1f} s  {len(setups):4d} x {name} ({scope}):"
                         f" {sum(setups):.1f} + {teardown:.1f}")
        lines += ["", "start-ups:"]
        for label, startups in sorted(self.startups.items()):
            lines.append(f"  {label}: {startups.count} in {startups.seconds:.1f} s")
            for nodeid, count in startups.by_test.most_common(5):
                lines.append(f"      {count:3d} x {nodeid or '(outside a test)'}")
        fixed = sum(self.fixed_sleeps.values())
        lines += ["", f"test thread asleep: {self.polls:.1f} s between polls of conditions "
                      f"(wait_until), {fixed:.1f} s in fixed sleeps:"]
        for where, spent in sorted(self.fixed_sleeps.items(), key=lambda kv: -kv[1])[:TOP]:
            lines.append(f"  {spent:7.1f} s  {where}")
        lines += ["", "programs run: " + ", ".join(
            f"{name} {count}" for name, count in self.programs.most_common(15))]
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "tests": {nodeid: {"tier": t.tier, "phases": t.phases, "cpu": t.cpu,
                               "outcome": t.outcome} for nodeid, t in self.tests.items()},
            "fixtures": {f"{name} ({scope})": spent
                         for (name, scope), spent in self.fixtures.items()},
            "fixture_teardowns": {f"{name} ({scope})": spent
                                  for (name, scope), spent in self.fixture_teardowns.items()},
            "startups": {label: {"count": s.count, "seconds": s.seconds,
                                 "by_test": dict(s.by_test)}
                         for label, s in self.startups.items()},
            "polls": self.polls, "fixed_sleeps": dict(self.fixed_sleeps),
            "programs": dict(self.programs),
            "wall": time.monotonic() - self.started, "cpu": _cpu() - self.cpu_started,
        }


def program_name(args: Any) -> str:
    """The program a ``Popen(args)`` runs: its base name, past ``ip netns exec NAME``."""
    given = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
    words: list[str] = [os.fsdecode(w) if isinstance(w, os.PathLike | bytes) else str(w)
                        for w in given]
    if words[:3] == ["ip", "netns", "exec"] and len(words) > 4:
        words = words[4:]
    first = words[0].split() if words else []
    return os.path.basename(first[0]) if first else "?"


def _owner_and_name(target: str) -> tuple[Any, str] | None:
    """``module:Class.attr`` -> (``Class``, ``"attr"``); None when the module is missing."""
    module_name, _, path = target.partition(":")
    try:
        owner: Any = importlib.import_module(module_name)
    except ImportError:
        return None
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    return owner, name


def _resolve(target: str) -> Any:
    """The function ``module:function`` names (None when its module is missing)."""
    found = _owner_and_name(target)
    return None if found is None else getattr(*found)


_LIBRARY = (os.path.dirname(os.__file__), os.path.dirname(pytest.__file__))


def _is_library(path: str) -> bool:
    """Python's own modules and installed third-party ones (not the project's)."""
    return path.startswith(_LIBRARY) or "site-packages" in path


def _short(path: str) -> str:
    """A source path relative to the working directory when under it."""
    try:
        return str(Path(path).relative_to(Path.cwd()))
    except ValueError:
        return path


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--profile-json", dest="profile_json", default=None,
                     help="also write the ovnk test profile's numbers to this JSON file")


def pytest_configure(config: pytest.Config) -> None:
    profile = Profile(config)
    profile.install()
    config.pluginmanager.register(profile, "ovnk-profile")
    config.add_cleanup(profile.uninstall)
