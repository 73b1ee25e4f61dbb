"""Start one container's workload the way a container runtime would, minus the image.

``python -m ovnk_local.workloads.launch --netns NS --hostname H [--cgroup DIR]
[--unprivileged-ports] -- pause|netexec FLAGS`` (run as root by the kubelet
stand-in, ``ovnk_local.runtime``), in this order, in one process that then *is*
the container (its pid is the container's):

1. joins the cgroup v2 directory ``DIR`` (the pod's, when the cluster has cgroup v2),
   so ``ovnk local down`` can kill whatever is left with ``cgroup.kill``;
2. enters the network namespace ``NS`` (``setns``, no ``/sys`` remount);
3. gets a UTS namespace of its own with hostname ``H`` (the pod's name, as in a pod);
4. with ``--unprivileged-ports``, lets every user bind ports below 1024 in that network
   namespace (``net.ipv4.ip_unprivileged_port_start=0``, as container runtimes do);
5. becomes ``nobody`` (uid/gid 65534, no supplementary groups, no capabilities,
   ``no_new_privs``): the pod has no filesystem of its own, so it never runs as root
   (the workload's modules are imported before, as ``nobody`` may not read them);
6. runs the workload (``ovnk_local.workloads``): ``pause`` sleeps until SIGTERM/SIGINT
   (exit 0), ``netexec`` serves (``ovnk_local.workloads.netexec``).
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import os
import signal
import socket
import sys
from collections.abc import Callable
from pathlib import Path

CLONE_NEWUTS = 0x04000000
PR_SET_NO_NEW_PRIVS = 38
NOBODY = 65534

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def pause() -> int:
    """Sleep until SIGTERM or SIGINT; exit 0 (as the pause container does)."""
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, _frame: stopping.append(signum))
    while not stopping:
        signal.pause()
    return 0


def prepare_workload(words: list[str]) -> Callable[[], int]:
    """The workload's entry point, its modules imported now: once the process is
    ``nobody`` it may not read the interpreter's standard library (under ``/root``)."""
    if words == ["pause"]:
        return pause
    if words and words[0] == "netexec":
        from ovnk_local.workloads import netexec

        return lambda: netexec.main(words[1:])
    raise SystemExit(f"launch: unknown workload {words!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="launch")
    parser.add_argument("--netns")
    parser.add_argument("--hostname")
    parser.add_argument("--cgroup")
    parser.add_argument("--unprivileged-ports", action="store_true")
    parser.add_argument("workload", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    words = args.workload[1:] if args.workload[:1] == ["--"] else args.workload
    workload = prepare_workload(words)
    if args.cgroup:
        try:
            Path(args.cgroup, "cgroup.procs").write_text(str(os.getpid()))
        except OSError as exc:  # the container still runs; down falls back to its pid
            print(f"launch: cannot join cgroup {args.cgroup}: {exc}", file=sys.stderr)
    if args.netns:
        from ovnk_core.node.netns import enter_netns

        enter_netns(args.netns)
    if args.hostname:
        _check(_libc.unshare(CLONE_NEWUTS), "unshare(CLONE_NEWUTS)")
        socket.sethostname(args.hostname)
    if args.unprivileged_ports:
        Path("/proc/sys/net/ipv4/ip_unprivileged_port_start").write_text("0")
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)  # from root to another uid: every capability is dropped
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    os.chdir("/")
    print(f"launch: running {' '.join(words)} as pid {os.getpid()}", flush=True)
    return workload()


if __name__ == "__main__":
    sys.exit(main())
