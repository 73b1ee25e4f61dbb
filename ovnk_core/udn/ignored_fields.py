"""Warn, once per UDN/CUDN, about fields its NADs leave out with this configuration.

Upstream renders a UDN's NAD without the fields a disabled feature would use —
``reservedSubnets``, ``infrastructureSubnets`` and ``defaultGatewayIPs`` without
``--enable-preconfigured-udn-addresses`` — and reports ``NetworkCreated=True``,
so the user learns nothing of it.  ovnk creates the network the same way and
says so: a Warning event ``FieldsIgnored`` on the UDN/CUDN with the message of
its topology's section (``UdnSection.ignored_fields``).  An object is warned
about again only when the message changes, and forgotten once nothing is
ignored or it is gone, so the memory held is one entry per such object.
"""

from __future__ import annotations

import threading

from ovnk_core.config import Config
from ovnk_core.kube.client import JSON
from ovnk_core.kube.events import WARNING, EventRecorder
from ovnk_core.kube.resources import object_key
from ovnk_core.udn.nad import network_spec_of, topology_config
from ovnk_core.udn.sections import UdnSections

REASON = "FieldsIgnored"


class IgnoredFieldWarnings:
    """Remembers which UDNs/CUDNs were warned about, with which message."""

    def __init__(self, sections: UdnSections, config: Config, recorder: EventRecorder) -> None:
        self.sections = sections
        self.config = config
        self.recorder = recorder
        self._warned: dict[str, str] = {}
        self._lock = threading.Lock()

    def check(self, owner: JSON) -> None:
        """Warn on ``owner`` (a UDN or CUDN whose NADs were rendered) when its section sets
        fields its NADs leave out."""
        spec = network_spec_of(owner)
        section = self.sections.get(spec.get("topology"))
        message = section.ignored_fields(topology_config(spec, self.sections), self.config) \
            if section is not None else None
        key = object_key(owner)
        with self._lock:
            if message is None:
                self._warned.pop(key, None)
                return
            if self._warned.get(key) == message:
                return
            self._warned[key] = message
        self.recorder.event(owner, WARNING, REASON, message)

    def forget(self, key: str) -> None:
        with self._lock:
            self._warned.pop(key, None)
