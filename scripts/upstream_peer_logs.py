"""The log-reading half of ``upstream_peer.py``: what upstream's klog logs say about its
informers and controllers, the requests the API server's access log shows it refused, and the
warnings and errors of every log."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

KLOG = re.compile(r"^([IWEF])\d{4} (\d+):(\d+):([\d.]+)\s+\d+ ([\w.-]+:\d+)\] (.*)$")
REFLECTOR = re.compile(
    r'"(Starting reflector|Caches populated)" type="([^"]+)" .*reflector="([^"]+)"')
CONTROLLER = re.compile(r'"(Waiting for caches to sync|Caches are synced)" controller="([^"]+)"')
STARTED = re.compile(r"Starting controller (.+) with \d+ workers")
ACCESS = re.compile(r'"(\w+) (\S+) HTTP/[\d.]+" (\d{3}) (.*)$')


@dataclass
class LogState:
    """What a klog log says about informers and controllers."""

    lines: list[str]
    reflectors: set[tuple[str, str]] = field(default_factory=set)
    populated: set[tuple[str, str]] = field(default_factory=set)
    waiting: set[str] = field(default_factory=set)
    synced: set[str] = field(default_factory=set)
    started: set[str] = field(default_factory=set)
    first: float | None = None  # time of day of its first line, in seconds
    last_sync: float = 0.0  # ... and of the last line about syncing or starting

    @classmethod
    def read(cls, path: Path) -> LogState:
        state = cls(path.read_text(errors="replace").splitlines())
        for line in state.lines:
            if klog := KLOG.match(line):
                at = int(klog[2]) * 3600 + int(klog[3]) * 60 + float(klog[4])
                state.first = at if state.first is None else state.first
                if REFLECTOR.search(line) or CONTROLLER.search(line) or STARTED.search(line):
                    state.last_sync = at
            if m := REFLECTOR.search(line):
                (state.reflectors if m[1] == "Starting reflector" else state.populated).add(
                    (m[2], m[3]))
            elif m := CONTROLLER.search(line):
                (state.waiting if m[1].startswith("Waiting") else state.synced).add(m[2])
            elif m := STARTED.search(line):
                state.started.add(m[1])
        return state

    def milestone(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def unsynced(self) -> list[str]:
        return sorted([f"informer {kind}" for kind, _ in self.reflectors - self.populated]
                      + [f"controller {name}" for name in self.waiting - self.synced])

    def synced_after(self) -> float:
        """Seconds from its first line to its last line about syncing or starting."""
        return self.last_sync - (self.first or self.last_sync)

    def informers(self) -> list[str]:
        return sorted({kind.rsplit(".", 1)[-1] for kind, _ in self.populated})


def refused_requests(apiserver_log: Path) -> Counter[str]:
    """Requests the API server answered with 4xx/5xx (its DEBUG access log), by status,
    verb, path pattern and program."""
    found: Counter[str] = Counter()
    for line in apiserver_log.read_text(errors="replace").splitlines():
        if (m := ACCESS.search(line)) and int(m[3]) >= 400:
            program = m[4].split(" ", 1)[0]  # kubectl/v1.32.4, <host>/ovnkube@<commit>
            found[f"{m[3]} {m[1]} {path_pattern(m[2])}  ({program})"] += 1
    return found


def path_pattern(path: str) -> str:
    """``/api/v1/namespaces/blue/pods/blue/status`` -> ``/api/v1/namespaces/*/pods/*/status``."""
    parts = path.split("?", 1)[0].split("/")
    head = 3 if parts[1:2] == ["api"] else 4  # ['', 'api', 'v1'] / ['', 'apis', group, 'v1']
    rest = parts[head:]
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest[1] = "*"
        named = rest[2:]
    else:
        named = rest
    if len(named) > 1:
        named[1] = "*"
    return "/".join(parts[:head] + rest[:len(rest) - len(named)] + named)


def logged_problems(paths: Iterable[Path]) -> dict[str, Counter[str]]:
    """Warnings and errors in Python-logging, klog and OVS logs, per file."""
    result = {}
    for path in paths:
        found: Counter[str] = Counter()
        for line in path.read_text(errors="replace").splitlines():
            if m := KLOG.match(line):
                if m[1] in "WEF":
                    found[f"{m[1]} {m[5]}] {m[6]}"] += 1
            elif m := re.match(r"^\S+ \S+ (WARNING|ERROR|CRITICAL) (.*)$", line):
                found[f"{m[1]} {m[2]}"] += 1
            elif m := re.match(r"^\S+\|\d+\|(\w+)\|(WARN|ERR|EMER)\|(.*)$", line):
                found[f"{m[2]} {m[1]}: {m[3]}"] += 1
        if found:
            result[str(path)] = found
    return result


def counted(found: Counter[str], width: int = 200) -> list[str]:
    return [f"    {count:3}x {text[:width]}" for text, count in found.most_common()]
