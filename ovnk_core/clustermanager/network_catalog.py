"""What the allocators must know about networks before they allocate or forget anything.

Node subnets and pod addresses are allocated per network.  After a restart
the network registry fills only as the NAD controller works through the NADs;
an allocator acting on a half-filled registry would drop the networks it does
not know yet from the nodes' ``k8s.ovn.org/node-subnets`` and later hand their
subnets out again, to other nodes, while pods keep their old addresses.  So the
allocators wait until the catalog is synced (every network of the NAD
informer's first list has been reconciled once) before they allocate, and ask
``network_exists`` before they release anything of a network the registry
does not describe: a network that still has a NAD is alive.
"""

from __future__ import annotations

import logging
import time
from typing import Protocol

from ovnk_core.errors import OvnkError

log = logging.getLogger(__name__)

NETWORKS_SYNC_TIMEOUT = 600.0
PROGRESS_INTERVAL = 10.0


class NetworksNotSynced(OvnkError):
    """The existing networks were not all registered in time; allocating now is unsafe."""


class NetworkCatalog(Protocol):
    def wait_synced(self, timeout: float | None = None) -> bool:
        """Block until every network that existed at startup has been reconciled once."""
        ...

    def network_exists(self, network: str) -> bool:
        """Whether a NAD (not being deleted) still names ``network``."""
        ...

    def networks_left(self) -> int:
        """How many networks of the first list are not reconciled yet (for progress logs)."""
        ...


class DefaultNetworkOnly:
    """The catalog without multi-network: no user-defined network exists, nothing to wait."""

    def wait_synced(self, timeout: float | None = None) -> bool:
        return True

    def network_exists(self, network: str) -> bool:
        return False

    def networks_left(self) -> int:
        return 0


def wait_for_networks(catalog: NetworkCatalog, who: str, timeout: float | None = None) -> None:
    """Wait until ``catalog`` is synced, logging progress; the allocators' start gate.

    :raises NetworksNotSynced: not synced within ``timeout`` seconds (default
        ``NETWORKS_SYNC_TIMEOUT``).
    """
    timeout = NETWORKS_SYNC_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + timeout
    while not catalog.wait_synced(min(PROGRESS_INTERVAL, max(0.0, deadline - time.monotonic()))):
        if time.monotonic() >= deadline:
            raise NetworksNotSynced(
                f"{who}: {catalog.networks_left()} existing network(s) still not registered "
                f"after {timeout:.0f}s; not allocating on a partial view of the networks")
        log.info("%s: waiting for %d existing network(s) to be registered before allocating",
                 who, catalog.networks_left())
