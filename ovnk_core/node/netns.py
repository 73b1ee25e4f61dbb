"""Running code inside a named network namespace, from a dedicated thread.

Entering a network namespace (``setns``) changes only the calling thread,
and libnftables and netlink sockets bind to the namespace current when they
are opened.  So work for namespace NAME runs in a fresh thread that enters
``/var/run/netns/NAME`` first and opens its sockets afterwards; the caller's
thread never moves, and nothing opened in one namespace is reused in another.
Only the network namespace changes (unlike ``ip netns exec``, which also
remounts /sys and breaks cgroupv2 socket matches).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ovnk_core.errors import OvnkError

NETNS_DIR = Path("/var/run/netns")
CLONE_NEWNET = 0x40000000
T = TypeVar("T")

_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class NetnsError(OvnkError):
    """A network namespace is missing or cannot be entered."""


def netns_path(name: str) -> Path:
    """``name``'s file: a name lives in ``NETNS_DIR`` (``ip netns``); a path (a runtime's
    ``CNI_NETNS``, with a ``/``) is itself."""
    return Path(name) if "/" in name else NETNS_DIR / name


def enter_netns(name: str) -> None:
    """Move the calling thread into network namespace ``name``."""
    path = netns_path(name)
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        raise NetnsError(f"network namespace {name!r} does not exist ({path})") from None
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            errno = ctypes.get_errno()
            raise NetnsError(f"cannot enter network namespace {name!r}: {os.strerror(errno)}")
    finally:
        os.close(fd)


def run_in_netns(name: str | None, func: Callable[[], T]) -> T:
    """Call ``func`` inside namespace ``name`` (the current one when ``None``)."""
    if name is None:
        return func()
    result: list[T] = []
    error: list[BaseException] = []

    def target() -> None:
        try:
            enter_netns(name)
            result.append(func())
        except BaseException as exc:  # handed back to the caller's thread
            error.append(exc)

    thread = threading.Thread(target=target, name=f"netns-{name}", daemon=True)
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]
