"""Where a test run's time goes: ``pytest -p ovnk_core.testing.profile`` (``make test-profile``).

A slow suite is made faster by knowing what costs, so this measures a run as it happens and
prints, at its end:

- per tier: tests, wall time (setup + call + teardown) and CPU time (this process's threads
  plus the children it reaped: daemons a test started and stopped);
- the slowest tests, with their setup, call and teardown apart;
- the slowest fixtures by scope (a cluster shared by a module is set up once; its cost shows
  here, not in any one test's call);
- start-ups of what is expensive to start: the callables named in the ini option
  ``ovnk_profile_startups`` (``LABEL = module:Class.method`` or ``module:function``), counted
  with their total time and the tests that caused them;
- time the test thread slept: in ``wait_until`` between polls of a condition, versus fixed
  ``time.sleep`` calls, by where they are;
- external programs the tests ran (``kubectl``, ``ovn-nbctl``, ...), counted.

``--profile-json=PATH`` also writes the raw numbers (to compare two runs).
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
        self._watch_sleep()
        self._watch_programs()

    def uninstall(self) -> None:
        for undo in reversed(self._undo):
            undo()

    def _patch(self, owner: Any, name: str, replacement: Any) -> None:
        original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        setattr(owner, name, replacement)
        self._undo.append(lambda: setattr(owner, name, original))

    def _count_calls(self, label: str, target: str) -> None:
        module_name, _, path = target.partition(":")
        try:
            owner: Any = importlib.import_module(module_name)
        except ImportError:
            return  # a distribution this run does not have
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
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

    def _watch_sleep(self) -> None:
        original = time.sleep
        waiting = str(Path(__file__).with_name("waiting.py"))

        def sleep(seconds: float) -> None:
            if threading.current_thread() is self._main:
                caller = sys._getframe(1)
                # the library's own waits (subprocess's) count where the project called them
                while caller.f_back is not None and _is_library(caller.f_code.co_filename):
                    caller = caller.f_back
                where = caller.f_code.co_filename
                if where == waiting:
                    self.polls += seconds
                else:
                    self.fixed_sleeps[f"{_short(where)}:{caller.f_lineno}"] += seconds
            original(seconds)

        self._patch(time, "sleep", sleep)

    def _watch_programs(self) -> None:
        original = subprocess.Popen.__init__

        def init(popen: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
            words = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
            words = [os.fspath(w) if isinstance(w, os.PathLike) else w for w in words]
            if words[:3] == ["ip", "netns", "exec"] and len(words) > 4:
                words = words[4:]
            program = os.path.basename(str(words[0])).split()[0] if words else "?"
            self.programs[program] += 1
            original(popen, args, *rest, **kwargs)

        self._patch(subprocess.Popen, "__init__", init)

    # -- hooks -----------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, None, None]:
        self.current = item.nodeid
        tier = next((t for t in capabilities.TIERS if item.get_closest_marker(t)), "unit")
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
        self.fixtures[(fixturedef.argname, fixturedef.scope)].append(time.monotonic() - began)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        times = self.tests.get(report.nodeid)
        if times is None:
            return
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
        lines += ["", f"slowest {TOP} fixtures (own setup, without the fixtures it uses):"]
        ranked = sorted(self.fixtures.items(), key=lambda kv: -sum(kv[1]))[:TOP]
        for (name, scope), spent in ranked:
            lines.append(f"  {sum(spent):7.1f} s  {len(spent):4d} x {name} ({scope})")
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
            "startups": {label: {"count": s.count, "seconds": s.seconds,
                                 "by_test": dict(s.by_test)}
                         for label, s in self.startups.items()},
            "polls": self.polls, "fixed_sleeps": dict(self.fixed_sleeps),
            "programs": dict(self.programs),
            "wall": time.monotonic() - self.started, "cpu": _cpu() - self.cpu_started,
        }


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
