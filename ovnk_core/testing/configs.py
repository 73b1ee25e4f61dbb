"""The configuration most tests run with: multi-network and network segmentation on.

Segmentation needs a masquerade subnet large enough for per-network addresses,
hence the /17 (upstream's default /29 only fits the default network).
"""

from __future__ import annotations

from ovnk_core.config import Config, load_config

UDN_FLAGS = {"enable_multi_network": "true", "enable_network_segmentation": "true",
             "v4_masquerade_subnet": "169.254.0.0/17"}


def udn_config(**extra: str) -> Config:
    """A validated configuration with ``UDN_FLAGS`` (plus ``extra`` settings), no environment."""
    return load_config({**UDN_FLAGS, **extra}, env={})
