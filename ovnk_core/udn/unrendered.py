"""Warn, once per NAD, that a UDN/CUDN's network is not rendered by any enabled plugin.

The UDN controllers create the NAD and report ``NetworkCreated=True`` for a
network whose topology no enabled plugin renders into OVN (see
``networks.rendering``); this says so with a Warning event on the NAD and on
the UDN/CUDN.  A NAD is warned about again only when the explanation changes
(reconciles repeat for unrelated reasons), and forgotten once it renders or
is deleted, so the memory held is one entry per unrendered NAD.
"""

from __future__ import annotations

import threading

from ovnk_core.kube.client import JSON
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.resources import object_key
from ovnk_core.networks.rendering import REASON, not_rendered_message, rendering_problem
from ovnk_core.plugins import PluginHost


class UnrenderedWarnings:
    """Remembers which NADs were warned about, with which message."""

    def __init__(self, host: PluginHost, recorder: EventRecorder) -> None:
        self.host = host
        self.recorder = recorder
        self._warned: dict[str, str] = {}
        self._lock = threading.Lock()

    def check(self, owner: JSON, nad: JSON, network: str, topology: str) -> None:
        """Warn on ``nad`` and ``owner`` when no enabled plugin renders ``topology``."""
        key = object_key(nad)
        problem = rendering_problem(self.host.topologies, topology)
        with self._lock:
            if problem is None:
                self._warned.pop(key, None)
                return
            message = not_rendered_message(network, problem)
            if self._warned.get(key) == message:
                return
            self._warned[key] = message
        self.recorder.event(nad, WARNING, REASON, message)
        self.recorder.event(owner, WARNING, REASON, message)

    def forget(self, nad_key: str) -> None:
        with self._lock:
            self._warned.pop(nad_key, None)
