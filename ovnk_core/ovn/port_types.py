"""Logical_Switch_Port ``type`` values ovnk reads or writes — OVN's vocabulary (ovn-nb(5)).

These are OVN's own words for kinds of switch ports.  One of them happens to
spell a bundled topology plugin's name; it means OVN's port type wherever it
is used, so it lives here, once, and everything else uses the constant.
"""

from __future__ import annotations

LSP_TYPE_ROUTER = "router"
"""A switch port peered with a logical router port (``options:router-port``)."""

LSP_TYPE_LOCALNET = "localnet"
"""A switch port onto a physical network, bridged by ``ovn-bridge-mappings``
(``options:network_name``)."""
