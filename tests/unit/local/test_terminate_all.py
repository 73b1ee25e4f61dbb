"""``terminate_all`` stops processes together (``ovnk local down`` stops each stage at once):
every one gets SIGTERM before any is waited for, so stopping many takes as long as the
slowest one, not the sum of them."""

from __future__ import annotations

import sys
from pathlib import Path

from ovnk_local.state import ProcessRecord
from ovnk_local.supervisor import pid_running, spawn, terminate_all

from ovnk_core.testing.waiting import wait_until

# on SIGTERM: say so (argv[1]/got-<argv[2]>), then wait up to 5 s for every one of the
# argv[3] processes to have said so too, and write argv[1]/together-<argv[2]> if they did
STOPS_WITH_THE_OTHERS = """
import os, signal, sys, time
folder, me, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
def stop(*_):
    open(os.path.join(folder, 'got-' + me), 'w').close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if sum(name.startswith('got-') for name in os.listdir(folder)) == count:
            open(os.path.join(folder, 'together-' + me), 'w').close()
            break
        time.sleep(0.02)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(os.path.join(folder, 'ready-' + me), 'w').close()
while True:
    time.sleep(1)
"""


def test_every_process_gets_sigterm_before_any_is_waited_for(tmp_path: Path) -> None:
    count = 3
    records = [spawn(ProcessRecord(
        f"p{index}", "component",
        [sys.executable, "-c", STOPS_WITH_THE_OTHERS, str(tmp_path), str(index), str(count)],
        str(tmp_path / f"p{index}.log"))) for index in range(count)]
    wait_until(lambda: len(list(tmp_path.glob("ready-*"))) == count,
               what="every process has its SIGTERM handler")
    gone = ProcessRecord("gone", "component", [sys.executable], str(tmp_path / "gone.log"))

    stopped = terminate_all([*records, gone], grace=20)

    assert stopped == records  # the one that was not running is not counted
    assert sorted(p.name for p in tmp_path.glob("together-*")) == [
        f"together-{index}" for index in range(count)]
    assert not any(pid_running(r.pid, r.args) for r in records)


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    ignores = [sys.executable, "-c", "import signal, time; "
               "signal.signal(signal.SIGTERM, signal.SIG_IGN); open(__import__('sys').argv[1], "
               "'w').close(); time.sleep(120)", str(tmp_path / "ready")]
    record = spawn(ProcessRecord("stubborn", "component", ignores, str(tmp_path / "s.log")))
    wait_until((tmp_path / "ready").exists, what="the process ignores SIGTERM")

    assert terminate_all([record], grace=0.5) == [record]
    assert not pid_running(record.pid, record.args)
