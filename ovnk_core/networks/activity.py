"""Where each network is active: the per-node NAD filter (OKEP-5552 node allocation).

Every component that renders a network's per-node parts (the cluster manager's node
subnets, the zone's node rows, the node agent's management port and routes) asks a
``NetworkActivity`` whether the network is active on a node, and hears through its
listeners when that changes.  Without a plugin that says otherwise (hook
``ovnk_network_activity``) every network is active on every node: ``EveryNode``.

A plugin decides (e.g. a UDN/CUDN network is active on a node while a pod there uses
it, and for a grace period after); the core only asks.  Answers must be cheap
(a set lookup): they are asked per network and node on every render.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

ActivityListener = Callable[[str, str], None]
"""Called with ``(network, node)`` when the network became active or inactive there;
``node`` is ``""`` when it may have changed on every node."""


class NetworkActivity(Protocol):
    """Which networks are active on which nodes, as one process sees it."""

    def is_active(self, network: str, node: str) -> bool:
        """Whether ``network``'s per-node parts belong on ``node`` now."""
        ...

    def active_nodes(self, network: str) -> frozenset[str] | None:
        """The nodes ``network`` is active on; ``None``: every node (not filtered)."""
        ...

    def add_listener(self, listener: ActivityListener) -> None:
        """Call ``listener(network, node)`` on every change (from any thread: a listener
        only enqueues)."""
        ...

    def assume_active(self, network: str, node: str) -> None:
        """The caller found ``network``'s parts on ``node`` when it started: keep them for
        a grace period unless something uses the network there (a restart during a grace
        period neither loses nor leaks them)."""
        ...

    def start(self) -> None:
        """Start following the cluster (its informers are the process's, started by the
        caller)."""
        ...

    def stop(self) -> None:
        ...


class EveryNode:
    """Every network is active on every node (no per-node filter)."""

    def is_active(self, network: str, node: str) -> bool:
        return True

    def active_nodes(self, network: str) -> frozenset[str] | None:
        return None

    def add_listener(self, listener: ActivityListener) -> None:
        pass  # nothing ever changes

    def assume_active(self, network: str, node: str) -> None:
        pass

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass
