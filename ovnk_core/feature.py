"""Base class of feature plugins (entry-point group ``ovnk.features``).

A feature is any object with ``@hookimpl`` methods; deriving from ``Feature``
is optional and gives two things: the ``config`` the host passes when it
instantiates the plugin, and the declaration of the flags the feature needs,
checked at startup through ``ovnk_configure`` so that a feature enabled by
name (``--enable-feature``) without its prerequisites fails loudly instead
of doing nothing.  A feature that needs API rights beyond its component's role
declares them in ``rbac_rules`` (``ovnk_core.manifests.plugin_rbac``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    :cvar rbac_rules: the Kubernetes API rights the feature's controllers need beyond what
        their component's identity has: component (``cluster-manager``, ``zone``,
        ``node``) → PolicyRules (``{"apiGroups": [""], "resources": ["configmaps"],
        "verbs": ["get", "create"]}``).  They become ClusterRoles aggregated into the
        component's role (``ovnk_core.manifests.plugin_rbac``), applied by ``ovnk local`` and
        printed by ``python -m ovnk_core.manifests.rbac``; the class is read for it, never
        instantiated.
    """

    name: ClassVar[str]
    required_flags: ClassVar[tuple[str, ...]] = ()
    nft_table_name: ClassVar[str | None] = None
    rbac_rules: ClassVar[Mapping[str, Sequence[Mapping[str, Sequence[str]]]]] = {}

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
