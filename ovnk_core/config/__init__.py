"""Configuration: one option table, three sources, one validated ``Config``."""

from __future__ import annotations

from ovnk_core.config.loader import (
    add_config_arguments,
    as_environment,
    as_flags,
    config_file_text,
    given_options,
    load_config,
    read_config_file,
)
from ovnk_core.config.model import Config

__all__ = ["Config", "add_config_arguments", "as_environment", "as_flags", "config_file_text",
           "given_options", "load_config", "read_config_file"]
