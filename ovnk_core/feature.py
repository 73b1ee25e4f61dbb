"""Base class of feature plugins (entry-point group ``ovnk.features``).

A feature is any object with ``@hookimpl`` methods; deriving from ``Feature``
is optional and gives two things: the ``config`` the host passes when it
instantiates the plugin, and the declaration of the flags the feature needs,
checked at startup through ``ovnk_configure`` so that a feature enabled by
name (``--enable-feature``) without its prerequisites fails loudly instead
of doing nothing.
"""

from __future__ import annotations

from typing import ClassVar

from ovnk_core.config import Config
from ovnk_core.errors import ConfigError
from ovnk_core.hookspecs import hookimpl


class Feature:
    """Base of feature plugins.

    :cvar name: the feature name, equal to the entry-point name.
    :cvar required_flags: ``Config`` boolean fields (by flag name) that must be on.
    :cvar nft_table_name: the nftables table (family ``inet``) the feature keeps its host
        rules in when it must match upstream's (e.g. ``"ovn-kubernetes"``); ``None``: its
        own ``ovnk-feature-<name>``.  ``NodeContext.nft_table(<name>)`` returns it, and a node
        agent on which the feature is installed but not enabled deletes that table at start
        (the class is then imported to read this attribute, never instantiated), so claim
        a table only when the feature alone writes it on the node.
    """

    name: ClassVar[str]
    required_flags: ClassVar[tuple[str, ...]] = ()
    nft_table_name: ClassVar[str | None] = None

    def __init__(self, config: Config) -> None:
        self.config = config

    @hookimpl
    def ovnk_configure(self, config: Config) -> None:
        missing = [flag for flag in self.required_flags
                   if not getattr(config, flag.replace("-", "_"))]
        if missing:
            raise ConfigError(
                f"feature {self.name!r} requires "
                + ", ".join(f"--{flag}" for flag in missing)
            )
