"""Throwaway network namespaces for tests of node-side code.

``netns`` is one empty namespace (loopback up); ``netns_pair`` is two
namespaces joined by a veth pair with addresses from TEST-NET-1.  Both are
removed at teardown, with their links, whatever the test did.
"""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import pytest


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def make_netns() -> str:
    name = f"ovnkt-{secrets.token_hex(4)}"
    _ip("netns", "add", name)
    _ip("-n", name, "link", "set", "lo", "up")
    return name


def remove_netns(name: str) -> None:
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


@pytest.fixture
def netns() -> Iterator[str]:
    """The name of a fresh network namespace."""
    name = make_netns()
    yield name
    remove_netns(name)


@dataclass(frozen=True)
class NetnsPair:
    left: str
    right: str
    left_if: str
    right_if: str
    left_addr: str = "192.0.2.1/30"
    right_addr: str = "192.0.2.2/30"


@pytest.fixture
def netns_pair() -> Iterator[NetnsPair]:
    """Two namespaces joined by a veth pair (192.0.2.1/30 — 192.0.2.2/30), both up."""
    left, right = make_netns(), make_netns()
    pair = NetnsPair(left, right, "veth-l", "veth-r")
    try:
        _ip("-n", left, "link", "add", pair.left_if, "type", "veth", "peer", "name",
            pair.right_if, "netns", right)
        _ip("-n", left, "addr", "add", pair.left_addr, "dev", pair.left_if)
        _ip("-n", right, "addr", "add", pair.right_addr, "dev", pair.right_if)
        _ip("-n", left, "link", "set", pair.left_if, "up")
        _ip("-n", right, "link", "set", pair.right_if, "up")
        yield pair
    finally:
        remove_netns(left)
        remove_netns(right)
