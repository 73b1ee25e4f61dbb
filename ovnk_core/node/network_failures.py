"""One network's failure on a node, said on the Node: a Warning event per network, held back
while it repeats.

A node controller that serves many networks reconciles each as its own key, so a network
whose setup fails (a subnet the kernel refuses to route, say) retries with its own backoff
and never holds up another network.  Its error is said on the Node as a Warning event that
names the network: at once, again whenever the error changes, and otherwise at most once
per ``repeat`` seconds while it persists (the event's count grows), so a network that fails
for good does not write to the API server at every retry.  Once the network's setup
succeeds the next failure is said at once again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from ovnk_core.kube.client import JSON
from ovnk_core.kube.events import WARNING, EventRecorder

log = logging.getLogger(__name__)

REPEAT = 600.0  # seconds between two events of one unchanged failure


class NetworkFailures:
    """The failures of one node controller, per network, as Warning events on the Node.

    :param node: returns the Node object (from a cache), or None when it is not there.
    :param reason: the events' reason.
    :param what: what failed, for the message (``management port``).
    :param clock: monotonic seconds (injectable for tests).
    """

    def __init__(self, recorder: EventRecorder, node_name: str, node: Callable[[], JSON | None],
                 reason: str, what: str, repeat: float = REPEAT,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.recorder = recorder
        self.node_name = node_name
        self.node = node
        self.reason = reason
        self.what = what
        self.repeat = repeat
        self.clock = clock
        self._said: dict[str, tuple[str, float]] = {}  # network → (message, when)
        self._lock = threading.Lock()

    def message(self, network: str, error: BaseException) -> str:
        return f"network {network}: {self.what} failed: {error} (retrying; other networks " \
               "are not affected)"

    def failed(self, network: str, error: BaseException) -> None:
        """``network``'s setup failed with ``error``: say so, unless it was just said."""
        message = self.message(network, error)
        now = self.clock()
        with self._lock:
            said = self._said.get(network)
            if said is not None and said[0] == message and now - said[1] < self.repeat:
                return
            self._said[network] = (message, now)
        log.warning("node %s: %s", self.node_name, message)
        node = self.node() or {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": self.node_name}}
        self.recorder.event(node, WARNING, self.reason, message)

    def succeeded(self, network: str) -> None:
        """``network``'s setup is done (or no longer wanted): a later failure is news."""
        with self._lock:
            self._said.pop(network, None)
