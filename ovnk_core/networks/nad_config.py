"""A NAD's ``spec.config`` read as JSON, the same way by every quick look at it.

Index functions and controllers peek at a NAD's CNI config (its network name,
its role) long before, or instead of, a full parse (``netconf``).  The config
is a string anyone with edit rights on NADs writes: it may be missing, not
JSON, not an object, or nested so deeply that Python's decoder raises
``RecursionError`` — which escaped the ``except ValueError`` of every such
peek and took the NAD informer down with it.  ``config_of`` decodes it with
``embedded_json`` (depth bounded, no lone UTF-16 surrogate, which no annotation
or event could carry) and answers ``None`` for all of these: such a NAD names
no network (the full parse reports it on the NAD).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ovnk_core import embedded_json
from ovnk_core.networks.netconf import CNI_TYPE
from ovnk_core.networks.netinfo import DEFAULT_NETWORK_NAME


def config_of(nad: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The NAD's ``spec.config`` as a JSON object, or ``None`` when it is not one."""
    spec = (nad or {}).get("spec")
    text = spec.get("config") if isinstance(spec, Mapping) else None
    if not isinstance(text, str) or not text:
        return None
    try:
        config = embedded_json.loads(text)
    except ValueError:
        return None
    return config if isinstance(config, dict) else None


def ovn_config_of(nad: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``config_of``, only for OVN-Kubernetes configs (``type`` is ``CNI_TYPE``)."""
    config = config_of(nad)
    return config if config is not None and config.get("type") == CNI_TYPE else None


def network_name(nad: Mapping[str, Any] | None) -> str | None:
    """The network an OVN-Kubernetes NAD names (``name`` in its config), if any."""
    config = ovn_config_of(nad)
    name = config.get("name") if config is not None else None
    return name if isinstance(name, str) and name else None


def nad_network_name(nad: Mapping[str, Any] | None) -> list[str]:
    """The network name a NAD's config declares, as the list an informer index or a
    controller's key function wants (OVN-Kubernetes NADs only; a config that cannot be
    read, nested too deeply included, names none)."""
    name = network_name(nad)
    # "default" is the default network's name, never a NAD's (unnamed_nad_problem says so)
    return [name] if name and name != DEFAULT_NETWORK_NAME else []





def primary_nad_namespace(nad: Mapping[str, Any]) -> list[str]:
    """Index: the namespace of a NAD whose config declares a primary OVN-Kubernetes network
    (users still check that the network it names is primary where it matters)."""
    if not nad_network_name(nad):
        return []
    config = ovn_config_of(nad)
    role = config.get("role") if config is not None else None
    return [str(nad["metadata"]["namespace"])] if role == "primary" else []


__all__ = ["CNI_TYPE", "config_of", "nad_network_name", "network_name", "ovn_config_of",
           "primary_nad_namespace"]
